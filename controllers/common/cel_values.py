"""celpy values: plain JSON data in, celpy values out (``to_cel``), and CEL numbers compared by
value across ``int`` / ``uint`` / ``double``.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from celpy import celtypes


def to_cel(value: Any, *, numbers_as_double: bool = False) -> Any:
    """Convert plain JSON data to celpy values."""
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        return celtypes.DoubleType(value) if numbers_as_double else celtypes.IntType(value)
    if isinstance(value, float):
        return celtypes.DoubleType(value)
    if isinstance(value, str):
        return celtypes.StringType(value)
    if isinstance(value, Mapping):
        return celtypes.MapType(
            {celtypes.StringType(str(k)): to_cel(v, numbers_as_double=numbers_as_double) for k, v in value.items()}
        )
    if isinstance(value, list | tuple):
        return celtypes.ListType([to_cel(v, numbers_as_double=numbers_as_double) for v in value])
    return None


def is_number(value: Any) -> bool:
    """Whether ``value`` is a CEL ``int``, ``uint`` or ``double`` (not a ``bool``)."""
    return isinstance(value, celtypes.IntType | celtypes.UintType | celtypes.DoubleType) and not isinstance(
        value, celtypes.BoolType
    )


def plain_number(value: Any) -> int | float:
    """A CEL number as the Python number it stands for, to compare across CEL's number types."""
    return float(value) if isinstance(value, celtypes.DoubleType) else int(value)
