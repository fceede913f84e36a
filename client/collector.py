"""The cyclic garbage collector's thresholds for our long-running processes, set once by whoever
owns the process (as Go's are tuned with GOGC).

Each of them holds a fleet of JSON objects and allocates many more per request or pass: the
controllers (their caches; a pass over 10,000 add-ons allocates tens of thousands of
containers), the local hub (every stored object, 720 MB at 10,000 clusters and works), the
simulated agents and the dashboard (their caches). With CPython's defaults (a young collection
every 700 allocations, a full one each time the old generation grew by a quarter):

- a single add-on planning pass spent a third of its time collecting (bench/addon.py, core (i):
  415 ms against 300 ms);
- the local hub stopped for a second or more at a time during a 10,000-cluster rollout, each
  full collection walking every stored object while every client waited; with these thresholds
  the rollout took 49 s instead of 56-59 s (bench/scale.py) and the hub 27 s of CPU instead of
  31-35 s.

The thresholds here keep collecting within a few per cent. Nothing turns the collector off, and
nothing changes it while the process works: ``ocm-rollout run``, ``up``, ``dashboard``, the hub's
and the agents' own entry points call ``tune_collector`` once at start-up (and the benchmarks do,
to measure what these processes run).
"""

from __future__ import annotations

import gc

# Young collections every 100,000 allocations; the middle and old generations as CPython does
# relative to it. Cycles (rare in JSON data, which reference counting frees) wait a bit longer.
COLLECTOR_THRESHOLDS = (100_000, 50, 100)


def tune_collector() -> None:
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
