"""The rollout fence's reservation record (ocm_rollout.controllers.rollout.reservations) and how the
ManifestWorkReplicaSet plan uses it: reserved clusters count as in flight until their work is
observed, are carried out under one name, and are dropped only when observed or no longer decided."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from ocm_rollout.controllers.rollout import reservations
from ocm_rollout.controllers.rollout.reservations import (
    EMPTY,
    ReservationRecordError,
    Reservations,
    parse,
    target_name,
)
from ocm_rollout.controllers.workset.plan import DeployPlan, plan_deploy
from ocm_rollout.controllers.workset.workbuild import owner_for
from tests.unit.test_workset_fixtures import TEMPLATE, at, decision, mwrs, placement, succeeded, work


def done(cluster: str) -> dict[str, Any]:
    return work(cluster, conditions=succeeded(1, at(10)))

PROGRESSIVE_2 = {"type": "Progressive", "progressive": {"maxConcurrency": 2}}


def plan(
    works: list[dict[str, Any]],
    clusters: list[str],
    reserved: dict[str, list[str]] | None = None,
    *,
    strategy: dict[str, Any] | None = None,
    cap: int = reservations.MAX_NEW_PER_PASS,
    template: dict[str, Any] | None = None,
) -> DeployPlan:
    m = mwrs(refs=[{"name": "test-placement", "rolloutStrategy": strategy or PROGRESSIVE_2}])
    m["metadata"]["uid"] = "mwrs-uid"
    if template is not None:
        m["spec"]["manifestWorkTemplate"] = template
    return plan_deploy(
        mwrs=m,
        owner=owner_for("ns", "test-work"),
        works=works,
        placements={"test-placement": placement(selected=len(clusters))},
        decisions={"test-placement": [decision(clusters)]},
        now=at(100),
        reserved=Reservations({k: frozenset(v) for k, v in (reserved or {}).items()}),
        max_new_reservations=cap,
    )


def writes(p: DeployPlan) -> list[str]:
    return sorted(w.cluster for w in p.refs[0].writes)


# --- the record ------------------------------------------------------------------------------------


def test_the_record_round_trips_as_compact_sorted_json() -> None:
    record = Reservations({"p2": frozenset({"c2", "c1"}), "p1": frozenset({"a"})})
    assert record.render() == '{"p1":["a"],"p2":["c1","c2"]}'
    assert parse(record.render()) == record
    assert len(record) == 3


def test_an_empty_record_removes_the_annotation() -> None:
    assert Reservations().render() is None
    assert reservations.annotation_patch(Reservations()) == {reservations.ANNOTATION: None}
    assert parse(None) == parse("") == Reservations()


@pytest.mark.parametrize("text", ["not json", "[]", '{"p": "c1"}', '{"p": [1]}', '{"p": [""]}'])
def test_a_malformed_record_is_an_error_naming_the_annotation(text: str) -> None:
    with pytest.raises(ReservationRecordError, match=re.escape(reservations.ANNOTATION)):
        parse(text)


def test_target_names_look_like_generate_name_and_depend_on_owner_group_and_cluster() -> None:
    name = target_name("web", owner_uid="u1", group="p", cluster="c1")
    assert name.startswith("web") and len(name) == 8
    assert set(name[3:]) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert name == target_name("web", owner_uid="u1", group="p", cluster="c1")
    others = {target_name("web", owner_uid=u, group=g, cluster=c)
              for u, g, c in [("u2", "p", "c1"), ("u1", "q", "c1"), ("u1", "p", "c2")]}
    assert name not in others and len(others) == 3


# --- the plan ---------------------------------------------------------------------------------------


def test_new_widening_writes_are_reserved() -> None:
    p = plan([], ["c1", "c2", "c3", "c4"])
    assert writes(p) == ["c1", "c2"]
    assert p.reservations == Reservations({"test-placement": frozenset({"c1", "c2"})})


def test_a_reserved_cluster_without_a_work_counts_as_in_flight() -> None:
    """Another instance reserved c3 and c4 (its creates may be on the wire): with maxConcurrency 2
    nothing new may start, and the reservations are carried out (same names), not replaced."""
    p = plan([done("c1"), done("c2")], ["c1", "c2", "c3", "c4", "c5"],
             {"test-placement": ["c3", "c4"]})
    assert writes(p) == ["c3", "c4"]
    names = {w.cluster: w.desired["metadata"]["name"] for w in p.refs[0].writes}
    assert names == {c: target_name("test-work", owner_uid="mwrs-uid", group="test-placement", cluster=c)
                     for c in ("c3", "c4")}
    assert p.reservations.of("test-placement") == {"c3", "c4"}


def test_without_the_reservations_the_same_view_widens() -> None:
    """The same view without the record: the plan would start c3 and c4 itself, and with a second
    instance's c3 and c4 (other names under generateName) the rollout would be twice as wide."""
    p = plan([done("c1"), done("c2")], ["c1", "c2", "c3", "c4", "c5"])
    assert writes(p) == ["c3", "c4"]


def test_reservations_are_dropped_once_their_work_is_observed() -> None:
    works = [done("c1"), work("c2")]
    p = plan(works, ["c1", "c2", "c3"], {"test-placement": ["c1", "c2"]})
    assert writes(p) == ["c3"]  # c2 (not applied yet) and c3 are in flight
    assert p.reservations == Reservations({"test-placement": frozenset({"c3"})})


def test_a_reservation_for_a_cluster_no_longer_decided_is_dropped_unwritten() -> None:
    p = plan([], ["c1", "c2"], {"test-placement": ["c9"]})
    assert "c9" not in writes(p)
    assert p.reservations.of("test-placement") == {"c1", "c2"}


def test_reservations_of_a_removed_placement_ref_are_dropped() -> None:
    p = plan([], ["c1"], {"gone": ["c1"], "test-placement": []})
    assert "gone" not in p.reservations.groups


def test_a_new_spec_is_reserved_like_a_create() -> None:
    new_template = copy.deepcopy(TEMPLATE)
    new_template["workload"]["manifests"][0]["data"] = {"version": "2"}
    works = [done(c) for c in ("c1", "c2", "c3")]
    p = plan(works, ["c1", "c2", "c3"], template=new_template)
    assert writes(p) == ["c1", "c2"]
    assert all(w.widens and not w.is_create for w in p.refs[0].writes)
    assert p.reservations.of("test-placement") == {"c1", "c2"}


def test_a_metadata_only_patch_does_not_widen() -> None:
    drifted = work("c1")  # current spec, not applied yet, a foreign label to remove
    drifted["metadata"]["labels"]["extra"] = "x"
    p = plan([drifted], ["c1"], strategy={"type": "All"})
    assert [(w.cluster, w.widens) for w in p.refs[0].writes] == [("c1", False)]
    assert p.reservations == Reservations()


def test_new_reservations_per_pass_are_capped_and_the_rest_deferred() -> None:
    clusters = [f"c{i}" for i in range(10)]
    p = plan([], clusters, strategy={"type": "All"}, cap=4)
    assert len(p.refs[0].writes) == 4 and p.deferred == 6
    assert len(p.reservations) == 4
    again = plan([], clusters, {"test-placement": sorted(p.reservations.of("test-placement"))},
                 strategy={"type": "All"}, cap=4)
    assert len(again.refs[0].writes) == 8 and again.deferred == 2


def test_a_budget_spends_names_and_their_bytes_in_the_record() -> None:
    names = ["c1", "cluster-22", "ü" * 5]
    record = Reservations({"g": frozenset(names)}).render()
    assert record is not None
    empty_group = len('{"g":[]}')
    # Each name costs its JSON (quotes, escapes) and a comma: the record is that, but one comma.
    assert len(record.encode()) == empty_group + sum(reservations.name_bytes(n) for n in names) - 1
    budget = reservations.Budget(count=2, size=100)
    assert budget.take("c1") and budget.take("c2") and not budget.take("c3")  # the count
    budget = reservations.Budget(count=10, size=11)
    assert budget.take("abcd") and budget.size == 4  # 7 bytes
    # The first name that does not fit ends the budget: a shorter one after it does not overtake.
    assert not budget.allows("abcd") and not budget.take("a")
    assert (budget.count, budget.size) == (0, 4)


def test_new_reservations_per_pass_stop_at_the_bytes_of_their_names() -> None:
    # 1,100 names of 61 characters: 64 bytes each in the record, 1,024 in 64 KiB.
    clusters = [f"c{i:04d}".ljust(61, "x") for i in range(1100)]
    assert reservations.MAX_NEW_BYTES_PER_PASS == 64 * 1024
    p = plan([], clusters, strategy={"type": "All"})
    assert len(p.refs[0].writes) == 1024 and p.deferred == 76
    record = p.reservations.render()
    assert record is not None and len(record) <= reservations.MAX_NEW_BYTES_PER_PASS + 64
    # Past the first name that does not fit, no shorter one is reserved: a prefix in name order.
    # 8,185 names of 8 bytes leave 56: not enough for the next name (63), enough for those after it.
    first = [f"a{i:04d}" for i in range(8185)]
    mixed = [*first, "b".ljust(60, "x"), *(f"c{i}" for i in range(10))]
    p = plan([], mixed, strategy={"type": "All"})
    assert sorted(p.reservations.of("test-placement")) == first and p.deferred == 11
    # Short names: the whole wave of a fleet of 1,100 in one pass.
    short = plan([], [f"c{i}" for i in range(1100)], strategy={"type": "All"})
    assert len(short.refs[0].writes) == 1100 and short.deferred == 0


def test_the_whole_record_stays_within_its_bound_when_no_write_is_ever_observed() -> None:
    """Reservations whose writes the API server refuses stay in the record, and each pass carries
    them out again. Under All, every pass used to add 64 KiB more, until the owner's annotations
    passed the API server's 256 KiB and its write was refused too. The record now stops at
    MAX_RECORD_BYTES: the rest of the rollout waits for those reservations."""
    # 4,000 names of 61 characters (64 bytes each in the record): 250 KiB if all were reserved.
    clusters = [f"c{i:04d}".ljust(61, "x") for i in range(4000)]
    reserved: dict[str, list[str]] = {}
    sizes = []
    for _ in range(6):  # passes whose writes are never observed: no work ever appears
        p = plan([], clusters, reserved, strategy={"type": "All"})
        reserved = {g: sorted(c) for g, c in p.reservations.groups.items()}
        sizes.append(reservations.record_bytes(p.reservations))
    assert max(sizes) <= reservations.MAX_RECORD_BYTES
    # 2,047 names: the first 64 KiB, then what fits under 128 KiB, then nothing more.
    assert [s // 64 for s in sizes] == [1024, 2047, 2047, 2047, 2047, 2047]
    # A prefix of the rollout's order, carried out again on every pass, and the rest deferred.
    assert reserved["test-placement"] == sorted(clusters)[:2047]
    assert len(p.refs[0].writes) == 2047 and p.deferred == 4000 - 2047


def test_a_budget_leaves_room_for_nothing_past_the_whole_records_bound() -> None:
    def record_of(size: int) -> Reservations:
        # names of 61 characters: 64 bytes each, 8 bytes for {"g":[]} and one comma less
        names = [f"n{i:05d}".ljust(61, "x") for i in range((size - 7) // 64)]
        return Reservations({"g": frozenset(names)})

    assert reservations.MAX_RECORD_BYTES == 128 * 1024
    empty = reservations.Budget.for_record(EMPTY)
    assert (empty.count, empty.size) == (reservations.MAX_NEW_PER_PASS, reservations.MAX_NEW_BYTES_PER_PASS)
    half = record_of(100 * 1024)
    budget = reservations.Budget.for_record(half, count=5)
    assert budget.count == 5 and budget.size == reservations.MAX_RECORD_BYTES - reservations.record_bytes(half)
    full = record_of(reservations.MAX_RECORD_BYTES)
    room = reservations.MAX_RECORD_BYTES - reservations.record_bytes(full)
    assert 0 < room < 64
    budget = reservations.Budget.for_record(full)
    assert budget.size == room and not budget.take("z".ljust(61, "x"))
    # a record past the bound (written by an older version, or by hand) leaves no room at all
    over = reservations.Budget.for_record(record_of(reservations.MAX_RECORD_BYTES + 1000))
    assert over.size == 0 and not over.take("a")


def test_a_pass_that_deferred_is_followed_at_once_only_when_a_next_one_could_add() -> None:
    small = Reservations({"g": frozenset({"a", "b"})})
    big = Reservations({"g": frozenset(f"n{i:05d}".ljust(61, "x") for i in range(1500))})  # 96 KiB
    smaller = Reservations({"g": frozenset(sorted(big.of("g"))[:1000])})
    assert not reservations.repass_now(0, small, small)
    # the per-pass bound held writes back: the next pass has a fresh one
    assert reservations.repass_now(3, small, small)
    # the whole record's bound held them, and nothing was observed: a repass would plan the same
    assert not reservations.repass_now(3, big, big)
    # ...but observed reservations made room
    assert reservations.repass_now(3, big, smaller)
    # ...or the pass wrote new ones, which the next pass sees and clears
    bound = Reservations({"g": frozenset(sorted(big.of("g"))[:1200])})  # 75 KiB: less than 64 left
    assert not reservations.repass_now(3, bound, bound)
    assert reservations.repass_now(3, bound, big)
