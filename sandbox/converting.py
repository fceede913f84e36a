"""The server's side of conversion webhooks: running an engine operation until every conversion
it needs is known, and converting lists and watch events (see ``conversion``).

Only a CRD with ``spec.conversion.strategy: Webhook`` read or written in a version other than
its storage version comes here; everything else calls the engine directly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, TypeVar

from ocm_rollout.sandbox import errors
from ocm_rollout.sandbox.conversion import MissingConversion
from ocm_rollout.sandbox.engine import STORED_RESULTS, Engine, ListResult
from ocm_rollout.sandbox.resources import ResourceType
from ocm_rollout.sandbox.store import Event

T = TypeVar("T")

# An operation needs at most: the stored object in the request's version, the new object in the
# storage version; a write racing it may need both again.
MAX_ROUNDS = 8


def needs_webhook(rt: ResourceType, version: str) -> bool:
    return rt.webhook is not None and version != rt.storage_version


async def run(engine: Engine, rt: ResourceType, version: str, op: Callable[[], T]) -> T:
    """``op()`` (an engine operation in ``version``), its missing conversions asked of the
    webhook and the operation run again until none is missing; what it returns is converted
    to ``version`` by the webhook (a result is an object, ``(object, flag)`` or a list)."""
    if not needs_webhook(rt, version):
        return op()
    assert rt.webhook is not None
    for _ in range(MAX_ROUNDS):
        token = STORED_RESULTS.set(True)
        try:
            result = op()
        except MissingConversion as missing:
            await engine.converter.fill(rt.webhook, missing.objects, missing.api_version)
            continue
        finally:
            STORED_RESULTS.reset(token)
        return await _converted_result(engine, rt, version, result)
    raise errors.internal(f"{rt.plural}.{rt.group}: the object kept changing while it was converted; try again")


async def _converted_result(engine: Engine, rt: ResourceType, version: str, result: Any) -> Any:
    assert rt.webhook is not None
    api_version = rt.api_version(version)
    if isinstance(result, dict):
        return (await engine.converter.convert(rt.webhook, [result], api_version))[0]
    if isinstance(result, tuple):
        first, *rest = result
        return ((await engine.converter.convert(rt.webhook, [first], api_version))[0], *rest)
    if isinstance(result, list):
        return await engine.converter.convert(rt.webhook, result, api_version) if result else result
    return result


async def list_objects(engine: Engine, rt: ResourceType, version: str, op: Callable[[str], ListResult]) -> ListResult:
    """``op(version)`` lists; through the webhook, it lists as stored and one review converts
    the page."""
    if not needs_webhook(rt, version):
        return op(version)
    assert rt.webhook is not None
    result = op(rt.storage_version)
    if not result.items:
        return result
    items = await engine.converter.convert(rt.webhook, result.items, rt.api_version(version))
    return replace(result, items=items)


async def prefill_events(engine: Engine, rt: ResourceType, version: str, items: Iterable[tuple[str, Any]]) -> None:
    """Have the webhook convert the objects of these watch events (one review), so that the
    synchronous encoder finds them."""
    if not needs_webhook(rt, version):
        return
    assert rt.webhook is not None
    objects = [payload.obj for kind, payload in items if isinstance(payload, Event)]
    if objects:
        await engine.converter.fill(rt.webhook, objects, rt.api_version(version))
