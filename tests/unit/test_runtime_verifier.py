"""What a controller keeps between passes for verified rollouts (controllers/runtime/verifier.py) and
what one pass's verify step finds (controllers/rollout/verification_pass.py)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from ocm_rollout.controllers.rollout.checks import CompiledChecks, InvalidChecks
from ocm_rollout.controllers.rollout.checks.metric import Measurement, MetricSettings
from ocm_rollout.controllers.rollout.checks.phase import Phase
from ocm_rollout.controllers.rollout.plugin.client import PluginClient
from ocm_rollout.controllers.rollout.plugin.conditions import ConditionValue, plugin_loaded
from ocm_rollout.controllers.rollout.plugin.config import PluginConfig, PluginRegistry
from ocm_rollout.controllers.rollout.plugin.loader import PluginClients
from ocm_rollout.controllers.rollout.verification_pass import (
    PassVerification,
    ValidationFailure,
    validation_failed_events,
)
from ocm_rollout.controllers.runtime.verifier import PLUGIN_POLL, PLUGIN_RELOAD, Verifier

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
READY = {"validation": {"checks": [{"name": "ready", "feedback": {"successCondition": 'cluster == "c1"'}}]}}


async def _never(_settings: MetricSettings, _cluster: str, _name: str, _namespace: str) -> Measurement:
    return Measurement(Phase.SUCCESSFUL, NOW, NOW, "[0]")


class FakeClient:
    """A plugin client whose Initialize answers ``answers`` in turn."""

    def __init__(self, answers: list[ConditionValue]) -> None:
        self.answers = answers
        self.loads = 0

    async def load(self) -> ConditionValue:
        self.loads += 1
        return self.answers[min(self.loads, len(self.answers)) - 1]

    async def close(self) -> None:
        return None


def verifier(client: FakeClient | None = None, requeued: list[Any] | None = None) -> Verifier:
    registry = PluginRegistry({"smoke": PluginConfig(name="smoke", endpoint="127.0.0.1:1", target="127.0.0.1:1")}, "config.yaml")
    clients = PluginClients(registry, lambda _config: cast(PluginClient, client))
    return Verifier(clients, _never, (requeued if requeued is not None else []).append)


def test_checks_compile_once_per_validation_and_errors_are_kept() -> None:
    found = verifier()
    compiled = found.compiled(READY)
    assert isinstance(compiled, CompiledChecks) and found.compiled(dict(READY)) is compiled
    broken = found.compiled({"validation": {"checks": [{"name": "x", "feedback": {"successCondition": "feedback["}}]}})
    assert isinstance(broken, InvalidChecks) and "check 'x': feedback.successCondition does not compile" in str(broken)
    assert found.compiled({"type": "All"}) is None


def test_feedback_verdicts_are_evaluated_once_per_version() -> None:
    found = verifier()
    compiled = found.compiled(READY)
    assert isinstance(compiled, CompiledChecks)
    calls: list[str] = []

    def variables(cluster: str) -> dict[str, Any]:
        calls.append(cluster)
        return {"feedback": {}, "manifests": [], "conditions": {}, "cluster": cluster}

    first = found.feedback("uid-1", "v1", compiled, lambda: variables("c1"))
    assert first["ready"].phase is Phase.SUCCESSFUL
    assert found.feedback("uid-1", "v1", compiled, lambda: variables("c2")) is first
    again = found.feedback("uid-1", "v2", compiled, lambda: variables("c2"))
    assert again["ready"].phase is not Phase.SUCCESSFUL and calls == ["c1", "c2"]


def test_plugin_loaded_initializes_in_the_background_and_retries_a_failure() -> None:
    failing = plugin_loaded("smoke", "Initialize fails: UNAVAILABLE")
    client = FakeClient([failing, plugin_loaded("smoke", None)])
    requeued: list[Any] = []

    async def scenario() -> list[ConditionValue | None]:
        found = verifier(client, requeued)
        seen = [found.plugin_loaded("smoke", "owner", NOW)]
        await asyncio.sleep(0.01)
        seen.append(found.plugin_loaded("smoke", "owner", NOW))
        seen.append(found.plugin_loaded("smoke", "owner", NOW + PLUGIN_RELOAD / 2))  # not again yet
        seen.append(found.plugin_loaded("smoke", "owner", NOW + PLUGIN_RELOAD))  # again: in flight
        await asyncio.sleep(0.01)
        seen.append(found.plugin_loaded("smoke", "owner", NOW + PLUGIN_RELOAD))
        seen.append(found.plugin_loaded("nope", "owner", NOW))
        return seen

    seen = asyncio.run(scenario())
    assert seen[0] is None and seen[1] == seen[2] == seen[3] == failing
    assert seen[4] == plugin_loaded("smoke", None) and client.loads == 2 and requeued == ["owner", "owner"]
    assert seen[5] is not None and seen[5].message == "plugin 'nope' is not registered in config.yaml (work-controller-config plugins)"


def test_the_plugin_is_asked_at_most_every_poll_and_errors_are_kept_until_an_answer() -> None:
    async def scenario() -> list[Any]:
        found = verifier()
        key = ("owner", "begin", "c1")
        out: list[Any] = [found.may_ask(key, NOW), found.may_ask(key, NOW + PLUGIN_POLL / 2), found.next_ask(key)]

        async def fail() -> None:
            raise RuntimeError("UNAVAILABLE")

        found.calls.start(key, "owner", fail)
        await asyncio.sleep(0.01)
        out.append(found.last_error(key))
        out.append(found.last_error(key))  # kept while nothing answers

        async def ok() -> None:
            return None

        found.calls.start(key, "owner", ok)
        await asyncio.sleep(0.01)
        out.append(found.last_error(key))
        found.remember_begun(key, 1)
        found.remember_begun(("other", "begin", "c2"), 1)
        out.append(list(found.begun))
        found.forget("other")
        out.append(list(found.begun))
        return out

    asked, early, next_at, failed, still, answered, begun, forgotten = asyncio.run(scenario())
    assert (asked, early, next_at) == (True, False, NOW + PLUGIN_POLL)
    assert failed == still == (False, "UNAVAILABLE") and answered == (True, "")
    assert begun == [("other", "begin", "c2")] and forgotten == []


def test_a_pass_collects_findings_and_the_earliest_moment_due() -> None:
    found = PassVerification()
    found.due_at(None)
    found.due_at(NOW + timedelta(seconds=5))
    found.due_at(NOW + timedelta(seconds=2))
    found.due_at(NOW + timedelta(seconds=9))
    assert found.next_at == NOW + timedelta(seconds=2)
    placement = found.of("ns/p", "smoke")
    assert found.of("ns/p") is placement and placement.plugin == "smoke"
    [event] = validation_failed_events([ValidationFailure("ns/p", "c1", "check 'ready' Failed: x")])
    assert (event.reason, event.type, event.message) == (
        "ValidationFailed", "Warning", "placement ns/p: cluster c1 failed validation: check 'ready' Failed: x"
    )
