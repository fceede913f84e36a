"""`ocm-rollout rollout promote`: which placement and group it promotes, the annotation it
writes (with a resourceVersion precondition), its refusals, and the planner's group order."""

from __future__ import annotations

import asyncio
import json
from typing import Any, cast

import pytest

from ocm_rollout.api.constants import ANNOTATION_ROLLOUT_PROMOTED, LABEL_PLACEMENT
from ocm_rollout.cli.commands import rollout, rollout_addon
from ocm_rollout.cli.commands.rollout_verbs import RolloutError, Target, promote_change, promoted_placement
from ocm_rollout.cli.main import build_parser, main
from ocm_rollout.client.kube import JSON, Kube, Resource
from ocm_rollout.controllers.addon import abort as addon_abort
from ocm_rollout.controllers.addon.configs import Config, DesiredConfigs
from ocm_rollout.controllers.rollout.checks.promotion import rollout_order
from ocm_rollout.controllers.rollout.model import DecisionGroup, GroupKey, MandatoryGroupRef

TARGET = Target("mwrs", "web", "ns1")
MWRS_ID = "manifestworkreplicaset.work.open-cluster-management.io/web"
GATED = {"type": "ProgressivePerGroup", "promotion": {"type": "Manual"}}


def mwrs(*refs: JSON, update: str | None = "r2", annotations: dict[str, str] | None = None) -> JSON:
    return {
        "metadata": {"name": "web", "namespace": "ns1", "resourceVersion": "7", "annotations": annotations or {}},
        "spec": {"placementRefs": list(refs)},
        "status": {"updateRevision": update} if update else {},
    }


def decision(index: int, name: str = "", placement: str = "fleet") -> JSON:
    labels = {LABEL_PLACEMENT: placement, "cluster.open-cluster-management.io/decision-group-index": str(index)}
    if name:
        labels["cluster.open-cluster-management.io/decision-group-name"] = name
    return {"metadata": {"name": f"{placement}-decision-{index}", "labels": labels},
            "status": {"decisions": [{"clusterName": f"c{index}", "reason": ""}]}}  # fmt: skip


DECISIONS = [decision(0), decision(1), decision(2)]


def test_rollout_order_is_the_planner_s() -> None:
    groups = [DecisionGroup(group_index=i, group_name=n, clusters=[f"c{i}"]) for i, n in ((2, "canary"), (0, ""), (1, ""), (7, "x"))]
    assert rollout_order(groups, ()) == (GroupKey("", 0), GroupKey("", 1), GroupKey("canary", 2))
    assert rollout_order(groups, (MandatoryGroupRef(group_name="canary"),)) == (
        GroupKey("canary", 2), GroupKey("", 0), GroupKey("", 1)
    )  # fmt: skip
    assert rollout_order(groups, (MandatoryGroupRef(group_index=7),))[0] == GroupKey("x", 7)


def test_promote_writes_the_waiting_group_for_the_update_revision() -> None:
    ref = {"name": "fleet", "rolloutStrategy": GATED}
    change = promote_change(TARGET, mwrs(ref), ref, DECISIONS, None)
    assert change.message == f"{MWRS_ID} promoted (placement fleet, decision group 1, revision r2)"
    assert change.patch == {
        "metadata": {
            "annotations": {ANNOTATION_ROLLOUT_PROMOTED: '{"fleet":{"revision":"r2","groups":[1]}}'},
            "resourceVersion": "7",
        }
    }
    promoted = {ANNOTATION_ROLLOUT_PROMOTED: '{"fleet":{"revision":"r2","groups":[1]}}'}
    again = promote_change(TARGET, mwrs(ref, annotations=promoted), ref, DECISIONS, None)
    assert "decision group 2" in again.message
    stale = {ANNOTATION_ROLLOUT_PROMOTED: '{"fleet":{"revision":"r1","groups":[1,2]}}'}
    fresh = promote_change(TARGET, mwrs(ref, annotations=stale), ref, DECISIONS, None)
    assert fresh.patch is not None and "decision group 1, revision r2" in fresh.message


@pytest.mark.parametrize(
    ("obj", "group", "message"),
    [
        (mwrs({"name": "fleet", "rolloutStrategy": GATED}, update=None), None, "has no rollout in progress to promote"),
        (mwrs({"name": "fleet", "rolloutStrategy": {"type": "All"}}), None, "has no promotion gate"),
        (mwrs({"name": "fleet", "rolloutStrategy": GATED}), 0, "decision group 0 is not gated"),
        (
            mwrs({"name": "fleet", "rolloutStrategy": GATED},
                 annotations={ANNOTATION_ROLLOUT_PROMOTED: '{"fleet":{"revision":"r2","groups":[1,2]}}'}),
            None,
            "no decision group waits for a promotion",
        ),
        (mwrs({"name": "fleet", "rolloutStrategy": {**GATED, "type": "Bogus"}}), None, "fleet"),
    ],
)
def test_promote_refusals(obj: JSON, group: int | None, message: str) -> None:
    ref = obj["spec"]["placementRefs"][0]
    with pytest.raises(RolloutError) as caught:
        promote_change(TARGET, obj, ref, DECISIONS, group)
    assert message in str(caught.value) and str(caught.value).startswith(MWRS_ID)


def test_the_placement_is_the_named_one_or_the_only_gated_one() -> None:
    a, b = {"name": "a", "rolloutStrategy": GATED}, {"name": "b", "rolloutStrategy": {"type": "All"}}
    assert promoted_placement(TARGET, mwrs(a, b), None) is a
    assert promoted_placement(TARGET, mwrs(a, b), "b") is b
    with pytest.raises(RolloutError, match="no placementRef 'c'"):
        promoted_placement(TARGET, mwrs(a, b), "c")
    with pytest.raises(RolloutError, match=r"with a promotion gate: a, b"):
        promoted_placement(TARGET, mwrs(a, {**b, "rolloutStrategy": GATED}), None)
    with pytest.raises(RolloutError, match=r"with a promotion gate: none"):
        promoted_placement(TARGET, mwrs(b), None)


class FakeKube:
    def __init__(self, obj: JSON) -> None:
        self.obj = obj
        self.lists: list[tuple[str, str | None]] = []
        self.patches: list[Any] = []

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> JSON:
        return self.obj

    async def list_objects(self, res: Resource, namespace: str | None = None, **kw: Any) -> list[JSON]:
        self.lists.append((res.plural, kw.get("label_selector")))
        return [d for d in DECISIONS if f"{LABEL_PLACEMENT}={d['metadata']['labels'][LABEL_PLACEMENT]}" == kw.get("label_selector")]

    async def patch(self, res: Resource, name: str, patch: Any, namespace: str | None = None) -> JSON:
        self.patches.append(patch)
        return {}


def test_the_verb_reads_the_placement_s_decisions_and_patches() -> None:
    kube = FakeKube(mwrs({"name": "fleet", "rolloutStrategy": GATED}))
    args = build_parser().parse_args(["rollout", "promote", "web", "--group", "2"])
    out = asyncio.run(rollout.run_verb(cast(Kube, kube), TARGET, args))
    assert out == f"{MWRS_ID} promoted (placement fleet, decision group 2, revision r2)\n"
    assert kube.lists == [("placementdecisions", f"{LABEL_PLACEMENT}=fleet")]
    (patch,) = kube.patches
    assert json.loads(patch["metadata"]["annotations"][ANNOTATION_ROLLOUT_PROMOTED]) == {"fleet": {"revision": "r2", "groups": [2]}}


def test_promote_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["rollout", "promote", "web", "--placement", "fleet"])
    assert (args.placement, args.group) == ("fleet", None)
    rollout.check_args(args)
    with pytest.raises(SystemExit):
        main(["rollout", "promote", "web", "--group", "-1"])
    assert "decision group indices start at 0" in capsys.readouterr().err
    assert main(["rollout", "promote", "--kind", "addon", "x", "--placement", "fleet"]) == 2
    assert "--placement: 'fleet' is not NAMESPACE/NAME" in capsys.readouterr().err
    addon = build_parser().parse_args(["rollout", "promote", "--kind", "addon", "x", "--placement", "ns1/fleet"])
    rollout.check_args(addon)


# -- add-ons (--kind addon) ------------------------------------------------------------------------------

ADDON = Target("addon", "my-addon")
ADDON_ID = "clustermanagementaddon.addon.open-cluster-management.io/my-addon"
ADC = {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs"}


def cma(*strategies: tuple[str, JSON], annotations: dict[str, str] | None = None) -> JSON:
    """A CMA installed by placements ``ns1/<name>`` under their strategies, each rolling out
    configuration ``cfg`` with hash ``h2``."""
    item = {**ADC, "desiredConfig": {"namespace": "ns1", "name": "cfg", "specHash": "h2"}}
    return {
        "metadata": {"name": "my-addon", "resourceVersion": "9", "annotations": annotations or {}},
        "spec": {"installStrategy": {"type": "Placements", "placements": [
            {"namespace": "ns1", "name": name, "configs": [{**ADC, "namespace": "ns1", "name": "cfg"}], "rolloutStrategy": strategy}
            for name, strategy in strategies
        ]}},
        "status": {"installProgressions": [
            {"namespace": "ns1", "name": name, "configReferences": [item]} for name, _strategy in strategies
        ]},
    }


def addon_revision() -> str:
    groups = {(ADC["group"], ADC["resource"]): [Config(ADC["group"], ADC["resource"], "ns1", "cfg", "h2")]}
    return addon_abort.revision(DesiredConfigs(groups))


def test_promote_an_addon_placement_for_the_revision_of_its_configurations() -> None:
    obj = cma(("fleet", GATED), ("other", {"type": "All"}))
    node = rollout_addon.promoted_placement(ADDON, obj, None)
    assert node.key == "ns1/fleet"
    change = rollout_addon.promote_change(ADDON, obj, node, DECISIONS, None)
    revision = addon_revision()
    assert change.message == f"{ADDON_ID} promoted (placement ns1/fleet, decision group 1, revision {revision})"
    assert change.patch == {"metadata": {
        "annotations": {ANNOTATION_ROLLOUT_PROMOTED: json.dumps({"ns1/fleet": {"revision": revision, "groups": [1]}}, separators=(",", ":"))},
        "resourceVersion": "9",
    }}
    assert rollout_addon.promoted_placement(ADDON, obj, "ns1/other").key == "ns1/other"
    with pytest.raises(RolloutError, match="placement ns1/nope is not in the install strategy of " + ADDON_ID):
        rollout_addon.promoted_placement(ADDON, obj, "ns1/nope")
    with pytest.raises(RolloutError, match=r"placements with a promotion gate: ns1/a, ns1/b"):
        rollout_addon.promoted_placement(ADDON, cma(("a", GATED), ("b", GATED)), None)
    with pytest.raises(RolloutError, match="placement ns1/other has no promotion gate"):
        rollout_addon.promote_change(ADDON, obj, rollout_addon.promoted_placement(ADDON, obj, "ns1/other"), DECISIONS, None)


def test_the_addon_verb_reads_the_placement_s_decisions_in_its_namespace() -> None:
    kube = FakeKube(cma(("fleet", GATED)))
    args = build_parser().parse_args(["rollout", "promote", "--kind", "addon", "my-addon", "--group", "2"])
    out = asyncio.run(rollout.run_verb(cast(Kube, kube), ADDON, args))
    assert out == f"{ADDON_ID} promoted (placement ns1/fleet, decision group 2, revision {addon_revision()})\n"
    assert kube.lists == [("placementdecisions", f"{LABEL_PLACEMENT}=fleet")]
