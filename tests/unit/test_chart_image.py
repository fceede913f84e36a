"""The Dockerfile's structure (no Docker on our machines: the recipe is checked as text).

The same steps, run by hand in a fresh virtualenv from a wheel with pip removed, give a working
`ocm-rollout run`; these tests keep the recipe's promises: multi-stage, slim base, wheel built
in the first stage, non-root user, nothing to build with in the final image.
"""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
BUILD_TOOLS = ("gcc", "g++", "make", "build-essential", "cmake", "clang", "cargo", "rustc", "git")


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        keyword, _, rest = stripped.partition(" ")
        out.append((keyword.upper(), rest.strip()))
    return out


def stages() -> list[list[tuple[str, str]]]:
    result: list[list[tuple[str, str]]] = []
    for keyword, rest in instructions():
        if keyword == "FROM":
            result.append([])
        if result:
            result[-1].append((keyword, rest))
    return result


def base_image() -> str:
    for keyword, rest in instructions():
        if keyword == "ARG" and rest.startswith("PYTHON_IMAGE="):
            return rest.split("=", 1)[1]
    raise AssertionError("no PYTHON_IMAGE argument")


def test_image_is_multi_stage_on_a_slim_python_311() -> None:
    assert len(stages()) >= 2
    assert re.fullmatch(r"python:3\.11-slim(-\w+)?(@sha256:[0-9a-f]{64})?", base_image())
    assert all(stage[0][1].split()[0] == "${PYTHON_IMAGE}" for stage in stages())


def test_wheel_is_built_in_the_first_stage_and_only_its_result_is_copied() -> None:
    first, final = stages()[0], stages()[-1]
    assert any(k == "RUN" and "pip wheel" in r for k, r in first)
    copies = [r for k, r in final if k == "COPY"]
    assert copies and all(r.startswith("--from=build ") for r in copies)


def test_final_stage_runs_as_a_non_root_user_matching_the_chart() -> None:
    final = stages()[-1]
    users = [r for k, r in final if k == "USER"]
    assert users, "the final stage sets no USER"
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit() and int(uid) != 0 and gid.isdigit() and int(gid) != 0
    values = yaml.safe_load((REPO / "charts" / "ocm-rollout" / "values.yaml").read_text())
    assert values["podSecurityContext"]["runAsUser"] == int(uid)
    assert values["podSecurityContext"]["runAsGroup"] == int(gid)


def test_final_stage_installs_no_build_tools_and_drops_pip() -> None:
    final_runs = " ".join(r for k, r in stages()[-1] if k == "RUN")
    assert "apt-get install" not in final_runs and "pip install" not in final_runs
    assert not any(re.search(rf"\b{re.escape(tool)}\b", final_runs) for tool in BUILD_TOOLS)
    first_runs = " ".join(r for k, r in stages()[0] if k == "RUN")
    assert "pip uninstall --yes pip setuptools wheel" in first_runs


def test_entrypoint_is_ocm_rollout_run() -> None:
    entrypoints = [r for k, r in stages()[-1] if k == "ENTRYPOINT"]
    assert entrypoints and json.loads(entrypoints[-1]) == ["ocm-rollout", "run"]


def test_exposed_ports_are_the_chart_defaults() -> None:
    exposed = {int(p) for k, r in stages()[-1] if k == "EXPOSE" for p in r.split()}
    values = yaml.safe_load((REPO / "charts" / "ocm-rollout" / "values.yaml").read_text())
    assert exposed == {values["metrics"]["port"], values["health"]["port"], values["placementDebug"]["port"]}


def _included(path: str, patterns: list[str]) -> bool:
    """Docker's .dockerignore semantics for the simple patterns we use (last match wins)."""
    included = True
    for pattern in patterns:
        negated = pattern.startswith("!")
        core = pattern[1:] if negated else pattern
        core = core.rstrip("/")
        if fnmatch.fnmatch(path, core) or path.startswith(core + "/") or fnmatch.fnmatch(path, core.replace("**/", "*")):
            included = negated
    return included


def test_build_context_holds_what_the_build_copies_and_nothing_else() -> None:
    patterns = [
        line.strip() for line in (REPO / ".dockerignore").read_text().splitlines() if line.strip() and not line.startswith("#")
    ]
    for keyword, rest in stages()[0]:
        if keyword == "COPY":
            for source in rest.split()[:-1]:
                assert (REPO / source).exists(), source
                assert _included(source, patterns), f"{source} is excluded by .dockerignore"
    for private in (".venv", ".git", "tests", ".ocm-rollout", "charts", "bench"):
        assert not _included(private, patterns), f"{private} would be sent to the build"
