"""A timed recheck further away than OCM's informer resync is looked at after one resync period,
not forgotten (controllers.common.requeue): a progressDeadline of an hour on a cluster that
never reports again still times out, as it does in OCM, whose resync re-reconciles everything."""

from __future__ import annotations

import pytest

from ocm_rollout.controllers.addon import operator as addon_operator
from ocm_rollout.controllers.common.requeue import next_look
from ocm_rollout.controllers.workset import operator as workset_operator


@pytest.mark.parametrize(
    ("recheck", "resync", "expected"),
    [
        (None, 1800, None),  # nothing timed: the next change wakes the object
        (5.0, 1800, 5.0),  # a soak ending soon: at its end
        (1799.0, 1800, 1799.0),
        (3600.0, 1800, 1800),  # an hour's deadline: after one resync period, then again
        (1140.0, 600, 600),
        (-2.0, 600, 0.0),  # already due: at once
    ],
)
def test_next_look(recheck: float | None, resync: float, expected: float | None) -> None:
    assert next_look(recheck, resync) == expected


def test_the_resync_periods_are_ocms() -> None:
    assert workset_operator.RESYNC_SECONDS == 30 * 60  # ManifestWorkReplicaSet informers
    assert addon_operator.RESYNC_SECONDS == 10 * 60  # add-on informers
