"""The ``PluginLoaded`` condition of a ManifestWorkReplicaSet that names a plugin (OCM enhancement
231): reason ``Available`` (True, "<name> plugin is available.") once Initialize answered, else
``Failed`` (False) with the error. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from ocm_rollout.controllers.common.conditions import set_status_condition

PLUGIN_LOADED: Final = "PluginLoaded"
REASON_AVAILABLE: Final = "Available"
REASON_FAILED: Final = "Failed"


@dataclass(frozen=True)
class ConditionValue:
    type: str
    status: str
    reason: str
    message: str


def plugin_loaded(name: str, error: str | None) -> ConditionValue:
    """The condition for plugin ``name`` after loading it: ``error`` is None when Initialize
    succeeded, else what went wrong (the client's error text, or "not registered")."""
    if error is None:
        return ConditionValue(PLUGIN_LOADED, "True", REASON_AVAILABLE, f"{name} plugin is available.")
    return ConditionValue(PLUGIN_LOADED, "False", REASON_FAILED, error)


def not_registered(name: str, source: str | None) -> ConditionValue:
    """The condition when the MWRS names a plugin the configuration does not register."""
    where = f" in {source}" if source else ""
    return plugin_loaded(name, f"plugin {name!r} is not registered{where} (work-controller-config plugins)")


def set_plugin_loaded(
    conditions: list[Any], value: ConditionValue, now: datetime | str, observed_generation: int = 0
) -> bool:
    """Put ``value`` into a status ``conditions`` list (wire form); True if anything changed."""
    return set_status_condition(
        conditions, value.type, value.status, value.reason, value.message, now, observed_generation
    )
