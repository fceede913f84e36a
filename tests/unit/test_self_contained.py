"""The repository explains itself to someone who clones it alone.

- Nothing refers to files outside it (a `shared/` folder of specifications beside the clone), but
  the one test that compares our CRDs with OCM's reference copies when they happen to be there.
- Every relative link in README.md and docs/ leads to a file of the repository (and, with a
  `#anchor`, to a heading of that file).
- Every page under docs/behaviour/ is reachable from docs/architecture.md.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ALLOWED = {"tests/unit/test_crds_reference.py", "tests/unit/test_self_contained.py"}
OUTSIDE = re.compile(r"\.\./shared|shared/(spec|seeds|reference)|\bDESIGN\.md")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)|^\[[^\]]+\]:\s*(\S+)", re.M)


def _tracked() -> list[str]:
    try:
        listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [name for name in listed.stdout.splitlines() if (REPO / name).is_file()]


def _anchors(markdown: str) -> set[str]:
    """GitHub's anchors for the headings of a page."""
    found = set()
    for heading in re.findall(r"^#+\s+(.*)$", markdown, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def test_nothing_points_outside_the_repository() -> None:
    offenders = []
    for name in _tracked():
        if name in ALLOWED:
            continue
        try:
            text = (REPO / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                offenders.append(f"{name}:{number}: {line.strip()[:100]}")
    assert offenders == []


def _pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page: Path) -> None:
    # Code (fenced blocks and inline spans) holds regular expressions, not links.
    text = re.sub(r"```.*?```|`[^`\n]*`", "", page.read_text(encoding="utf-8"), flags=re.S)
    broken = []
    for match in LINK.finditer(text):
        target = match.group(1) or match.group(2)
        if re.match(r"^[a-z]+:", target) or target.startswith("<"):
            continue
        path, _, anchor = target.partition("#")
        goal = (page.parent / path).resolve() if path else page
        if not goal.exists():
            broken.append(target)
        elif anchor and goal.is_file() and goal.suffix == ".md":
            if anchor not in _anchors(goal.read_text(encoding="utf-8")):
                broken.append(target)
    assert broken == []


def test_every_behaviour_page_is_linked_from_the_architecture() -> None:
    architecture = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    pages = sorted(p.name for p in (REPO / "docs" / "behaviour").glob("*.md"))
    assert pages
    assert [p for p in pages if f"behaviour/{p}" not in architecture] == []
