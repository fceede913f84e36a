"""Reading wire objects fast, for the dashboard's views that run once per cluster and per work:
``as_mapping`` and ``mappings_in`` (``controllers/common/wire.py``) with a fast path for the plain
dicts and lists that JSON decodes to."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ocm_rollout.controllers.common.wire import as_mapping


def obj(value: Any) -> Mapping[str, Any]:
    """``value`` when it is an object, else an empty one."""
    return value if type(value) is dict else as_mapping(value)


def objs(value: Any) -> list[Mapping[str, Any]]:
    """The items of a list that are objects (none when ``value`` is not a list)."""
    if type(value) is not list:
        return []
    return [item for item in value if type(item) is dict or isinstance(item, Mapping)]
