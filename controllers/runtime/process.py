"""Settings of a controller process as a whole, made once by whoever owns the process.

``tune_collector`` sets the cyclic garbage collector's thresholds for a controller process, as
Go's controllers are tuned with GOGC. A controller holds a fleet of cached JSON objects and a
pass over 10,000 add-ons allocates tens of thousands of containers; with CPython's defaults
(a young collection every 700 allocations, full ones as often as the old generation grows by a
quarter) a single add-on planning pass spent a third of its time collecting (bench/addon.py,
core (i): 415 ms against 300 ms). The thresholds here keep that within a few per cent. Nothing
turns the collector off, and nothing changes it while passes run: ``ocm-rollout run`` calls this
once at start-up (and the core benchmark does, to measure what the controller runs).
"""

from __future__ import annotations

import gc

# Young collections every 100,000 allocations; the middle and old generations as CPython does
# relative to it. Cycles (rare in JSON data, which reference counting frees) wait a bit longer.
COLLECTOR_THRESHOLDS = (100_000, 50, 100)


def tune_collector() -> None:
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
