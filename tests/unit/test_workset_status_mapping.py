"""ManifestWork status -> rollout status (docs/behaviour/mwrs.md 5.4, improvements 1 and 4)."""

from __future__ import annotations

from ocm_rollout.api.constants import ANNOTATION_TEMPLATE_APPLIED_TIME as TEMPLATE_APPLIED_ANNOTATION
from ocm_rollout.controllers.common.wire import format_time
from ocm_rollout.controllers.workset.status_mapping import (
    FAILED,
    PROGRESSING,
    SUCCEEDED,
    TO_APPLY,
    revision_start,
    rollout_status,
)
from tests.unit.test_workset_fixtures import at, cond, work


def status_of(conditions: list[dict], generation: int = 1, annotations: dict | None = None) -> tuple:
    w = work("c1", generation=generation, conditions=conditions, annotations=annotations)
    result = rollout_status(w, revision_start(w))
    return result.status, result.last_transition_time


# --- OCM's rules -------------------------------------------------------------------------


def test_no_conditions_is_to_apply() -> None:
    assert status_of([]) == (TO_APPLY, None)


def test_applied_of_older_generation_is_to_apply() -> None:
    conds = [cond("Applied", "True", 1), cond("Progressing", "False", 2)]
    assert status_of(conds, generation=2)[0] == TO_APPLY


def test_applied_false_with_progressing_is_to_apply() -> None:
    conds = [cond("Applied", "False", 1), cond("Progressing", "True", 1)]
    assert status_of(conds)[0] == TO_APPLY


def test_progressing_of_older_generation_is_to_apply() -> None:
    conds = [cond("Applied", "True", 2), cond("Available", "True", 2), cond("Progressing", "False", 1)]
    assert status_of(conds, generation=2)[0] == TO_APPLY


def test_degraded_of_older_generation_is_to_apply() -> None:
    conds = [cond("Applied", "True", 2), cond("Progressing", "True", 2), cond("Degraded", "True", 1)]
    assert status_of(conds, generation=2)[0] == TO_APPLY


def test_progressing_and_degraded_true_is_failed_from_degraded_transition() -> None:
    conds = [
        cond("Applied", "True", 1, at(0)),
        cond("Progressing", "True", 1, at(1)),
        cond("Degraded", "True", 1, at(7)),
    ]
    assert status_of(conds) == (FAILED, at(7))


def test_progressing_true_is_progressing_from_its_transition() -> None:
    conds = [cond("Applied", "True", 1, at(0)), cond("Progressing", "True", 1, at(3))]
    assert status_of(conds) == (PROGRESSING, at(3))


def test_progressing_false_is_succeeded_from_its_transition() -> None:
    conds = [cond("Applied", "True", 1, at(0)), cond("Progressing", "False", 1, at(9))]
    assert status_of(conds) == (SUCCEEDED, at(9))


def test_progressing_unknown_is_progressing() -> None:
    conds = [cond("Applied", "True", 1), cond("Progressing", "Unknown", 1, at(4))]
    assert status_of(conds) == (PROGRESSING, at(4))


def test_degraded_false_does_not_fail_a_progressing_work() -> None:
    conds = [cond("Applied", "True", 1), cond("Progressing", "True", 1, at(2)), cond("Degraded", "False", 1)]
    assert status_of(conds) == (PROGRESSING, at(2))


def test_available_is_ignored_when_progressing_exists() -> None:
    conds = [cond("Applied", "True", 1), cond("Available", "False", 1), cond("Progressing", "False", 1, at(5))]
    assert status_of(conds) == (SUCCEEDED, at(5))


# --- improvement 1: works without any Progressing condition ------------------------------


def test_applied_and_available_without_progressing_is_succeeded_from_later_transition() -> None:
    conds = [cond("Applied", "True", 1, at(2)), cond("Available", "True", 1, at(6))]
    assert status_of(conds) == (SUCCEEDED, at(6))


def test_applied_false_without_progressing_is_failed() -> None:
    conds = [cond("Applied", "False", 1, at(3)), cond("Available", "True", 1, at(1))]
    assert status_of(conds) == (FAILED, at(3))


def test_available_false_without_progressing_is_to_apply() -> None:
    conds = [cond("Applied", "True", 1), cond("Available", "False", 1)]
    assert status_of(conds)[0] == TO_APPLY


def test_available_of_older_generation_without_progressing_is_to_apply() -> None:
    conds = [cond("Applied", "True", 2), cond("Available", "True", 1)]
    assert status_of(conds, generation=2)[0] == TO_APPLY


def test_applied_false_of_older_generation_without_progressing_is_to_apply() -> None:
    conds = [cond("Applied", "False", 1), cond("Available", "True", 2)]
    assert status_of(conds, generation=2)[0] == TO_APPLY


def test_any_progressing_condition_restores_ocm_rules() -> None:
    # Applied and Available are current, but a stale Progressing says rules exist: not done yet.
    conds = [cond("Applied", "True", 2), cond("Available", "True", 2), cond("Progressing", "False", 1)]
    assert status_of(conds, generation=2)[0] == TO_APPLY


def test_agent_with_condition_rules_is_never_succeeded_before_progressing_false() -> None:
    """A real agent writes the rule-driven Progressing in the same update as Available, so
    improvement 1 never reads a rules-driven work as Succeeded early (docs/behaviour/work-agent.md, recipe 5)."""
    # Generation 1 then a template change to generation 2; each list is one status update.
    updates = [
        (1, [cond("Applied", "True", 1, at(1)), cond("Available", "True", 1, at(1)),
             cond("Progressing", "True", 1, at(1))]),
        (1, [cond("Applied", "True", 1, at(1)), cond("Available", "True", 1, at(1)),
             cond("Progressing", "False", 1, at(5))]),
        # Spec updated: the old conditions stay until the agent reports generation 2.
        (2, [cond("Applied", "True", 1, at(1)), cond("Available", "True", 1, at(1)),
             cond("Progressing", "False", 1, at(5))]),
        (2, [cond("Applied", "True", 2, at(1)), cond("Available", "True", 2, at(1)),
             cond("Progressing", "True", 2, at(8))]),
        (2, [cond("Applied", "True", 2, at(1)), cond("Available", "True", 2, at(1)),
             cond("Progressing", "False", 2, at(12))]),
    ]
    seen = [status_of(conds, generation=gen)[0] for gen, conds in updates]
    assert seen == [PROGRESSING, SUCCEEDED, TO_APPLY, PROGRESSING, SUCCEEDED]


# --- improvement 4: clocks start at the current revision ---------------------------------


def test_success_time_never_predates_the_current_revision() -> None:
    # Applied/Available stayed True across the spec update, so their times are the old revision's.
    conds = [cond("Applied", "True", 2, at(0)), cond("Available", "True", 2, at(0))]
    annotations = {TEMPLATE_APPLIED_ANNOTATION: format_time(at(100))}
    assert status_of(conds, generation=2, annotations=annotations) == (SUCCEEDED, at(100))


def test_failure_deadline_starts_at_the_current_revision() -> None:
    conds = [cond("Applied", "True", 2, at(0)), cond("Progressing", "True", 2, at(0)),
             cond("Degraded", "True", 2, at(0))]
    annotations = {TEMPLATE_APPLIED_ANNOTATION: format_time(at(50))}
    assert status_of(conds, generation=2, annotations=annotations) == (FAILED, at(50))


def test_transition_after_the_revision_start_is_kept() -> None:
    conds = [cond("Applied", "True", 2, at(0)), cond("Progressing", "False", 2, at(70))]
    annotations = {TEMPLATE_APPLIED_ANNOTATION: format_time(at(50))}
    assert status_of(conds, generation=2, annotations=annotations) == (SUCCEEDED, at(70))


def test_unreadable_revision_annotation_is_ignored() -> None:
    conds = [cond("Applied", "True", 1, at(0)), cond("Progressing", "False", 1, at(3))]
    assert status_of(conds, annotations={TEMPLATE_APPLIED_ANNOTATION: "yesterday"}) == (SUCCEEDED, at(3))
