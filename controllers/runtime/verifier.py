"""What a controller keeps between passes to run verified rollouts (docs/behaviour/validation.md),
for the controllers that validate clusters:

- ``compiled(strategy)``: a strategy's compiled checks, or why they do not compile (compiled once
  per distinct ``validation``);
- ``plugin_loaded(plugin, owner, now)``: the plugin's PluginLoaded condition (Initialize runs in
  the background; a failure is tried again after ``PLUGIN_RELOAD``);
- ``feedback(key, version, compiled, variables)``: the feedback checks' verdicts, evaluated once per
  version of what they read (a CEL evaluation is the costliest part of judging a cluster);
- ``calls``: the metric measurements (``measure``) and plugin calls running in the background
  (``BackgroundCalls``: a pass never awaits one, and its end queues the owner again);
- the pacing of the plugin's calls (``may_ask``: at most every ``PLUGIN_POLL`` per key), the
  errors of their last attempts (``last_error``) and the BeginRollout answers (``begun``).

Nothing here is persisted: a pass writes what it learns on the workload (the validation record).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from typing import Any, Final

from ocm_rollout.controllers.rollout.checks import CompiledChecks, InvalidChecks, compile_checks
from ocm_rollout.controllers.rollout.checks.feedback import FeedbackVerdict
from ocm_rollout.controllers.rollout.checks.metric import Measurement, MetricSettings
from ocm_rollout.controllers.rollout.plugin.conditions import REASON_AVAILABLE, ConditionValue, not_registered
from ocm_rollout.controllers.rollout.plugin.loader import PluginClients
from ocm_rollout.controllers.rollout.verification import feedback_verdicts
from ocm_rollout.controllers.runtime.background import BackgroundCalls

#: How often a Validating cluster's plugin is asked again while it answers INPROGRESS (or fails).
PLUGIN_POLL: Final = timedelta(seconds=5)
#: How often an unavailable plugin's Initialize is tried again.
PLUGIN_RELOAD: Final = timedelta(seconds=10)
#: Workloads whose feedback verdicts are kept, and validations kept compiled (the oldest go first).
MAX_FEEDBACK: Final = 50_000
MAX_COMPILED: Final = 256

#: One measurement of a metric check: (settings, cluster, name, namespace) -> its Measurement.
Measure = Callable[[MetricSettings, str, str, str], Awaitable[Measurement]]
CallKey = tuple[str, ...]


def _signature(compiled: CompiledChecks | None) -> str:
    """The feedback checks as written (what their verdicts on one workload depend on)."""
    written = [
        (c.name, c.success.source if c.success else None, c.failure.source if c.failure else None)
        for c in (compiled.feedback if compiled is not None else ())
    ]
    return json.dumps(written)


class Verifier:
    """One controller's verified-rollout state (see the module docstring); ``requeue(owner)`` is
    called when a background call of ``owner`` ends."""

    def __init__(self, plugins: PluginClients, measure: Measure, requeue: Callable[[Any], None]) -> None:
        self.plugins = plugins
        self.measure = measure
        self.calls: BackgroundCalls[Any] = BackgroundCalls(requeue)
        # The plugin's calls by key (the owner's key first): their last error, when each was
        # last asked, and the BeginRollout calls answered OK (in answer order).
        self.plugin_errors: dict[CallKey, str] = {}
        self.begun: dict[CallKey, None] = {}
        self._asked: dict[CallKey, datetime] = {}
        self._checks: dict[str, CompiledChecks | InvalidChecks] = {}
        self._loaded: dict[str, tuple[ConditionValue, datetime]] = {}
        self._verdicts: dict[tuple[str, str], tuple[str, dict[str, FeedbackVerdict]]] = {}

    # -- checks -------------------------------------------------------------------------------------
    def compiled(self, strategy: Mapping[str, Any]) -> CompiledChecks | InvalidChecks | None:
        """The compiled ``validation`` of ``strategy`` (None without one), or why it does not compile."""
        raw = strategy.get("validation")
        if raw is None:
            return None
        text = json.dumps(raw, sort_keys=True)
        if text not in self._checks:
            try:
                result: CompiledChecks | InvalidChecks | None = compile_checks(strategy)
            except InvalidChecks as exc:
                result = exc
            if len(self._checks) >= MAX_COMPILED:
                self._checks.clear()
            assert result is not None
            self._checks[text] = result
        return self._checks[text]

    def feedback(
        self, key: str, version: str, compiled: CompiledChecks | None, variables: Callable[[], Mapping[str, Any]]
    ) -> dict[str, FeedbackVerdict]:
        """The feedback checks' verdicts on the workload ``key`` at ``version`` (``variables()``
        is called only when that version was not judged yet)."""
        slot = (key, _signature(compiled))
        known = self._verdicts.get(slot)
        if known is None or known[0] != version:
            known = (version, feedback_verdicts(compiled, variables()))
            self._verdicts.pop(slot, None)
            self._verdicts[slot] = known
            while len(self._verdicts) > MAX_FEEDBACK:
                del self._verdicts[next(iter(self._verdicts))]
        return known[1]

    # -- the plugin ---------------------------------------------------------------------------------
    def plugin_loaded(self, plugin: str, owner: str, now: datetime) -> ConditionValue | None:
        """The PluginLoaded condition of ``plugin``: None until Initialize first answered."""
        client = self.plugins.client(plugin)
        if client is None:
            return not_registered(plugin, self.plugins.registry.source)
        key = ("initialize", plugin)
        done = self.calls.take(key)
        if done is not None and isinstance(done.value, ConditionValue):
            self._loaded[plugin] = (done.value, now)
        known = self._loaded.get(plugin)
        if known is None or (known[0].reason != REASON_AVAILABLE and now - known[1] >= PLUGIN_RELOAD):
            self.calls.start(key, owner, client.load)
        return None if known is None else known[0]

    def may_ask(self, key: CallKey, now: datetime) -> bool:
        """Whether the plugin may be asked ``key`` now (at most every ``PLUGIN_POLL``); if so, the
        asking is recorded."""
        last = self._asked.get(key)
        if last is not None and now < last + PLUGIN_POLL:
            return False
        self._asked[key] = now
        return True

    def next_ask(self, key: CallKey) -> datetime | None:
        last = self._asked.get(key)
        return last + PLUGIN_POLL if last is not None else None

    def last_error(self, key: CallKey) -> tuple[bool, str]:
        """Take the call of ``key`` that ended: whether it answered OK now, and the error of the
        last call that failed ("" once one answered OK)."""
        done = self.calls.take(key)
        if done is not None and done.ok:
            self.plugin_errors.pop(key, None)
        elif done is not None:
            self.plugin_errors[key] = str(done.error)
        return done is not None and done.ok, self.plugin_errors.get(key, "")

    def remember_begun(self, key: CallKey, limit: int) -> None:
        self.begun[key] = None
        while len(self.begun) > limit:
            del self.begun[next(iter(self.begun))]

    # -- the owner's and the controller's end -------------------------------------------------------
    def forget(self, owner: str) -> None:
        """Drop everything of ``owner`` (it is gone): its calls (keys start with the owner's) and
        what it waited for."""
        self.calls.forget(owner, lambda key: isinstance(key, tuple) and bool(key) and key[0] == owner)
        for memo in (self.plugin_errors, self.begun, self._asked):
            for key in [k for k in memo if k and k[0] == owner]:
                del memo[key]

    def stop(self) -> None:
        """Cancel the calls in flight and close the plugin clients (the controller stops)."""
        self.calls.cancel_all()
        with contextlib.suppress(RuntimeError):  # no loop running: nothing was ever opened
            asyncio.get_running_loop().create_task(self.plugins.close())
