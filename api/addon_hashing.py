"""Spec hashes of add-on configuration objects (docs/behaviour/addons.md 5.4) and the config-spec-hash map of a
ManagedClusterAddOn (docs/behaviour/addons.md 1).

In: a configuration object as the API server stores it (a JSON dict), or an MCA. Out: the text
Go's ``encoding/json`` would write for the same value once Kubernetes decoded it (``go_json``),
its SHA-256 (``spec_hash``), and the ``open-cluster-management.io/config-spec-hash`` value the
per-addon deployer puts on addon ManifestWorks (``config_spec_hash_annotation``).

Go decodes the stored JSON into ``map[string]interface{}``: whole numbers that fit an int64 stay
integers, every other number becomes a float64; strings are valid UTF-8 (an invalid escape turns
into U+FFFD). ``go_json`` renders Python values as if they had taken that road. Pure.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

# Top-level keys that are not part of a configuration (GetSpecHash skips them).
_NOT_CONFIG = frozenset({"apiVersion", "kind", "metadata", "status"})

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1

# Characters Go's encoder (json.Marshal, HTML escaping on) does not write as themselves.
_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",  # Go >= 1.22 (before: \u0008)
    "\f": "\\f",  # Go >= 1.22 (before: \u000c)
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f<>&\u2028\u2029]')
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _SHORT_ESCAPES.get(char) or f"\\u{ord(char):04x}"


def go_text(text: str) -> str:
    """``text`` as Go holds it after decoding JSON: paired surrogates joined, lone ones U+FFFD."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _go_string(text: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape, go_text(text)) + '"'


def _go_float(value: float) -> str:
    """A float64 as encoding/json writes it: the shortest digits that read back as the same
    number, in plain decimal form unless ``abs < 1e-6`` or ``abs >= 1e21`` (then ``1e-7``,
    ``1.5e+21``)."""
    if not math.isfinite(value):
        raise ValueError(f"json: unsupported value: {value!r}")
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign, digits_tuple, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(str(d) for d in digits_tuple).rstrip("0") or "0"
    exponent += len(digits_tuple) - len(digits)  # trailing zeros removed from the digits
    point = len(digits) + exponent  # the decimal point sits after this many digits
    magnitude = abs(value)
    if magnitude < 1e-6 or magnitude >= 1e21:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        power = point - 1
        text = f"{mantissa}e{'-' if power < 0 else '+'}{abs(power)}"
    elif point <= 0:
        text = "0." + "0" * -point + digits
    elif point >= len(digits):
        text = digits + "0" * (point - len(digits))
    else:
        text = digits[:point] + "." + digits[point:]
    return ("-" if sign else "") + text


def _go_number(value: int | float) -> str:
    if isinstance(value, int):
        if _INT64_MIN <= value <= _INT64_MAX:
            return str(value)
        try:
            return _go_float(float(value))
        except OverflowError as exc:
            raise ValueError(f"json: number {value} does not fit a float64") from exc
    return _go_float(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return go_text(key)
    if isinstance(key, int) and not isinstance(key, bool):
        return str(key)
    raise TypeError(f"json: unsupported map key type {type(key).__name__}")


def _write(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_go_string(value))
    elif isinstance(value, int | float):
        out.append(_go_number(value))
    elif isinstance(value, Mapping):
        # Keys equal once decoded (lone surrogates) collapse: the later one wins, as in Go.
        entries = {_key(k): v for k, v in value.items()}
        items = sorted(entries.items(), key=lambda kv: kv[0])
        out.append("{")
        for index, (key, item) in enumerate(items):
            if index:
                out.append(",")
            out.append(_go_string(key))
            out.append(":")
            _write(item, out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:
        raise TypeError(f"json: unsupported type {type(value).__name__}")


def go_json(value: Any) -> str:
    """``json.Marshal`` of ``value`` (a JSON-shaped Python value) as Go writes it: compact, map
    keys sorted, ``<`` ``>`` ``&`` U+2028 U+2029 and control characters escaped, other text
    raw. Raises ValueError for NaN/infinite numbers (which JSON cannot carry) and TypeError for
    values that are not JSON."""
    out: list[str] = []
    _write(value, out)
    return "".join(out)


def spec_hash(obj: Mapping[str, Any]) -> str:
    """SHA-256 (lower-case hex) of ``obj`` without apiVersion, kind, metadata and status."""
    config = {key: value for key, value in obj.items() if key not in _NOT_CONFIG}
    return hashlib.sha256(go_json(config).encode("utf-8")).hexdigest()


def config_key(group: str, resource: str, namespace: str, name: str) -> str:
    """``<resource>[.<group>]/<namespace>/<name>``: a configuration in the config-spec-hash map."""
    kind = f"{resource}.{group}" if group else resource
    return f"{kind}/{namespace}/{name}"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def config_references(mca: Mapping[str, Any]) -> list[Any]:
    """The MCA's ``status.configReferences`` list as stored (empty when missing or not a list)."""
    status = mca.get("status")
    refs = status.get("configReferences") if isinstance(status, Mapping) else None
    return refs if isinstance(refs, list) else []


def config_spec_hash_map(mca: Mapping[str, Any]) -> dict[str, str]:
    """Config key -> desired spec hash for every ``status.configReferences`` item that has a
    ``desiredConfig`` (items without one are left out; a later item of the same key wins)."""
    result: dict[str, str] = {}
    for ref in config_references(mca):
        if not isinstance(ref, Mapping):
            continue
        desired = ref.get("desiredConfig")
        if not isinstance(desired, Mapping):
            continue
        key = config_key(
            _text(ref.get("group")),
            _text(ref.get("resource")),
            _text(desired.get("namespace")),
            _text(desired.get("name")),
        )
        result[go_text(key)] = go_text(_text(desired.get("specHash")))
    return result


def config_spec_hash_annotation(mca: Mapping[str, Any]) -> str | None:
    """The ``open-cluster-management.io/config-spec-hash`` value for the MCA's desired configs:
    None when it has no configReferences; otherwise the JSON object of ``config_spec_hash_map``
    (``{}`` when no item has a desiredConfig; empty hashes are kept)."""
    if not config_references(mca):
        return None
    return go_json(config_spec_hash_map(mca))

