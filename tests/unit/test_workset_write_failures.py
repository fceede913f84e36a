"""Works the API server refuses (improvement 2): which reason each answer gives
``ManifestworkApplied``, and the Warning event told once per distinct situation."""

from __future__ import annotations

import pytest

from ocm_rollout.client.kube import error_from
from ocm_rollout.controllers.workset import aggregation
from ocm_rollout.controllers.workset.aggregation import DeployOutcome, WriteFailure
from ocm_rollout.controllers.workset.events import write_failure_events
from ocm_rollout.controllers.workset.operator import _failure_kind

DENIED = (
    'admission webhook "manifestworkvalidators.admission.work.open-cluster-management.io" denied the request: '
    "the size of manifests is 614505 bytes which exceeds the 512000 limit"
)


@pytest.mark.parametrize(
    ("code", "reason", "create", "kind"),
    [
        (400, "BadRequest", True, aggregation.INVALID),  # OCM's webhook over 500 KiB
        (413, "RequestEntityTooLarge", True, aggregation.INVALID),  # a body over 3 MiB
        (422, "Invalid", False, aggregation.INVALID),
        (403, "Forbidden", True, aggregation.FORBIDDEN),
        (404, "NotFound", True, aggregation.NAMESPACE_NOT_FOUND),
        (500, "", True, aggregation.OTHER),  # etcd's "request is too large"
        (503, "ServiceUnavailable", False, aggregation.OTHER),
    ],
)
def test_each_answer_maps_to_a_reason(code: int, reason: str, create: bool, kind: str) -> None:
    body = b'{"kind":"Status","message":"m","reason":"%s","code":%d}' % (reason.encode(), code)
    error = error_from(code, "Some Phrase", body)
    assert _failure_kind(error, create) == kind


def failing(message: str, clusters: tuple[str, ...] = ("c1", "c2")) -> DeployOutcome:
    outcome = DeployOutcome()
    outcome.ref("p").failures += [WriteFailure(c, "p", aggregation.INVALID, message) for c in clusters]
    return outcome


def test_a_failure_is_told_as_a_warning_with_the_conditions_reason_and_message() -> None:
    outcome = failing(DENIED)
    (event,), told = write_failure_events(outcome, frozenset())
    assert (event.reason, event.type) == ("ManifestWorkInvalid", "Warning")
    assert event.message == aggregation.failure_message(outcome.failures())
    assert "c1, c2" in event.message and DENIED in event.message
    assert told == frozenset({event.message})


def test_the_same_failure_on_a_retry_is_not_told_again_but_a_new_one_is() -> None:
    _, told = write_failure_events(failing(DENIED), frozenset())
    assert write_failure_events(failing(DENIED), told)[0] == []
    (event,), _ = write_failure_events(failing(DENIED, ("c1", "c2", "c3")), told)
    assert "c3" in event.message


def test_once_writes_succeed_the_memory_is_cleared() -> None:
    _, told = write_failure_events(failing(DENIED), frozenset())
    found, told = write_failure_events(DeployOutcome(), told)
    assert found == [] and told == frozenset()
    assert len(write_failure_events(failing(DENIED), told)[0]) == 1
