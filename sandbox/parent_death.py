"""Children that end with the process that started them (Linux ``PR_SET_PDEATHSIG``).

``parent_death_hook()`` is a ``preexec_fn`` for ``subprocess``/``asyncio`` that asks the kernel to
send the child SIGTERM when its parent dies, so that no simulated agent, controller or control
plane process outlives a killed ``ocm-rollout up`` or test. The kernel counts the *thread* that
started the child as its parent: start such children from a thread that lives as long as they
should (the main thread). None elsewhere than Linux.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def parent_death_hook() -> Callable[[], None] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    except OSError:
        return None
    prctl = libc.prctl

    def hook() -> None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)

    return hook
