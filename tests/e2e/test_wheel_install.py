"""The wheel, installed into a fresh virtualenv, gives a working `ocm-rollout` command whose CRDs
come from the installed package alone (no source tree, no crds/ folder), and installs one import
package of ours, `ocm_rollout`: no generic top-level names (`api`, `controllers`, ...) that another
distribution could collide with."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
LAYERS = ("api", "client", "controllers", "sandbox", "cli")
SOURCES = ("pyproject.toml", "README.md", "constraints.txt", *LAYERS)


def run(args: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built from a copy of the source tree."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        else:
            shutil.copy2(path, src / name)
    built = run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(root), "."], cwd=src)
    assert built.returncode == 0, built.stdout + built.stderr
    (found,) = root.glob("ocm_rollout-*.whl")
    return found


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the wheel installed."""
    root = tmp_path_factory.mktemp("install")
    venv = root / "venv"
    # No pip inside the new environment (creating it with pip costs seconds): the test run's own
    # pip installs into it with --python. pip's cache and configured indexes are reused, and the
    # constraints keep the versions CI uses.
    created = run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=root)
    assert created.returncode == 0, created.stderr
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]
    install = run([*pip, "install", "--quiet", "--no-compile", "-c", str(REPO / "constraints.txt"), str(wheel)], cwd=root)
    assert install.returncode == 0, install.stdout + install.stderr
    return venv


def test_the_wheel_holds_one_package_of_ours(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"ocm_rollout"}


def test_every_package_in_the_tree_is_in_the_wheel(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    expected = {
        "ocm_rollout/" + str(init.relative_to(REPO))
        for layer in LAYERS
        for init in (REPO / layer).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert expected and expected <= names


def test_the_wheel_holds_the_dashboards_static_files(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    static = {f"ocm_rollout/cli/dashboard/static/{f.name}" for f in (REPO / "cli" / "dashboard" / "static").iterdir()}
    assert {"ocm_rollout/cli/dashboard/static/index.html", "ocm_rollout/cli/dashboard/static/app.js"} <= static <= names


def test_every_module_imports_through_the_package_name(installed: Path, tmp_path: Path) -> None:
    probe = """
import importlib, pkgutil, sys
import ocm_rollout
names = []
for layer in ("api", "client", "controllers", "sandbox", "cli"):
    package = importlib.import_module("ocm_rollout." + layer)
    for info in pkgutil.walk_packages(package.__path__, prefix=package.__name__ + "."):
        if info.name.endswith("__main__"):
            continue
        importlib.import_module(info.name)
        names.append(info.name)
ours = sorted({m.split(".")[0] for m in sys.modules} & {"api", "client", "controllers", "sandbox", "cli"})
print(len(names), ours)
"""
    result = run([str(installed / "bin" / "python"), "-c", probe], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    count, old_names = result.stdout.split(" ", 1)
    assert int(count) > 100
    assert old_names.strip() == "[]"


def test_no_generic_top_level_name_is_installed(installed: Path, tmp_path: Path) -> None:
    for name in LAYERS:
        probe = run([str(installed / "bin" / "python"), "-c", f"import {name}"], cwd=tmp_path)
        assert probe.returncode != 0, f"`import {name}` works in the installed environment"
        assert "ModuleNotFoundError" in probe.stderr


def test_python_m_runs_the_command(installed: Path, tmp_path: Path) -> None:
    result = run([str(installed / "bin" / "python"), "-m", "ocm_rollout.cli", "--help"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "schedule" in result.stdout and "plan" in result.stdout


def test_help_lists_the_crds_command(installed: Path, tmp_path: Path) -> None:
    result = run([str(installed / "bin" / "ocm-rollout"), "--help"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "crds" in result.stdout


def test_crds_print_works_from_the_installed_package(installed: Path, tmp_path: Path) -> None:
    result = run([str(installed / "bin" / "ocm-rollout"), "crds", "print"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert len(docs) == 12
    assert {d["kind"] for d in docs} == {"CustomResourceDefinition"}
    assert "manifestworkreplicasets.work.open-cluster-management.io" in {d["metadata"]["name"] for d in docs}


def test_the_installed_package_is_the_one_that_runs(installed: Path, tmp_path: Path) -> None:
    probe = run([str(installed / "bin" / "python"), "-c", "import ocm_rollout.api; print(ocm_rollout.api.__file__)"], cwd=tmp_path)
    assert probe.returncode == 0, probe.stderr
    assert str(installed) in probe.stdout
