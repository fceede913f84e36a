"""Decoding a rollout strategy from its API form (docs/behaviour/rollout.md sections 2 and 3).

Order of checks: ``type`` (with ``rolloutType``, its older spelling: read as ``type`` when
``type`` is unset, and when both are set they must agree); then the JSON shapes of the fields of
the chosen body (including minSuccessTime, which Go parses while decoding); then progressDeadline;
then maxFailures (Progressive and ProgressivePerGroup only). maxConcurrency is checked only for its
shape here; its value is validated by the planner when it reaches the non-mandatory phase.

A strategy with neither ``type`` nor ``rolloutType`` is ``absent_type``: All for a
``rolloutStrategy`` read from an API object (what OCM's CRD defaulting of ``type`` gives; our CRD
no longer defaults ``type``, see ocm_rollout.api.cluster_v1alpha1.RolloutStrategy), an error naming ``type``
for the input of ``ocm-rollout plan`` (docs/behaviour/rollout.md section 2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ocm_rollout.controllers.rollout.goparse import (
    GoSyntaxError,
    Threshold,
    check_threshold,
    parse_min_success_time,
    parse_progress_deadline,
)
from ocm_rollout.controllers.rollout.model import (
    BODY_FIELDS,
    BODY_KEY,
    MandatoryGroupRef,
    RolloutStrategy,
    RolloutStrategyError,
    RolloutType,
)

#: The older spelling of ``type`` in a rolloutStrategy (OCM's documentation still uses it).
LEGACY_TYPE_KEY = "rolloutType"

_INT32_MIN = -(1 << 31)
_INT32_MAX = (1 << 31) - 1
_TYPES = ", ".join(t.value for t in RolloutType)
_TYPE_VALUES = frozenset(t.value for t in RolloutType)


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number with a fraction"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


def is_int32(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and _INT32_MIN <= value <= _INT32_MAX


def _optional_string(body: Mapping[str, Any], name: str, path: str) -> str | None:
    value = body.get(name)
    if value is None or isinstance(value, str):
        return value
    raise RolloutStrategyError(f"{path}.{name}", f"must be a string, not {_describe(value)}")


def _threshold_shape(body: Mapping[str, Any], name: str, path: str) -> Threshold:
    value = body.get(name)
    if value is None:
        return 0
    if isinstance(value, str) or is_int32(value):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        raise RolloutStrategyError(f"{path}.{name}", f"{value} is out of the 32-bit integer range")
    raise RolloutStrategyError(
        f"{path}.{name}", f'must be an integer or a percentage string such as "25%", not {_describe(value)}'
    )


def _mandatory_groups(body: Mapping[str, Any], path: str) -> tuple[MandatoryGroupRef, ...]:
    name = "mandatoryDecisionGroups"
    items = body.get(name)
    if items is None:
        return ()
    if not isinstance(items, list | tuple):
        raise RolloutStrategyError(f"{path}.{name}", f"must be a list, not {_describe(items)}")
    refs: list[MandatoryGroupRef] = []
    for position, item in enumerate(items):
        item_path = f"{path}.{name}[{position}]"
        if item is None:
            item = {}
        if not isinstance(item, Mapping):
            raise RolloutStrategyError(item_path, f"must be an object, not {_describe(item)}")
        group_name = item.get("groupName")
        if group_name is None:
            group_name = ""
        elif not isinstance(group_name, str):
            raise RolloutStrategyError(
                f"{item_path}.groupName", f"must be a string, not {_describe(group_name)}"
            )
        group_index = item.get("groupIndex")
        if group_index is None:
            group_index = 0
        elif not is_int32(group_index):
            raise RolloutStrategyError(
                f"{item_path}.groupIndex", f"must be a 32-bit integer, not {_describe(group_index)}"
            )
        refs.append(MandatoryGroupRef(group_name=group_name, group_index=group_index))
    return tuple(refs)


def _as_mapping(raw: Any) -> Mapping[str, Any] | None:
    """The dict form of ``raw``: a mapping as is, a pydantic-like model through ``model_dump``."""
    if raw is None or isinstance(raw, Mapping):
        return raw
    dump = getattr(raw, "model_dump", None)
    if callable(dump):
        dumped = dump(mode="json", by_alias=True, exclude_none=True)
        if isinstance(dumped, Mapping):
            return dumped
    return None


def _check_type_value(value: Any, path: str) -> RolloutType:
    if not isinstance(value, str) or value not in _TYPE_VALUES:
        shown = repr(value) if isinstance(value, str) else _describe(value)
        raise RolloutStrategyError(path, f"unknown rollout type {shown} (expected one of {_TYPES})")
    return RolloutType(value)


def _decode_type(data: Mapping[str, Any], field_path: str, absent_type: RolloutType | None) -> RolloutType:
    """``type``; else ``rolloutType`` (the older spelling); else ``absent_type``."""
    type_value = data.get("type")
    legacy = data.get(LEGACY_TYPE_KEY)
    if type_value is not None:
        rollout_type = _check_type_value(type_value, f"{field_path}.type")
        if legacy is not None and legacy != type_value:
            shown = repr(legacy) if isinstance(legacy, str) else _describe(legacy)
            raise RolloutStrategyError(
                f"{field_path}.{LEGACY_TYPE_KEY}",
                f"{shown} disagrees with type {type_value!r}: rolloutType is the older spelling of "
                "type; set only type",
            )
        return rollout_type
    if legacy is not None:
        return _check_type_value(legacy, f"{field_path}.{LEGACY_TYPE_KEY}")
    if absent_type is None:
        raise RolloutStrategyError(f"{field_path}.type", f"is required (one of {_TYPES})")
    return absent_type


def effective_type(raw: Any) -> str | None:
    """The type a raw ``rolloutStrategy`` asks for, not validated: ``type``, else ``rolloutType``
    (its older spelling), else None (neither is set: the caller's default, All for API objects).
    For displays and branching on raw JSON; ``decode_strategy`` is the one that checks."""
    data = _as_mapping(raw)
    if data is None:
        return None
    for key in ("type", LEGACY_TYPE_KEY):
        value = data.get(key)
        if value is not None:
            return str(value)
    return None


def legacy_type_read(raw: Any) -> str | None:
    """The type a raw ``rolloutStrategy`` spells with the older key ``rolloutType``, when that is
    how it is read (a valid type that ``type``, if set, agrees with); None when ``rolloutType``
    is not set or the strategy is invalid (its error is reported instead)."""
    data = _as_mapping(raw)
    if data is None:
        return None
    legacy = data.get(LEGACY_TYPE_KEY)
    if not isinstance(legacy, str) or legacy not in _TYPE_VALUES:
        return None
    current = data.get("type")
    if current is not None and current != legacy:
        return None
    return legacy


def decode_strategy(
    raw: Any, field_path: str = "strategy", *, absent_type: RolloutType | None = RolloutType.ALL
) -> RolloutStrategy:
    """Decode a ``rolloutStrategy`` (a dict as in the API object, or a pydantic-like model with
    ``model_dump``) into a RolloutStrategy. Raises RolloutStrategyError naming the field.

    ``rolloutType`` is read as ``type`` when ``type`` is unset; both set with different values
    is an error naming ``<field_path>.rolloutType``. With neither, the type is ``absent_type``
    (All, as OCM's CRD defaults it), or an error naming ``type`` when ``absent_type`` is None."""
    if isinstance(raw, RolloutStrategy):
        return raw
    data = _as_mapping(raw)
    if data is None:
        raise RolloutStrategyError(field_path, f"must be an object, not {_describe(raw)}")

    rollout_type = _decode_type(data, field_path, absent_type)

    body_key = BODY_KEY[rollout_type]
    path = f"{field_path}.{body_key}"
    raw_body = data.get(body_key)
    if raw_body is None:
        raw_body = {}
    elif not isinstance(raw_body, Mapping):
        raise RolloutStrategyError(path, f"must be an object, not {_describe(raw_body)}")
    fields = BODY_FIELDS[rollout_type]
    body = {name: raw_body[name] for name in fields if name in raw_body}

    # 1. JSON shapes (minSuccessTime is parsed as a Go duration while decoding, as in Go).
    deadline_text = _optional_string(body, "progressDeadline", path)
    soak_text = _optional_string(body, "minSuccessTime", path)
    try:
        min_success_time = parse_min_success_time(soak_text)
    except GoSyntaxError as exc:
        raise RolloutStrategyError(f"{path}.minSuccessTime", str(exc)) from None
    max_failures = _threshold_shape(body, "maxFailures", path)
    max_concurrency: Threshold = 0
    if rollout_type is RolloutType.PROGRESSIVE:
        max_concurrency = _threshold_shape(body, "maxConcurrency", path)
    mandatory: tuple[MandatoryGroupRef, ...] = ()
    if rollout_type is not RolloutType.ALL:
        mandatory = _mandatory_groups(body, path)

    # 2. progressDeadline.
    try:
        deadline = parse_progress_deadline(deadline_text)
    except GoSyntaxError as exc:
        raise RolloutStrategyError(f"{path}.progressDeadline", str(exc)) from None

    # 3. maxFailures (All never uses it, so never checks it).
    if rollout_type is not RolloutType.ALL:
        try:
            check_threshold(max_failures)
        except GoSyntaxError as exc:
            raise RolloutStrategyError(f"{path}.maxFailures", str(exc)) from None

    return RolloutStrategy(
        type=rollout_type,
        body=body,
        progress_deadline_ns=deadline,
        min_success_time_ns=min_success_time,
        max_failures=max_failures,
        max_concurrency=max_concurrency,
        mandatory_decision_groups=mandatory,
        field_path=field_path,
    )


def check_max_concurrency(strategy: RolloutStrategy) -> None:
    """Validate maxConcurrency (done lazily, when a plan reaches the non-mandatory phase)."""
    try:
        check_threshold(strategy.max_concurrency)
    except GoSyntaxError as exc:
        raise RolloutStrategyError(
            f"{strategy.field_path}.{BODY_KEY[strategy.type]}.maxConcurrency", str(exc)
        ) from None
