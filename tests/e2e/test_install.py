"""`pip install .` into a fresh virtualenv gives a working `ocm-rollout` command whose CRDs come
from the installed package alone (no source tree, no crds/ folder)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "constraints.txt", "api", "controllers", "sandbox")


def run(args: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the package installed from a copy of the source tree."""
    root = tmp_path_factory.mktemp("install")
    src = root / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        else:
            shutil.copy2(path, src / name)
    venv = root / "venv"
    # No pip inside the new environment (creating it with pip costs seconds): the test run's own
    # pip installs into it with --python. pip's cache and configured indexes are reused, and the
    # constraints keep the versions CI uses.
    created = run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=root)
    assert created.returncode == 0, created.stderr
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]
    install = run([*pip, "install", "--quiet", "--no-compile", "-c", "constraints.txt", "."], cwd=src)
    assert install.returncode == 0, install.stdout + install.stderr
    return venv


def test_help_lists_the_crds_command(installed: Path, tmp_path: Path) -> None:
    result = run([str(installed / "bin" / "ocm-rollout"), "--help"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "crds" in result.stdout


def test_crds_print_works_from_the_installed_package(installed: Path, tmp_path: Path) -> None:
    result = run([str(installed / "bin" / "ocm-rollout"), "crds", "print"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert len(docs) == 11
    assert {d["kind"] for d in docs} == {"CustomResourceDefinition"}
    assert "manifestworkreplicasets.work.open-cluster-management.io" in {d["metadata"]["name"] for d in docs}


def test_the_installed_package_is_the_one_that_runs(installed: Path, tmp_path: Path) -> None:
    probe = run([str(installed / "bin" / "python"), "-c", "import api; print(api.__file__)"], cwd=tmp_path)
    assert probe.returncode == 0, probe.stderr
    assert str(installed) in probe.stdout
