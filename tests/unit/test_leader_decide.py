"""The pure leader-election decision (client-go semantics)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ocm_rollout.controllers.runtime.leader import (
    UNREADABLE,
    Action,
    ElectorState,
    LeaderElectionConfigError,
    LeaseRecord,
    LeaseTimings,
    Observation,
    after_write,
    decide,
    format_micro_time,
    lease_spec,
    parse_time,
    record_from_lease,
    release_record,
    standby_wait,
)

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
TIMINGS = LeaseTimings(lease_duration=15, renew_deadline=10, retry_period=2)
ME = "me"
OTHER = "other"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def held_by(holder: str, *, transitions: int = 3, renewed: float = 0) -> LeaseRecord:
    return LeaseRecord(
        holder_identity=holder,
        lease_duration_seconds=15,
        acquire_time=at(-100),
        renew_time=at(renewed),
        lease_transitions=transitions,
    )


def test_missing_lease_is_created_naming_us_with_zero_transitions() -> None:
    decision = decide(None, identity=ME, now=T0, state=ElectorState(), timings=TIMINGS)
    assert decision.action is Action.CREATE
    assert decision.record == LeaseRecord(ME, 15, T0, T0, 0)


def test_valid_lease_of_another_holder_makes_us_wait() -> None:
    decision = decide(held_by(OTHER), identity=ME, now=T0, state=ElectorState(), timings=TIMINGS)
    assert decision.action is Action.WAIT
    assert decision.record is None


def test_validity_is_measured_from_when_we_first_observed_the_record_not_its_renew_time() -> None:
    # The holder's renewTime is an hour old (skewed clock), but we only just saw this content.
    stale_clock = held_by(OTHER, renewed=-3600)
    decision = decide(stale_clock, identity=ME, now=T0, state=ElectorState(), timings=TIMINGS)
    assert decision.action is Action.WAIT
    assert decision.observed == Observation(stale_clock, T0)


def test_unchanged_lease_of_another_holder_is_taken_over_after_its_duration() -> None:
    record = held_by(OTHER)
    state = ElectorState(observed=Observation(record, T0))
    assert decide(record, identity=ME, now=at(14.9), state=state, timings=TIMINGS).action is Action.WAIT
    decision = decide(record, identity=ME, now=at(15), state=state, timings=TIMINGS)
    assert decision.action is Action.ACQUIRE


def test_takeover_sets_acquire_and_renew_time_and_counts_a_transition() -> None:
    record = held_by(OTHER, transitions=3)
    state = ElectorState(observed=Observation(record, T0))
    decision = decide(record, identity=ME, now=at(20), state=state, timings=TIMINGS)
    assert decision.record == LeaseRecord(ME, 15, at(20), at(20), 4)


def test_a_renewed_lease_restarts_the_validity_window() -> None:
    first = held_by(OTHER, renewed=0)
    renewed = held_by(OTHER, renewed=2)
    state = ElectorState(observed=Observation(first, T0))
    decision = decide(renewed, identity=ME, now=at(14), state=state, timings=TIMINGS)
    assert decision.observed == Observation(renewed, at(14))
    later = ElectorState(observed=decision.observed)
    assert decide(renewed, identity=ME, now=at(28), state=later, timings=TIMINGS).action is Action.WAIT


def test_the_records_own_lease_duration_is_used_for_validity() -> None:
    record = LeaseRecord(OTHER, 60, at(-1), at(-1), 1)
    state = ElectorState(observed=Observation(record, T0))
    assert decide(record, identity=ME, now=at(30), state=state, timings=TIMINGS).action is Action.WAIT
    assert decide(record, identity=ME, now=at(60), state=state, timings=TIMINGS).action is Action.ACQUIRE


def test_released_lease_is_taken_at_once() -> None:
    released = LeaseRecord("", 1, T0, T0, 5)
    decision = decide(released, identity=ME, now=T0, state=ElectorState(), timings=TIMINGS)
    assert decision.action is Action.ACQUIRE
    assert decision.record is not None and decision.record.lease_transitions == 6


def test_holder_renews_keeping_acquire_time_and_transitions() -> None:
    record = held_by(ME, transitions=7)
    state = ElectorState(observed=Observation(record, T0), last_renew=T0)
    decision = decide(record, identity=ME, now=at(2), state=state, timings=TIMINGS)
    assert decision.action is Action.RENEW
    assert decision.record == LeaseRecord(ME, 15, at(-100), at(2), 7)


def test_restarted_process_with_same_identity_resumes_as_holder() -> None:
    decision = decide(held_by(ME), identity=ME, now=T0, state=ElectorState(), timings=TIMINGS)
    assert decision.action is Action.RENEW


def test_leader_that_has_not_renewed_within_the_renew_deadline_has_lost() -> None:
    record = held_by(ME)
    state = ElectorState(observed=Observation(record, T0), last_renew=T0)
    assert decide(record, identity=ME, now=at(9.9), state=state, timings=TIMINGS).action is Action.RENEW
    assert decide(record, identity=ME, now=at(10), state=state, timings=TIMINGS).action is Action.LOST


def test_leader_past_the_deadline_has_lost_even_when_the_lease_is_unreadable() -> None:
    state = ElectorState(last_renew=T0)
    assert decide(UNREADABLE, identity=ME, now=at(11), state=state, timings=TIMINGS).action is Action.LOST


def test_unreadable_lease_means_wait_before_the_deadline() -> None:
    state = ElectorState(last_renew=T0)
    assert decide(UNREADABLE, identity=ME, now=at(3), state=state, timings=TIMINGS).action is Action.WAIT


def test_leader_that_sees_another_holder_has_lost() -> None:
    state = ElectorState(observed=Observation(held_by(ME), T0), last_renew=T0)
    decision = decide(held_by(OTHER), identity=ME, now=at(1), state=state, timings=TIMINGS)
    assert decision.action is Action.LOST


def test_successful_write_makes_us_leader_as_of_the_decision_time() -> None:
    decision = decide(None, identity=ME, now=T0, state=ElectorState(), timings=TIMINGS)
    state = after_write(ElectorState(), decision, written=True, now=T0)
    assert state.leading and state.last_renew == T0


def test_failed_write_leaves_a_standby_a_standby() -> None:
    decision = decide(None, identity=ME, now=T0, state=ElectorState(), timings=TIMINGS)
    assert not after_write(ElectorState(), decision, written=False, now=T0).leading


def test_failed_renewal_keeps_the_previous_renew_time() -> None:
    record = held_by(ME)
    state = ElectorState(observed=Observation(record, T0), last_renew=T0)
    decision = decide(record, identity=ME, now=at(2), state=state, timings=TIMINGS)
    assert after_write(state, decision, written=False, now=at(2)).last_renew == T0


def test_lost_decision_ends_leadership() -> None:
    state = ElectorState(last_renew=T0)
    decision = decide(UNREADABLE, identity=ME, now=at(10), state=state, timings=TIMINGS)
    assert not after_write(state, decision, written=False, now=at(10)).leading


def test_release_empties_the_holder_and_keeps_transitions() -> None:
    assert release_record(held_by(ME, transitions=4), identity=ME, now=at(5)) == LeaseRecord("", 1, at(5), at(5), 4)


def test_release_of_a_lease_we_do_not_hold_writes_nothing() -> None:
    assert release_record(held_by(OTHER), identity=ME, now=T0) is None


def test_standby_wait_is_jittered_between_one_and_2_2_retry_periods() -> None:
    assert standby_wait(TIMINGS, rng=lambda: 0.0) == 2.0
    assert standby_wait(TIMINGS, rng=lambda: 0.999) == pytest.approx(2 * (1 + 1.2 * 0.999))


@pytest.mark.parametrize(
    ("timings", "flag"),
    [
        (LeaseTimings(10, 10, 2), "--lease-duration"),
        (LeaseTimings(15, 2, 2), "--renew-deadline"),
        (LeaseTimings(15, 10, 0), "--retry-period"),
        (LeaseTimings(-1, 10, 2), "--lease-duration"),
    ],
)
def test_impossible_timings_are_rejected_naming_the_flag(timings: LeaseTimings, flag: str) -> None:
    with pytest.raises(LeaderElectionConfigError, match=flag):
        timings.validate()


def test_fractional_lease_duration_is_written_rounded_up() -> None:
    assert LeaseTimings(2.5, 2, 0.5).lease_duration_seconds == 3


def test_micro_time_always_has_six_fraction_digits() -> None:
    assert format_micro_time(T0) == "2026-01-01T12:00:00.000000Z"


def test_lease_spec_round_trips_through_the_wire_form() -> None:
    record = LeaseRecord(ME, 15, at(1.25), at(2.5), 3)
    assert record_from_lease({"spec": lease_spec(record)}) == record


def test_lease_without_spec_reads_as_free() -> None:
    assert record_from_lease({"metadata": {"name": "x"}}) == LeaseRecord()


def test_parse_time_accepts_offsets_and_rejects_garbage() -> None:
    assert parse_time("2026-01-01T12:00:00+00:00") == T0
    assert parse_time("yesterday") is None
