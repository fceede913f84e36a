"""`ocm-rollout rollout abort|retry --kind addon`: the requests written on a ClusterManagementAddOn,
as the add-on manager defines them (controllers/addon/abort.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ocm_rollout.api.constants import (
    ADDON_DEPLOYMENT_CONFIG_RESOURCE,
    ADDON_GROUP,
    ANNOTATION_ROLLOUT_ABORT,
    ANNOTATION_ROLLOUT_RETRY,
)
from ocm_rollout.cli.commands.rollout_addon import Rollout, abort_change, retry_change, rollouts
from ocm_rollout.cli.commands.rollout_verbs import Change, RolloutError, Target
from ocm_rollout.client.kube import JSON
from ocm_rollout.controllers.addon import abort as addon_abort
from ocm_rollout.controllers.addon.configs import Config, DesiredConfigs

ADDON = Target("addon", "my-addon")
ID = "clustermanagementaddon.addon.open-cluster-management.io/my-addon"
GR = (ADDON_GROUP, ADDON_DEPLOYMENT_CONFIG_RESOURCE)
T1 = "2024-05-01T12:00:00.000001Z"
T2 = "2024-05-01T12:30:00.000002Z"


def progression(placement: str, desired: str, good: str | None = None, config: str = "cfg") -> JSON:
    item: JSON = {"group": GR[0], "resource": GR[1],
                  "desiredConfig": {"namespace": "default", "name": config, "specHash": desired}}
    if good is not None:
        item["lastKnownGoodConfig"] = {"namespace": "default", "name": config, "specHash": good}
    return {"namespace": "default", "name": placement, "configReferences": [item]}


def cma(*progressions: JSON, annotations: dict[str, str] | None = None, aborted: dict[str, Any] | None = None) -> JSON:
    notes = dict(annotations or {})
    if aborted is not None:
        notes[addon_abort.ANNOTATION] = json.dumps(aborted)
    names = [p["name"] for p in progressions]
    return {
        "metadata": {"name": "my-addon", **({"annotations": notes} if notes else {})},
        "spec": {
            "supportedConfigs": [{"group": GR[0], "resource": GR[1]}],
            "installStrategy": {
                "type": "Placements",
                "placements": [{"namespace": "default", "name": n, "rolloutStrategy": {"type": "All"}} for n in names],
            },
        },
        "status": {"installProgressions": list(progressions)},
    }


def rev(spec_hash: str, config: str = "cfg") -> str:
    return addon_abort.revision(DesiredConfigs({GR: [Config(GR[0], GR[1], "default", config, spec_hash)]}))


def record(**entries: tuple[str, str]) -> dict[str, Any]:
    return {f"default/{p}": {"time": t, "revision": r, "cause": "maxFailures", "clusters": [], "failed": 0}
            for p, (t, r) in entries.items()}


def test_each_placement_s_revision_and_whether_it_rolls_out() -> None:
    found = rollouts(cma(progression("p1", "h2", "h1"), progression("p2", "h1", "h1"), progression("p3", "h9")))
    assert found == [
        Rollout("default/p1", rev("h2"), True),
        Rollout("default/p2", rev("h1"), False),
        Rollout("default/p3", rev("h9"), True),  # no last known good yet: its first rollout
    ]


def test_abort_names_the_revision_rolling_out() -> None:
    obj = cma(progression("p1", "h2", "h1"), progression("p2", "h2", "h1"), progression("p3", "h1", "h1"))
    assert abort_change(ADDON, obj) == Change(
        f"{ID} aborted (revision {rev('h2')})", {"metadata": {"annotations": {ANNOTATION_ROLLOUT_ABORT: rev("h2")}}}
    )
    requested = cma(progression("p1", "h2", "h1"), annotations={ANNOTATION_ROLLOUT_ABORT: rev("h2")})
    assert abort_change(ADDON, requested) == Change(f"{ID} abort already requested (revision {rev('h2')})")
    aborted = cma(progression("p1", "h2", "h1"), aborted=record(p1=(T1, rev("h2"))))
    assert abort_change(ADDON, aborted) == Change(f"{ID} already aborted (revision {rev('h2')}, at {T1})")
    # Retried (the retry annotation names that abort): aborting again is a new request.
    retried = cma(progression("p1", "h2", "h1"), annotations={ANNOTATION_ROLLOUT_RETRY: T1},
                  aborted=record(p1=(T1, rev("h2"))))
    assert abort_change(ADDON, retried).patch == {"metadata": {"annotations": {ANNOTATION_ROLLOUT_ABORT: rev("h2")}}}


def test_abort_chooses_among_revisions_with_placement() -> None:
    obj = cma(progression("p1", "h2", "h1"), progression("p2", "h3", "h1"))
    with pytest.raises(RolloutError) as exc:
        abort_change(ADDON, obj)
    assert str(exc.value) == (
        f"{ID} rolls out several configuration revisions (default/p1 revision {rev('h2')}, "
        f"default/p2 revision {rev('h3')}): choose one with --placement NS/NAME"
    )
    assert abort_change(ADDON, obj, "default/p2").message == f"{ID} aborted (revision {rev('h3')})"
    with pytest.raises(RolloutError, match=r"^placement default/p9 is not in the install strategy of "):
        abort_change(ADDON, obj, "default/p9")


def test_abort_needs_a_rollout_in_progress() -> None:
    with pytest.raises(RolloutError) as exc:
        abort_change(ADDON, cma(progression("p1", "h1", "h1")))
    assert str(exc.value) == f"{ID} has no configuration rollout in progress to abort"
    with pytest.raises(RolloutError, match=r"to abort for placement default/p1$"):
        abort_change(ADDON, cma(progression("p1", "h1", "h1"), progression("p2", "h2", "h1")), "default/p1")
    with pytest.raises(RolloutError, match=r"to abort$"):
        abort_change(ADDON, {"metadata": {"name": "my-addon"}, "spec": {}})


def test_retry_names_the_abort_time() -> None:
    obj = cma(progression("p1", "h2", "h1"), aborted=record(p1=(T1, rev("h2"))))
    assert retry_change(ADDON, obj) == Change(
        f"{ID} retried (aborted at {T1})", {"metadata": {"annotations": {ANNOTATION_ROLLOUT_RETRY: T1}}}
    )
    again = cma(progression("p1", "h2", "h1"), annotations={ANNOTATION_ROLLOUT_RETRY: T1},
                aborted=record(p1=(T1, rev("h2"))))
    assert retry_change(ADDON, again) == Change(f"{ID} retry already requested (aborted at {T1})")


def test_retry_withdraws_the_abort_request_of_the_retried_revision() -> None:
    obj = cma(progression("p1", "h2", "h1"), annotations={ANNOTATION_ROLLOUT_ABORT: rev("h2")},
              aborted=record(p1=(T1, rev("h2"))))
    assert retry_change(ADDON, obj).patch == {
        "metadata": {"annotations": {ANNOTATION_ROLLOUT_RETRY: T1, ANNOTATION_ROLLOUT_ABORT: None}}
    }
    other = cma(progression("p1", "h2", "h1"), annotations={ANNOTATION_ROLLOUT_ABORT: rev("h7")},
                aborted=record(p1=(T1, rev("h2"))))
    assert retry_change(ADDON, other).patch == {"metadata": {"annotations": {ANNOTATION_ROLLOUT_RETRY: T1}}}


def test_retry_chooses_among_abort_times_with_placement() -> None:
    obj = cma(progression("p1", "h2", "h1"), progression("p2", "h3", "h1"),
              aborted=record(p1=(T1, rev("h2")), p2=(T2, rev("h3"))))
    with pytest.raises(RolloutError) as exc:
        retry_change(ADDON, obj)
    assert str(exc.value) == (
        f"{ID} was aborted at several times (default/p1 at {T1}, default/p2 at {T2}): choose one with --placement NS/NAME"
    )
    assert retry_change(ADDON, obj, "default/p2").patch == {"metadata": {"annotations": {ANNOTATION_ROLLOUT_RETRY: T2}}}


def test_retry_errors() -> None:
    with pytest.raises(RolloutError) as exc:
        retry_change(ADDON, cma(progression("p1", "h2", "h1")))
    assert str(exc.value) == f"{ID} is not aborted (no rollout.ocm-rollout.io/aborted record)"
    obj = cma(progression("p1", "h2", "h1"), aborted=record(p1=(T1, rev("h2"))))
    with pytest.raises(RolloutError, match=r"is not aborted for placement default/p2 \("):
        retry_change(ADDON, obj, "default/p2")
    damaged = cma(progression("p1", "h2", "h1"), annotations={addon_abort.ANNOTATION: "[1]"})
    with pytest.raises(RolloutError, match=rf"^{ID}: annotation rollout.ocm-rollout.io/aborted must be"):
        retry_change(ADDON, damaged)
