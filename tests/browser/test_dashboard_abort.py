"""Aborted rollouts in the dashboard: the rollback tour of the README ("A bad update rolls itself
back": examples/workset/rollback/web.yaml, then web-v2.yaml, under examples/profiles/bad-version.yaml,
whose web 2.0 fails on the production clusters), and the abort button on an update in progress.
Six clusters; each test on its own copy in its own namespace."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.conftest import (
    HASH_LABEL,
    NO_PLAYWRIGHT,
    DashboardHub,
    completed,
    condition,
    example,
    state_text,
)
from tests.e2e.helpers import eventually

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

sync_api = pytest.importorskip("playwright.sync_api", reason=NO_PLAYWRIGHT)
expect = sync_api.expect

ROLLOUT_TIMEOUT_MS = 90_000  # six clusters two at a time: about 25 s on an idle machine
ABORT_ANNOTATION = "rollout.ocm-rollout.io/abort"


@pytest.fixture(scope="module")
def hub(browser: Browser, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DashboardHub]:
    started = DashboardHub.start(tmp_path_factory.mktemp("abort"), clusters=6, profile="bad-version.yaml")
    yield started
    started.stop()


def with_image(docs: list[dict[str, Any]], image: str) -> list[dict[str, Any]]:
    """The ManifestWorkReplicaSet of ``docs`` with its Deployment's image changed."""
    (mwrs,) = [d for d in docs if d["kind"] == "ManifestWorkReplicaSet"]
    (deployment,) = mwrs["spec"]["manifestWorkTemplate"]["workload"]["manifests"]
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return [mwrs]


def test_a_bad_update_aborts_by_itself_and_the_page_names_the_failed_clusters(page: Page, hub: DashboardHub) -> None:
    hub.apply(example("workset/rollback/web.yaml"))
    page.goto(hub.route("#/rollouts/mwrs/web/web"))
    state = page.locator("[data-testid=rollout-state]")
    expect(state).to_have_text(state_text("Complete"), timeout=ROLLOUT_TIMEOUT_MS)

    hub.apply(example("workset/rollback/web-v2.yaml"))
    expect(state).to_have_text(state_text("Aborted"), timeout=ROLLOUT_TIMEOUT_MS)
    # The clusters that failed, as the controller names them ("breached by N failed cluster(s): ...").
    rolled_out = condition(hub.mwrs("web", "web"), "PlacementRolledOut").get("message", "")
    failed = re.findall(r"(cluster\d+) \(", rolled_out)
    assert failed, rolled_out
    failures = page.locator("[data-testid=failures]")
    for cluster in failed:
        item = failures.locator("li", has_text=re.compile(rf"\b{cluster}\b"))
        expect(item).to_contain_text("manifest unknown")


def test_the_abort_button_stops_an_update_in_progress(page: Page, hub: DashboardHub) -> None:
    ns = name = "web-stop"
    docs = example("workset/rollback/web.yaml", namespace=ns, name=name)
    hub.apply(docs)
    eventually(lambda: completed(hub, ns, name), timeout=ROLLOUT_TIMEOUT_MS / 1000, message="web 1.0 everywhere")
    current = hub.mwrs(ns, name)["status"]["currentRevision"]

    hub.apply(with_image(docs, "registry.example.com/web:1.1"))  # succeeds everywhere, two at a time
    page.goto(hub.route(f"#/rollouts/mwrs/{ns}/{name}"))
    expect(page.locator("[data-testid=rollout-state]")).to_have_text(state_text("Progressing"))
    button = page.locator("button[data-action=abort]")
    expect(button).to_be_enabled()
    button.click()
    expect(page.locator("dialog[data-testid=confirm]")).to_be_visible()
    page.locator("dialog[data-testid=confirm] button[data-testid=confirm-yes]").click()
    expect(page.locator("[data-testid=action-result]")).to_be_visible()

    expect(page.locator("[data-testid=rollout-state]")).to_have_text(state_text("Aborted"), timeout=ROLLOUT_TIMEOUT_MS)
    mwrs = hub.mwrs(ns, name)
    assert mwrs["metadata"].get("annotations", {}).get(ABORT_ANNOTATION) == mwrs["status"]["updateRevision"]
    eventually(
        lambda: {w["metadata"]["labels"].get(HASH_LABEL) for w in hub.works(name).values()} == {current},
        timeout=ROLLOUT_TIMEOUT_MS / 1000,
        message=f"every work back at revision {current}",
    )
    expect(page.locator("button[data-action=retry]")).to_be_enabled()
