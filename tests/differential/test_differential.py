"""The local hub measured against kube-apiserver: each scripted request sequence
(tests/differential/seq_*.py) is sent to a fresh local hub and a fresh kube-apiserver with the
same CRDs and users, and the normalised answers compared (status, Status reason, message and
causes, body, the headers clients read, watch events). A difference fails the test unless
``expected.EXPECTED`` lists the sequence with its reason; a listed sequence that no longer
differs fails too (take it off the list). Sequences in ``expected.NOT_YET_FIXED`` differ in ways
the local hub is still to be fixed for: expected failures (pytest's ``x``), counted as unexplained
by the report, which names those that match again (take them off). ``bench/hub_diff.py`` prints
the report by area."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.differential.engine import Sequence, compare
from tests.differential.expected import EXPECTED, NOT_YET_FIXED
from tests.differential.suite import Hubs, all_sequences
from tests.hub_kinds import KUBE_APISERVER, skip_unless_built

SEQUENCES = all_sequences()


@pytest.fixture(scope="module")
def hubs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hubs]:
    skip_unless_built(KUBE_APISERVER)
    both = Hubs(tmp_path_factory.mktemp("differential"))
    try:
        yield both
    finally:
        both.stop()


def test_the_suite_has_enough_sequences_and_few_expected_differences() -> None:
    assert len(SEQUENCES) >= 200
    assert len(EXPECTED) <= 15
    names = {s.name for s in SEQUENCES}
    assert set(EXPECTED) <= names, f"EXPECTED names sequences that do not exist: {sorted(set(EXPECTED) - names)}"
    assert NOT_YET_FIXED <= names, f"NOT_YET_FIXED names sequences that do not exist: {sorted(NOT_YET_FIXED - names)}"
    assert not NOT_YET_FIXED & set(EXPECTED), "a sequence is either explained or not yet fixed"


@pytest.mark.parametrize("sequence", SEQUENCES, ids=[s.name for s in SEQUENCES])
def test_the_local_hub_answers_as_kube_apiserver(hubs: Hubs, sequence: Sequence) -> None:
    local, kube = hubs.run(sequence)
    differences = compare(local, kube)
    if sequence.name in EXPECTED:
        assert differences, f"{sequence.name} no longer differs: take it off EXPECTED ({EXPECTED[sequence.name]})"
        return
    report = f"{sequence.area}/{sequence.name}:\n" + "\n".join(differences)
    if sequence.name in NOT_YET_FIXED and differences:
        pytest.xfail(f"not yet fixed in the local hub: {report[:2000]}")
    assert differences == [], report
