"""How often the ``kubernetes`` client refreshes its credentials.

The official client calls its configuration's ``refresh_api_key_hook`` before every request.
The hook a kubeconfig installs reloads an expired token (exec plugins, auth providers) and,
expired or not, sets the bearer token, the host and the TLS settings on the configuration again:
setting the host reads every proxy variable of the environment. At the rate a simulated fleet
or a controller sends requests, that alone is about a tenth of the client's CPU.

``throttled`` runs the hook at most once per ``every`` seconds. Tokens are refreshed well before
they expire (the client renews them five minutes ahead), so a refresh at most a second late
changes nothing a server sees.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

REFRESH_EVERY_SECONDS = 1.0

Hook = Callable[[Any], None]


def throttled(hook: Hook, every: float = REFRESH_EVERY_SECONDS, clock: Callable[[], float] = time.monotonic) -> Hook:
    """``hook``, run at most once per ``every`` seconds (the first call always runs it).

    A kubeconfig's hook installs itself on the configuration again each time it runs (a fresh
    closure, the same work). The throttled hook takes that one as its own and puts itself back,
    so that it stays throttled after its first run."""
    lock = threading.Lock()
    last: list[float | None] = [None]
    inner: list[Hook] = [hook]

    def refresh(configuration: Any) -> None:
        now = clock()
        with lock:
            ran = last[0]
            if ran is not None and now - ran < every:
                return
            last[0] = now
        inner[0](configuration)
        installed = getattr(configuration, "refresh_api_key_hook", None)
        if installed is not None and installed is not refresh:
            inner[0] = installed
            configuration.refresh_api_key_hook = refresh

    return refresh


def throttle_refresh(configuration: Any) -> None:
    """Throttle the refresh hook a configuration loader installed, if any."""
    hook = getattr(configuration, "refresh_api_key_hook", None)
    if hook is not None:
        configuration.refresh_api_key_hook = throttled(hook)
