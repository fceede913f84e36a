"""The dashboard follows a Progressive rollout live, and its pause and resume buttons hold and release
it: `ocm-rollout up` with six clusters and examples/profiles/bad-version.yaml, the rollback tour's web
1.0 (examples/workset/rollback/web.yaml: two clusters at a time, a 5 s soak), each test on its own
copy in its own namespace."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.browser.conftest import (
    NO_PLAYWRIGHT,
    DashboardHub,
    completed,
    condition,
    example,
    no_reload_marker,
    screenshot,
    state_text,
    still_same_document,
)
from tests.e2e.helpers import eventually

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

sync_api = pytest.importorskip("playwright.sync_api", reason=NO_PLAYWRIGHT)
expect = sync_api.expect

ROLLOUT_TIMEOUT_MS = 90_000  # six clusters two at a time: about 25 s on an idle machine

# Once a chip waits (ToApply), records in the page every state the chip of that cluster shows from
# then on, whatever re-renders it; the last waiting chip is chosen (the latest wave: the longest wait).
# Returns that cluster once chosen (a predicate for page.wait_for_function: it runs until then).
FOLLOW_A_WAITING_CHIP = """() => {
  if (window.__chipCluster) return window.__chipCluster;
  const waiting = document.querySelectorAll('[data-testid=chip][data-state=ToApply]');
  if (!waiting.length) return null;
  const cluster = waiting[waiting.length - 1].getAttribute('data-cluster');
  window.__chipStates = [];
  const read = () => {
    const chip = document.querySelector(`[data-testid=chip][data-cluster="${cluster}"]`);
    const state = chip && chip.getAttribute('data-state');
    const seen = window.__chipStates;
    if (state && seen[seen.length - 1] !== state) seen.push(state);
  };
  read();
  new MutationObserver(read).observe(document.body, {subtree: true, childList: true, attributes: true});
  window.__chipCluster = cluster;
  return cluster;
}"""


@pytest.fixture(scope="module")
def hub(browser: Browser, tmp_path_factory: pytest.TempPathFactory, hub_kind: str) -> Iterator[DashboardHub]:
    started = DashboardHub.start(tmp_path_factory.mktemp("rollouts"), clusters=6, profile="bad-version.yaml", hub_kind=hub_kind)
    yield started
    started.stop()


def confirm(page: Page, verb: str) -> None:
    """Click the action button ``verb``, say yes in the confirmation dialog, see the result."""
    button = page.locator(f"button[data-action={verb}]")
    expect(button).to_be_enabled()
    button.click()
    dialog = page.locator("dialog[data-testid=confirm]")
    expect(dialog).to_be_visible()
    dialog.locator("button[data-testid=confirm-yes]").click()
    expect(page.locator("[data-testid=action-result]")).to_be_visible()
    expect(page.locator("[data-testid=action-error]")).to_have_count(0)


def test_a_progressive_rollouts_chips_change_without_a_reload(page: Page, hub: DashboardHub) -> None:
    hub.apply(example("workset/rollback/web.yaml"))
    page.goto(hub.route("#/rollouts/mwrs/web/web"))
    cluster = page.wait_for_function(FOLLOW_A_WAITING_CHIP).json_value()
    assert isinstance(cluster, str) and cluster, cluster
    no_reload_marker(page)

    chip = page.locator(f"[data-testid=chip][data-cluster={cluster}]")
    expect(chip).to_have_attribute("data-state", "Progressing", timeout=ROLLOUT_TIMEOUT_MS)
    expect(chip).to_contain_text(cluster)
    expect(chip).to_contain_text("Progressing")
    screenshot(page, "dashboard-rollout.png")
    expect(chip).to_have_attribute("data-state", "Succeeded", timeout=ROLLOUT_TIMEOUT_MS)
    expect(chip).to_contain_text("Succeeded")

    states = page.evaluate("() => window.__chipStates")
    assert states[0] == "ToApply" and states[-1] == "Succeeded" and "Progressing" in states, states
    assert still_same_document(page), "the page was reloaded"


def test_pause_holds_the_rollout_and_resume_finishes_it(page: Page, hub: DashboardHub) -> None:
    ns = name = "web-pause"
    hub.apply(example("workset/rollback/web.yaml", namespace=ns, name=name))
    page.goto(hub.route(f"#/rollouts/mwrs/{ns}/{name}"))
    confirm(page, "pause")

    assert (hub.mwrs(ns, name).get("spec") or {}).get("paused") is True
    expect(page.locator("[data-testid=rollout-state]")).to_have_text(state_text("Paused"))
    # The controller plans the next wave and holds its creates: "N work(s) wait (N to create): ...".
    held = eventually(
        lambda: re.search(r"work\(s\) wait \((\d+) to create[^)]*\): (.*)$", condition(hub.mwrs(ns, name), "Progressing").get("message", "")),
        timeout=ROLLOUT_TIMEOUT_MS / 1000,
        message="the paused rollout holding the creates of its next wave",
    )
    waiting = re.findall(r"cluster\d+", held.group(2))
    assert waiting, held.group(0)
    for cluster in waiting:
        expect(page.locator(f"[data-testid=chip][data-cluster={cluster}]")).to_have_attribute("data-state", "ToApply")
    expect(page.locator("button[data-action=pause]")).to_be_disabled()
    assert not set(waiting) & set(hub.works(ns, name)), (waiting, sorted(hub.works(ns, name)))

    confirm(page, "resume")
    expect(page.locator("[data-testid=rollout-state]")).to_have_text(state_text("Complete"), timeout=ROLLOUT_TIMEOUT_MS)
    assert (hub.mwrs(ns, name).get("spec") or {}).get("paused") is not True
    assert len(hub.works(ns, name)) == hub.clusters
    assert completed(hub, ns, name)
