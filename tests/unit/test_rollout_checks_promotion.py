"""The manual promotion gate: which decision groups may proceed, the promoted annotation (per
placement and revision), and the promotion a `rollout promote` would write."""

from __future__ import annotations

import json

import pytest

from ocm_rollout.api.constants import ANNOTATION_ROLLOUT_PROMOTED
from ocm_rollout.api.rollout_checks import RolloutPromotion
from ocm_rollout.controllers.rollout.checks.promotion import (
    Promotion,
    PromotionError,
    gate,
    gated_groups,
    promote,
    promoted_groups,
    read_promotions,
)
from ocm_rollout.controllers.rollout.model import GroupKey

G0, G1, G2, G3 = GroupKey("canary", 0), GroupKey("", 1), GroupKey("prod", 2), GroupKey("prod", 3)
ORDER = (G0, G1, G2, G3)
EVERY_GROUP_AFTER_THE_FIRST = RolloutPromotion.model_validate({"type": "Manual"})
PROD = RolloutPromotion.model_validate({"type": "Manual", "decisionGroups": [{"groupName": "prod"}]})
BY_INDEX = RolloutPromotion.model_validate({"type": "Manual", "decisionGroups": [{"groupIndex": 1}, {"groupIndex": 3}]})


def test_without_promotion_every_group_proceeds() -> None:
    opened = gate(None, ORDER, frozenset())
    assert opened.open == ORDER and opened.waiting is None and opened.held == ()
    assert opened.message("p") == ""
    assert gate(EVERY_GROUP_AFTER_THE_FIRST, (), frozenset()).open == ()


def test_by_default_every_group_after_the_first_waits() -> None:
    assert gated_groups(EVERY_GROUP_AFTER_THE_FIRST, ORDER) == (G1, G2, G3)
    first = gate(EVERY_GROUP_AFTER_THE_FIRST, ORDER, frozenset())
    assert first.open == (G0,) and first.waiting == G1 and first.held == (G1, G2, G3)
    assert first.allows(G0) and not first.allows(G1)
    assert first.message("web") == (
        "placement web: decision group 1 waits for a promotion (ocm-rollout rollout promote --placement web)"
    )
    assert gate(EVERY_GROUP_AFTER_THE_FIRST, ORDER, frozenset({1})).waiting == G2
    assert gate(EVERY_GROUP_AFTER_THE_FIRST, ORDER, frozenset({1, 2, 3})).open == ORDER


def test_the_first_group_in_rollout_order_is_not_gated_by_default() -> None:
    # Mandatory groups roll out first: the order, not the index, says which group is first.
    order = (G2, G0, G1)
    assert gated_groups(EVERY_GROUP_AFTER_THE_FIRST, order) == (G0, G1)
    assert gate(EVERY_GROUP_AFTER_THE_FIRST, order, frozenset()).open == (G2,)


def test_named_groups_wait_and_hold_every_later_group() -> None:
    assert gated_groups(PROD, ORDER) == (G2, G3)
    held = gate(PROD, ORDER, frozenset())
    assert held.open == (G0, G1) and held.waiting == G2
    assert gate(PROD, ORDER, frozenset({2})).waiting == G3
    message = gate(PROD, ORDER, frozenset({2})).message("web")
    assert "decision group 3 (prod) waits" in message


def test_groups_by_index_and_an_ungated_group_after_a_waiting_one_waits_too() -> None:
    assert gated_groups(BY_INDEX, ORDER) == (G1, G3)
    held = gate(BY_INDEX, ORDER, frozenset())
    assert held.open == (G0,) and held.held == (G1, G2, G3)
    assert gate(BY_INDEX, ORDER, frozenset({1})).open == (G0, G1, G2)
    # A promotion of a later group alone does not open the one before it.
    assert gate(BY_INDEX, ORDER, frozenset({3})).waiting == G1


def test_the_first_group_may_be_gated_too() -> None:
    spec = RolloutPromotion.model_validate({"type": "Manual", "decisionGroups": [{"groupIndex": 0}]})
    assert gate(spec, ORDER, frozenset()).open == ()


def test_promotions_hold_for_their_revision_only() -> None:
    annotations = {ANNOTATION_ROLLOUT_PROMOTED: json.dumps({"web": {"revision": "r2", "groups": [1]}})}
    promotions, problem = read_promotions(annotations)
    assert problem is None and promotions == {"web": Promotion("r2", frozenset({1}))}
    assert promoted_groups(promotions, "web", "r2") == frozenset({1})
    assert promoted_groups(promotions, "web", "r3") == frozenset()
    assert promoted_groups(promotions, "other", "r2") == frozenset()


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("not json", "is not JSON"),
        ("[1]", "is not a JSON object"),
        ('{"web": {"revision": "r", "groups": ["1"]}}', "'web' is not {revision: string, groups: [index, ...]}"),
        ('{"web": {"revision": "r", "groups": [-1]}}', "'web' is not"),
        ('{"web": {"revision": "r", "groups": [true]}}', "'web' is not"),
        ('{"web": {"groups": [1]}}', "'web' is not"),
        ('{"web": 3}', "'web' is not"),
    ],
)
def test_a_malformed_annotation_promotes_nothing_and_says_why(raw: str, problem: str) -> None:
    promotions, found = read_promotions({ANNOTATION_ROLLOUT_PROMOTED: raw})
    assert promotions == {}
    assert found is not None and problem in found and ANNOTATION_ROLLOUT_PROMOTED in found


def test_a_malformed_entry_leaves_the_others() -> None:
    raw = json.dumps({"bad": {"revision": 1, "groups": []}, "good": {"revision": "r", "groups": [2]}})
    promotions, problem = read_promotions({ANNOTATION_ROLLOUT_PROMOTED: raw})
    assert promotions == {"good": Promotion("r", frozenset({2}))} and problem is not None
    assert read_promotions({}) == ({}, None)
    assert read_promotions({ANNOTATION_ROLLOUT_PROMOTED: " "}) == ({}, None)


def test_promote_the_waiting_group_then_the_next() -> None:
    value, group = promote({}, "web", "r1", EVERY_GROUP_AFTER_THE_FIRST, ORDER)
    assert group == 1 and json.loads(value) == {"web": {"revision": "r1", "groups": [1]}}
    value, group = promote({ANNOTATION_ROLLOUT_PROMOTED: value}, "web", "r1", EVERY_GROUP_AFTER_THE_FIRST, ORDER)
    assert group == 2 and json.loads(value) == {"web": {"revision": "r1", "groups": [1, 2]}}


def test_promote_keeps_other_placements_and_replaces_an_old_revision() -> None:
    current = json.dumps({"web": {"revision": "r1", "groups": [1, 2]}, "eu": {"revision": "x", "groups": [1]}})
    value, group = promote({ANNOTATION_ROLLOUT_PROMOTED: current}, "web", "r2", EVERY_GROUP_AFTER_THE_FIRST, ORDER)
    assert group == 1
    assert json.loads(value) == {"eu": {"revision": "x", "groups": [1]}, "web": {"revision": "r2", "groups": [1]}}


def test_promote_a_named_group_and_the_refusals() -> None:
    value, group = promote({}, "web", "r1", BY_INDEX, ORDER, group=3)
    assert group == 3 and json.loads(value)["web"]["groups"] == [3]
    with pytest.raises(PromotionError, match="decision group 2 is not gated"):
        promote({}, "web", "r1", BY_INDEX, ORDER, group=2)
    with pytest.raises(PromotionError, match="already promoted"):
        promote({ANNOTATION_ROLLOUT_PROMOTED: value}, "web", "r1", BY_INDEX, ORDER, group=3)
    with pytest.raises(PromotionError, match="no promotion gate"):
        promote({}, "web", "r1", None, ORDER)
    done = json.dumps({"web": {"revision": "r1", "groups": [1, 2, 3]}})
    with pytest.raises(PromotionError, match="no decision group waits"):
        promote({ANNOTATION_ROLLOUT_PROMOTED: done}, "web", "r1", EVERY_GROUP_AFTER_THE_FIRST, ORDER)
