"""The differential report: every sequence of tests/differential sent to a fresh local hub and a
fresh kube-apiserver (``make kube-hub`` builds it), the answers compared, and per area how many
sequences ran and how many differ. Ends with ``hub diff: N sequences, K unexplained differences``
(a difference is explained when tests/differential/expected.py lists the sequence in EXPECTED,
with a reason; those in NOT_YET_FIXED are still to be fixed, so unexplained).

    .venv/bin/python -m bench.hub_diff             # the report
    .venv/bin/python -m bench.hub_diff -v          # and every difference, line by line
    .venv/bin/python -m bench.hub_diff -k watch    # only the sequences whose name contains "watch"
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from ocm_rollout.sandbox.kube_hub import MissingBinaries, find_binaries
from tests.differential.engine import compare
from tests.differential.expected import EXPECTED, NOT_YET_FIXED
from tests.differential.suite import Hubs, all_sequences


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="print every difference")
    parser.add_argument("-k", dest="keyword", default="", help="only sequences whose name contains this (or one of a comma-separated list)")
    args = parser.parse_args(argv)
    try:
        find_binaries()
    except MissingBinaries as exc:
        print(f"hub diff: {exc}", file=sys.stderr)
        return 2
    keywords = [k for k in args.keyword.split(",") if k] or [""]
    sequences = [s for s in all_sequences() if any(k in s.name for k in keywords)]
    ran: dict[str, int] = defaultdict(int)
    differ: dict[str, int] = defaultdict(int)
    unexplained: list[str] = []
    with tempfile.TemporaryDirectory(prefix="hub-diff-") as directory:
        hubs = Hubs(Path(directory))
        try:
            for sequence in sequences:
                local, kube = hubs.run(sequence)
                lines = compare(local, kube)
                ran[sequence.area] += 1
                if not lines:
                    if sequence.name in NOT_YET_FIXED:
                        print(f"{sequence.area}/{sequence.name}: matches now: take it off NOT_YET_FIXED")
                    continue
                differ[sequence.area] += 1
                explained = sequence.name in EXPECTED
                if not explained:
                    unexplained.append(sequence.name)
                if args.verbose or not (explained or sequence.name in NOT_YET_FIXED):
                    print(f"{sequence.area}/{sequence.name}: {'expected: ' + EXPECTED[sequence.name] if explained else 'DIFFERS'}")
                    for line in lines if args.verbose else lines[:5]:
                        print(f"    {line}")
        finally:
            hubs.stop()
    print()
    print(f"{'area':<16}{'sequences':>10}{'differ':>8}")
    for area in sorted(ran):
        print(f"{area:<16}{ran[area]:>10}{differ[area]:>8}")
    print(f"hub diff: {sum(ran.values())} sequences, {len(unexplained)} unexplained differences")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
