"""Failed and aborted rollouts in the dashboard, under examples/profiles/bad-version.yaml (web 2.0 fails
on the production clusters): the rollback tour of the README ("A bad update rolls itself back":
examples/workset/rollback/web.yaml, then web-v2.yaml), the abort button on an update in progress,
and web 2.0 as the very first template (nothing to return to: the rollout halts with its failed
clusters in place), whose failed chips the keyboard reaches. Six clusters; each rollout is its own
copy of the example in its own namespace."""

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
    screenshot,
    state_text,
    tab_until,
)
from tests.e2e.helpers import eventually

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

sync_api = pytest.importorskip("playwright.sync_api", reason=NO_PLAYWRIGHT)
expect = sync_api.expect

ROLLOUT_TIMEOUT_MS = 90_000  # six clusters two at a time: about 25 s on an idle machine
ABORT_ANNOTATION = "rollout.ocm-rollout.io/abort"


@pytest.fixture(scope="module")
def hub(browser: Browser, tmp_path_factory: pytest.TempPathFactory, hub_kind: str) -> Iterator[DashboardHub]:
    started = DashboardHub.start(tmp_path_factory.mktemp("abort"), clusters=6, profile="bad-version.yaml", hub_kind=hub_kind)
    yield started
    started.stop()


@pytest.fixture(scope="module")
def halted(hub: DashboardHub) -> tuple[str, list[str]]:
    """web 2.0 as the first template of MWRS web-first/web-first: its namespace and the clusters
    that failed (as the controller names them), once the rollout stopped at maxFailures."""
    ns = "web-first"
    setup = [d for d in example("workset/rollback/web.yaml", namespace=ns) if d["kind"] != "ManifestWorkReplicaSet"]
    hub.apply(setup + example("workset/rollback/web-v2.yaml", namespace=ns, name=ns))
    return ns, failed_clusters(hub, ns, ns)


def failed_clusters(hub: DashboardHub, ns: str, name: str) -> list[str]:
    """The clusters named by "maxFailures breached by N failed cluster(s): c1 (...), ..." in the
    MWRS's PlacementRolledOut condition, once it says so."""
    message = eventually(
        lambda: (m := condition(hub.mwrs(ns, name), "PlacementRolledOut").get("message", "")) and "breached by" in m and m,
        timeout=ROLLOUT_TIMEOUT_MS / 1000,
        message=f"{ns}/{name} breaching maxFailures",
    )
    failed = re.findall(r"(cluster\d+) \(", message)
    assert failed, message
    return failed


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
    failed = failed_clusters(hub, "web", "web")
    failures = page.locator("[data-testid=failures]")
    for cluster in failed:
        item = failures.locator("li", has_text=re.compile(rf"\b{cluster}\b"))
        expect(item).to_contain_text("manifest unknown")
        chip = page.locator(f"[data-testid=chip][data-cluster={cluster}]")
        expect(chip).to_have_attribute("data-state", "Failed")
        expect(chip).to_have_attribute("title", re.compile("manifest unknown"))
    screenshot(page, "dashboard-aborted.png")


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
        lambda: {w["metadata"]["labels"].get(HASH_LABEL) for w in hub.works(ns, name).values()} == {current},
        timeout=ROLLOUT_TIMEOUT_MS / 1000,
        message=f"every work back at revision {current}",
    )
    expect(page.locator("button[data-action=retry]")).to_be_enabled()


def test_the_failed_clusters_chips_and_failures_list_give_their_messages(page: Page, hub: DashboardHub, halted: tuple[str, list[str]]) -> None:
    ns, failed = halted
    page.goto(hub.route(f"#/rollouts/mwrs/{ns}/{ns}"))
    for cluster in failed:
        chip = page.locator(f"[data-testid=chip][data-cluster={cluster}]")
        expect(chip).to_have_attribute("data-state", "Failed")
        expect(chip).to_have_attribute("title", re.compile("manifest unknown"))
        item = page.locator("[data-testid=failures] li", has_text=re.compile(rf"\b{cluster}\b"))
        expect(item).to_contain_text("manifest unknown")


def test_a_failed_chip_takes_the_keyboard_focus_and_shows_its_reason(page: Page, hub: DashboardHub, halted: tuple[str, list[str]]) -> None:
    ns, failed = halted
    page.goto(hub.route(f"#/rollouts/mwrs/{ns}/{ns}"))
    expect(page.locator(f"[data-testid=chip][data-cluster={failed[0]}][data-state=Failed]")).to_be_visible()
    tab_until(page, "[data-testid=chip][data-state=Failed]", presses=80)
    chip = page.locator("[data-testid=chip]:focus")
    # The reason shows on focus: an element the chip describes itself by, or a tooltip, visible now.
    described = chip.get_attribute("aria-describedby")
    tip = page.locator(f"#{described}") if described else page.locator("[role=tooltip]:visible")
    expect(tip).to_be_visible()
    expect(tip).to_contain_text("manifest unknown")
