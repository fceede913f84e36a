"""Fixtures of the dashboard's browser tests: `ocm-rollout up` with its dashboard, Debian's Chromium
driven by Playwright's sync API, and helpers to apply the repository's examples.

- `browser` (one per test module): a headless Chromium (``/usr/bin/chromium``, never Playwright's
  own download); the test skips, saying what to install, without it or without the playwright module.
- `page`: a fresh browser context and page for one test (10 s default timeouts), closed after it;
  JavaScript errors of the page are printed at teardown, so a failing test shows them.
- `DashboardHub.start(tmp, clusters=..., profile=...)`: `ocm-rollout up --dashboard-port 0` with its
  clusters available and its dashboard answering; `.url` (from ``endpoints.json``), `.api` (a
  kubernetes CustomObjectsApi), `.apply(...)`.
- `ReadOnlyDashboard`: `ocm-rollout dashboard --read-only --port 0` against a hub, its URL read from
  the first line it prints.
- `screenshot(page, name)`: saves ``name`` into ``$OCM_ROLLOUT_SCREENSHOTS`` when that is set
  (``make screenshots`` sets it to docs/images), else does nothing.

Every test module here is a `browser` and an `e2e` test (markers added at collection). The tests
are plain functions, never ``async def``: while a module's Playwright (sync API) runs, its event
loop is the thread's running loop, and pytest-asyncio cannot run a coroutine test beside it.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import subprocess
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import kubernetes
import pytest
import yaml

from ocm_rollout.controllers.workset.workbuild import belongs_to, owner_for
from tests.e2e.helpers import KUBECTL, OCM_ROLLOUT, REPO, Up, eventually
from tests.hub_kinds import LOCAL, up_args

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM = Path("/usr/bin/chromium")
NO_CHROMIUM = f"no Chromium at {CHROMIUM}: apt-get install chromium (.ci/run does, as root)"
NO_PLAYWRIGHT = "no playwright module: `make venv` installs it (the dev extra)"
SCREENSHOTS_ENV = "OCM_ROLLOUT_SCREENSHOTS"
TIMEOUT_MS = 10_000

MWRS = ("work.open-cluster-management.io", "v1alpha1", "manifestworkreplicasets")
WORKS = ("work.open-cluster-management.io", "v1", "manifestworks")
CLUSTERS = ("cluster.open-cluster-management.io", "v1", "managedclusters")
HASH_LABEL = "work.open-cluster-management.io/controller-hash"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium for one module. The sync API runs its own event loop, so the tests that use
    it are plain functions (pytest-asyncio runs no loop around them)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason=NO_PLAYWRIGHT)
    if not CHROMIUM.is_file():
        pytest.skip(NO_CHROMIUM)
    sync_api.expect.set_options(timeout=TIMEOUT_MS)
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"], headless=True)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    opened.on("console", lambda msg: errors.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    yield opened
    context.close()
    if errors:
        print("the page reported:\n  " + "\n  ".join(errors))


def state_text(*words: str) -> re.Pattern[str]:
    """The text of a state badge or cell showing one of ``words``: the word, after the page's
    decorative symbol (an ``aria-hidden`` glyph such as ↻)."""
    return re.compile(r"^\W*(" + "|".join(re.escape(w) for w in words) + r")\s*$")


def screenshot(page: Page, name: str) -> None:
    """The page as it is, as ``$OCM_ROLLOUT_SCREENSHOTS/name`` (nothing without the variable)."""
    where = os.environ.get(SCREENSHOTS_ENV)
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(where) / name), full_page=True)


def no_reload_marker(page: Page) -> None:
    """Mark the document: `still_same_document` is true only while no navigation replaced it."""
    page.evaluate("window.__ocmRolloutTestMarker = 1")


def still_same_document(page: Page) -> bool:
    return bool(page.evaluate("window.__ocmRolloutTestMarker === 1"))


def tab_until(page: Page, selector: str, *, presses: int = 60) -> None:
    """Press Tab until the focused element matches ``selector``."""
    for _ in range(presses):
        page.keyboard.press("Tab")
        if page.evaluate("s => !!document.activeElement && document.activeElement.matches(s)", selector):
            return
    focused = page.evaluate("() => document.activeElement && document.activeElement.outerHTML.slice(0, 200)")
    pytest.fail(f"{presses} presses of Tab never focused {selector}; the focus is on {focused}")


def _get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=5) as response:
        return int(response.status)


def example(path: str, *, namespace: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
    """The objects of ``examples/PATH``. With ``namespace``/``name``, the example's namespace (the
    Namespace object and every object in it) and the ManifestWorkReplicaSet's name are changed, so
    that several copies roll out side by side on one hub (a MWRS names its ManifestWorks after
    itself, so two copies need two names)."""
    docs = [d for d in yaml.safe_load_all((REPO / "examples" / path).read_text()) if d]
    for doc in docs:
        meta = doc["metadata"]
        if namespace is not None:
            if doc["kind"] == "Namespace":
                meta["name"] = namespace
            elif "namespace" in meta:
                meta["namespace"] = namespace
        if name is not None and doc["kind"] == "ManifestWorkReplicaSet":
            meta["name"] = name
    return docs


@dataclass
class DashboardHub:
    """A running `ocm-rollout up` with its dashboard."""

    up: Up
    kubeconfig: Path
    url: str
    api: Any
    clusters: int

    @classmethod
    def start(cls, tmp: Path, *, clusters: int, profile: str | None = None, hub_kind: str = LOCAL) -> DashboardHub:
        args = [*up_args(hub_kind), "--clusters", str(clusters), "--dashboard-port", "0", "--no-view"]
        if profile:
            args += ["--profile", str(REPO / "examples" / "profiles" / profile)]
        up = Up(tmp, *args)
        try:
            kubeconfig = up.wait_kubeconfig()
            endpoints = kubeconfig.parent / "endpoints.json"
            url = eventually(
                lambda: json.loads(endpoints.read_text()).get("dashboard"),
                message=f"the dashboard's URL in {endpoints} (output of up: {up.output()[-2000:]!r})",
            )
            eventually(lambda: _get(url) == 200, message=f"the dashboard answering at {url}")
            api = kubernetes.client.CustomObjectsApi(kubernetes.config.new_client_from_config(config_file=str(kubeconfig)))
            hub = cls(up, kubeconfig, url, api, clusters)
            try:
                eventually(lambda: len(hub.available()) == clusters, timeout=90, message=f"{clusters} clusters available")
            except pytest.fail.Exception as exc:  # say what `up` said (did it stop?)
                pytest.fail(f"{exc}\nexit code of up: {up.process.poll()}; its output: {up.output()[-3000:]!r}")
        except BaseException:
            up.stop()
            raise
        return hub

    def stop(self) -> None:
        self.up.stop()

    def route(self, hash_route: str) -> str:
        """The page's URL for a hash route such as ``#/fleet``."""
        return self.url.rstrip("/") + "/" + hash_route

    def available(self) -> list[str]:
        items = self.api.list_cluster_custom_object(*CLUSTERS)["items"]
        return sorted(
            c["metadata"]["name"]
            for c in items
            if any(
                k["type"] == "ManagedClusterConditionAvailable" and k["status"] == "True"
                for k in (c.get("status") or {}).get("conditions") or []
            )
        )

    def apply(self, docs: list[dict[str, Any]]) -> None:
        result = subprocess.run(
            [str(KUBECTL), "--kubeconfig", str(self.kubeconfig), "apply", "-f", "-"],
            input=yaml.safe_dump_all(docs), capture_output=True, text=True, timeout=60, check=False,
        )
        assert result.returncode == 0, result.stderr

    def mwrs(self, namespace: str, name: str) -> dict[str, Any]:
        return dict(self.api.get_namespaced_custom_object(MWRS[0], MWRS[1], namespace, MWRS[2], name))

    def works(self, namespace: str, name: str) -> dict[str, dict[str, Any]]:
        """The ManifestWorks of the ManifestWorkReplicaSet ``namespace/name`` (by its owner label), by cluster."""
        owner = owner_for(namespace, name)
        items = self.api.list_cluster_custom_object(*WORKS)["items"]
        return {w["metadata"]["namespace"]: w for w in items if belongs_to(w, owner)}


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond["type"] == kind:
            return dict(cond)
    return {}


def completed(hub: DashboardHub, namespace: str, name: str) -> bool:
    """Every selected cluster at the spec's template: currentRevision caught up with updateRevision."""
    status = hub.mwrs(namespace, name).get("status") or {}
    return bool(status.get("currentRevision")) and status.get("currentRevision") == status.get("updateRevision")


@dataclass
class ReadOnlyDashboard:
    """`ocm-rollout dashboard --read-only --port 0` against a hub's kubeconfig."""

    kubeconfig: Path
    process: subprocess.Popen[str] = field(init=False)
    url: str = field(init=False)
    lines: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.process = subprocess.Popen(
            [str(OCM_ROLLOUT), "dashboard", "--read-only", "--kubeconfig", str(self.kubeconfig), "--port", "0"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        assert self.process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            ready = selector.select(timeout=30)
        first = self.process.stdout.readline() if ready else ""
        if not first.startswith("dashboard: http://"):
            self.stop()
            pytest.fail(f"`ocm-rollout dashboard` printed {first!r} first, not 'dashboard: http://ADDR:PORT/'")
        self.url = first.split()[1]
        # Keep reading what it prints, so that a full pipe never blocks it.
        threading.Thread(target=self._drain, daemon=True).start()
        eventually(lambda: _get(self.url) == 200, message=f"the read-only dashboard answering at {self.url}")

    def _drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
