"""The dashboard in a browser on the README's five-minute tour: `ocm-rollout up` with six clusters, the
CronJob ManifestWorkReplicaSet of ocm-ns rolled out through its three Placements. The list, the
placement and fleet pages, the keyboard on the list, and what the actions API refuses (a read-only dashboard,
another origin, no token)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.conftest import (
    NO_PLAYWRIGHT,
    DashboardHub,
    ReadOnlyDashboard,
    example,
    screenshot,
    state_text,
    tab_until,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

sync_api = pytest.importorskip("playwright.sync_api", reason=NO_PLAYWRIGHT)
expect = sync_api.expect

NS = "ocm-ns"
NAME = "mwrset-cronjob"
ROLLOUT = f"mwrs/{NS}/{NAME}"
PLACEMENT = "placement-rollout-progressive"
STATES = ["Progressing", "Complete", "Paused", "Aborted", "Validating", "Awaiting promotion", "Failed", "Pending"]
STATE_WORDS = state_text(*STATES)
PAUSE = {"verb": "pause", "kind": "mwrs", "namespace": NS, "name": NAME}


@pytest.fixture(scope="module")
def hub(browser: Browser, tmp_path_factory: pytest.TempPathFactory, hub_kind: str) -> Iterator[DashboardHub]:
    """Six clusters (the default profile: each succeeds), the tour's Placements and MWRS applied."""
    started = DashboardHub.start(tmp_path_factory.mktemp("tour"), clusters=6, hub_kind=hub_kind)
    try:
        started.apply(example("workset/cronjob-placements.yaml") + example("work/manifestworkreplicaset-cronjob.yaml"))
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def read_only(hub: DashboardHub) -> Iterator[ReadOnlyDashboard]:
    dashboard = ReadOnlyDashboard(hub.kubeconfig)
    yield dashboard
    dashboard.stop()


def row(page: Page, rollout: str = ROLLOUT) -> Any:
    return page.locator(f'table[data-testid=rollouts] tr[data-rollout="{rollout}"]')


def open_list(page: Page, url: str) -> None:
    page.goto(url)
    expect(row(page)).to_be_visible()


def post_action(page: Page, url: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
    """POST /api/actions through the page's context (its cookies), with ``headers`` only."""
    response = page.request.post(url.rstrip("/") + "/api/actions", data=body, headers=headers, fail_on_status_code=False)
    try:
        payload = response.json()
    except Exception:
        payload = response.text()
    return response.status, payload


def origin(url: str) -> str:
    match = re.match(r"^(https?://[^/]+)", url)
    assert match, url
    return match.group(1)


def csrf_token(page: Page) -> str:
    token = page.locator('meta[name="csrf-token"]').get_attribute("content")
    assert token, "the page has no <meta name=csrf-token> with a content"
    return token


def paused(hub: DashboardHub) -> bool:
    return (hub.mwrs(NS, NAME).get("spec") or {}).get("paused") is True


# -- the pages -------------------------------------------------------------------------------------


def test_the_list_shows_the_tours_manifestworkreplicaset(page: Page, hub: DashboardHub) -> None:
    page.goto(hub.url)
    expect(row(page)).to_be_visible()
    expect(row(page).locator("td[data-col=state]")).to_have_text(STATE_WORDS)
    expect(row(page).locator("a[data-testid=open]")).to_have_attribute("href", re.compile(f"#/rollouts/{ROLLOUT}$"))
    screenshot(page, "dashboard-list.png")


def test_the_kind_filter_hides_the_manifestworkreplicasets_when_addons_are_chosen(page: Page, hub: DashboardHub) -> None:
    open_list(page, hub.url)
    page.select_option("select#filter-kind", "addon")
    expect(row(page)).to_be_hidden()
    page.select_option("select#filter-kind", "mwrs")
    expect(row(page)).to_be_visible()


def test_the_namespace_filter_keeps_the_rollouts_of_the_chosen_namespace(page: Page, hub: DashboardHub) -> None:
    open_list(page, hub.url)
    page.select_option("select#filter-namespace", NS)
    expect(row(page)).to_be_visible()


def test_the_placement_page_shows_the_placements_decision_groups(page: Page, hub: DashboardHub) -> None:
    page.goto(hub.route(f"#/placements/{NS}/{PLACEMENT}"))
    placement = page.locator("[data-testid=placement]")
    expect(placement).to_contain_text(PLACEMENT)
    expect(page.locator("main")).to_contain_text("prod-canary-west")
    expect(page.locator("main")).to_contain_text("prod-canary-east")
    screenshot(page, "dashboard-placement.png")


def test_the_fleet_page_lists_every_cluster(page: Page, hub: DashboardHub) -> None:
    page.goto(hub.route("#/fleet"))
    fleet = page.locator("table[data-testid=fleet]")
    for n in range(1, hub.clusters + 1):
        expect(fleet).to_contain_text(re.compile(rf"\bcluster{n}\b"))


def test_the_nav_links_lead_to_the_fleet_and_back_to_the_list(page: Page, hub: DashboardHub) -> None:
    open_list(page, hub.url)
    page.locator("nav a[href$='#/fleet']").click()
    expect(page.locator("table[data-testid=fleet]")).to_be_visible()
    page.locator("nav a[href$='#/']").first.click()
    expect(row(page)).to_be_visible()


# -- the keyboard ----------------------------------------------------------------------------------


def test_tab_reaches_a_rollout_link_and_enter_opens_it(page: Page, hub: DashboardHub) -> None:
    open_list(page, hub.url)
    tab_until(page, "a[data-testid=open]")
    href = page.evaluate("() => document.activeElement.getAttribute('href')")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(re.escape(href) + "$"))
    expect(page.locator("[data-testid=rollout-state]")).to_have_text(STATE_WORDS)


# -- what the actions API refuses ------------------------------------------------------------------


def test_a_read_only_dashboard_shows_no_action_button(page: Page, read_only: ReadOnlyDashboard) -> None:
    page.goto(read_only.url)
    expect(row(page)).to_be_visible()
    page.goto(read_only.url.rstrip("/") + f"/#/rollouts/{ROLLOUT}")
    expect(page.locator("[data-testid=rollout-state]")).to_have_text(STATE_WORDS)
    expect(page.locator("button[data-action]")).to_have_count(0)


def test_a_read_only_dashboard_refuses_actions_with_403(page: Page, hub: DashboardHub, read_only: ReadOnlyDashboard) -> None:
    page.goto(read_only.url)
    expect(row(page)).to_be_visible()
    token = page.locator('meta[name="csrf-token"]').get_attribute("content") or ""
    status, body = post_action(
        page, read_only.url, PAUSE, {"X-CSRF-Token": token, "Origin": origin(read_only.url)}
    )
    assert status == 403, (status, body)
    assert isinstance(body, dict) and body.get("error"), body
    assert not paused(hub)


def test_the_dashboards_own_page_may_act_with_its_token(page: Page, hub: DashboardHub) -> None:
    """The control of the two tests below: the same request from the page itself is carried out."""
    open_list(page, hub.url)
    token = csrf_token(page)
    try:
        status, body = post_action(page, hub.url, PAUSE, {"X-CSRF-Token": token, "Origin": origin(hub.url)})
        assert status == 200, (status, body)
        assert paused(hub)
    finally:
        status, body = post_action(
            page, hub.url, {**PAUSE, "verb": "resume"}, {"X-CSRF-Token": token, "Origin": origin(hub.url)}
        )
    assert status == 200, (status, body)
    assert not paused(hub)


def test_a_cross_origin_post_is_refused_even_with_a_valid_token(page: Page, hub: DashboardHub) -> None:
    open_list(page, hub.url)
    status, body = post_action(
        page, hub.url, PAUSE, {"X-CSRF-Token": csrf_token(page), "Origin": "http://attacker.example"}
    )
    assert status == 403, (status, body)
    assert isinstance(body, dict) and body.get("error"), body
    assert not paused(hub)


def test_a_post_without_the_token_is_refused(page: Page, hub: DashboardHub) -> None:
    open_list(page, hub.url)
    status, body = post_action(page, hub.url, PAUSE, {"Origin": origin(hub.url)})
    assert status == 403, (status, body)
    assert not paused(hub)


def test_a_post_with_a_wrong_token_is_refused(page: Page, hub: DashboardHub) -> None:
    open_list(page, hub.url)
    status, body = post_action(page, hub.url, PAUSE, {"X-CSRF-Token": "not-the-token", "Origin": origin(hub.url)})
    assert status == 403, (status, body)
    assert not paused(hub)
