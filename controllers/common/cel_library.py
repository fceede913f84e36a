"""The Kubernetes CEL libraries OCM's placement environment declares, for ``celpy``.

Strings (cel-go's strings extension), lists, regex, URLs, IP and CIDR, quantity and semver, as
Kubernetes defines them, and the functions of cel-go's optional types (``OptionalValue``,
``optional.of`` & co.; the syntax ``x.?f`` / ``x[?k]`` is parsed by ``cel_grammar``, and the
short-circuiting ``or`` / ``orValue`` / ``optMap`` / ``optFlatMap`` are evaluated by ``cel_eval``).
``global_functions`` and ``member_functions`` say how each is called, which is what the
compile-time check (``cel_declarations``) declares. Each function takes and returns celpy values;
a wrong argument type raises TypeError (celpy reports "no such overload"), a bad value returns a
CEL error value.

Pure: no I/O.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any
from urllib.parse import parse_qs, urlsplit

import celpy
from celpy import celtypes
from celpy.evaluation import CELEvalError

from ocm_rollout.controllers.common.quantity import QuantityError, format_fraction, parse_quantity

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _int(value: Any) -> int:
    if isinstance(value, celtypes.BoolType) or not isinstance(value, int):
        raise TypeError("expected an int")
    return int(value)


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return str(value)


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError("expected a list")
    return list(value)


# --------------------------------------------------------------------------------------------
# Semver (Kubernetes library.SemverLib)
# --------------------------------------------------------------------------------------------

_SEMVER = re.compile(
    r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


class Semver:
    """A semantic version (the CEL ``Semver`` type)."""

    def __init__(self, major: int, minor: int, patch: int, pre: tuple[str, ...], build: str) -> None:
        self.major, self.minor, self.patch, self.pre, self.build = major, minor, patch, pre, build

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(self.pre)
        if self.build:
            text += "+" + self.build
        return text

    def __repr__(self) -> str:
        return f"Semver({self})"

    def compare(self, other: Semver) -> int:
        left = (self.major, self.minor, self.patch)
        right = (other.major, other.minor, other.patch)
        if left != right:
            return -1 if left < right else 1
        if self.pre == other.pre:
            return 0
        if not self.pre:
            return 1
        if not other.pre:
            return -1
        for a, b in zip(self.pre, other.pre, strict=False):
            if a == b:
                continue
            a_num, b_num = a.isdigit(), b.isdigit()
            if a_num and b_num:
                return -1 if int(a) < int(b) else 1
            if a_num != b_num:
                return -1 if a_num else 1
            return -1 if a < b else 1
        return -1 if len(self.pre) < len(other.pre) else 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self.compare(other) == 0 and self.build == other.build

    def __hash__(self) -> int:
        return hash(str(self))


def _normalize_semver(text: str) -> str:
    if text.startswith("v"):
        text = text[1:]
    core, sep, rest = text, "", ""
    for marker in ("-", "+"):
        index = text.find(marker)
        if index != -1 and (not sep or index < len(core)):
            core, sep, rest = text[:index], marker, text[index + 1 :]
    parts = core.split(".")
    while len(parts) < 3:
        parts.append("0")
    parts = [p.lstrip("0") or "0" if p.isdigit() else p for p in parts]
    return ".".join(parts) + (sep + rest if sep else "")


def parse_semver(text: str, normalize: bool = False) -> Semver:
    if normalize:
        text = _normalize_semver(text)
    match = _SEMVER.match(text)
    if match is None:
        raise ValueError(f"invalid semver: {text}")
    pre = tuple(match.group(4).split(".")) if match.group(4) else ()
    return Semver(int(match.group(1)), int(match.group(2)), int(match.group(3)), pre, match.group(5) or "")


def _semver(text: Any, normalize: Any = None) -> Any:
    try:
        return parse_semver(_str(text), bool(normalize) if normalize is not None else False)
    except ValueError as exc:
        return CELEvalError(f"semver.Parse() {exc}")


def _is_semver(text: Any, normalize: Any = None) -> Any:
    try:
        parse_semver(_str(text), bool(normalize) if normalize is not None else False)
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


# --------------------------------------------------------------------------------------------
# Quantity (Kubernetes library.Quantity)
# --------------------------------------------------------------------------------------------


class QuantityValue:
    """A Kubernetes quantity (the CEL ``Quantity`` type), compared by exact value."""

    def __init__(self, value: Fraction, text: str) -> None:
        self.value = value
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Quantity({self.text})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, QuantityValue) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)


def _quantity(text: Any) -> Any:
    try:
        parsed = parse_quantity(_str(text))
    except QuantityError as exc:
        return CELEvalError(str(exc))
    return QuantityValue(parsed.value, str(text))


def _is_quantity(text: Any) -> Any:
    try:
        parse_quantity(_str(text))
    except QuantityError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _q(value: Any) -> QuantityValue:
    if not isinstance(value, QuantityValue):
        raise TypeError("expected a Quantity")
    return value


def _quantity_operand(value: Any) -> Fraction:
    if isinstance(value, QuantityValue):
        return value.value
    return Fraction(_int(value))


def _is_integer(q: Any) -> Any:
    value = _q(q).value
    return celtypes.BoolType(value.denominator == 1 and _INT64_MIN <= value.numerator <= _INT64_MAX)


def _as_integer(q: Any) -> Any:
    value = _q(q).value
    if value.denominator != 1 or not _INT64_MIN <= value.numerator <= _INT64_MAX:
        return CELEvalError("cannot convert value to integer")
    return celtypes.IntType(value.numerator)


def _as_approximate_float(q: Any) -> Any:
    return celtypes.DoubleType(parse_quantity(_q(q).text).approximate_float())


def _sign(q: Any) -> Any:
    value = _q(q).value
    return celtypes.IntType((value > 0) - (value < 0))


def _add(q: Any, other: Any) -> Any:
    total = _q(q).value + _quantity_operand(other)
    return QuantityValue(total, format_fraction(total))


def _sub(q: Any, other: Any) -> Any:
    total = _q(q).value - _quantity_operand(other)
    return QuantityValue(total, format_fraction(total))


def _compare_values(left: Any, right: Any) -> int:
    if isinstance(left, Semver) and isinstance(right, Semver):
        return left.compare(right)
    if isinstance(left, QuantityValue) and isinstance(right, QuantityValue):
        return (left.value > right.value) - (left.value < right.value)
    raise TypeError("compare needs two Quantity or two Semver values")


def _is_greater_than(left: Any, right: Any) -> Any:
    return celtypes.BoolType(_compare_values(left, right) > 0)


def _is_less_than(left: Any, right: Any) -> Any:
    return celtypes.BoolType(_compare_values(left, right) < 0)


def _compare_to(left: Any, right: Any) -> Any:
    return celtypes.IntType(_compare_values(left, right))


def _semver_part(index: int) -> Callable[[Any], Any]:
    def part(version: Any) -> Any:
        if not isinstance(version, Semver):
            raise TypeError("expected a Semver")
        return celtypes.IntType((version.major, version.minor, version.patch)[index])

    return part


# --------------------------------------------------------------------------------------------
# Strings (cel-go ext.Strings)
# --------------------------------------------------------------------------------------------


def _char_at(text: Any, index: Any) -> Any:
    s, i = _str(text), _int(index)
    if i < 0 or i > len(s):
        return CELEvalError(f"index out of range: {i}")
    return celtypes.StringType(s[i : i + 1])


def _index_of(container: Any, item: Any, offset: Any = None) -> Any:
    if isinstance(container, list):
        for position, element in enumerate(container):
            if type(element) is type(item) and element == item:
                return celtypes.IntType(position)
        return celtypes.IntType(-1)
    s, sub = _str(container), _str(item)
    start = 0 if offset is None else _int(offset)
    if start < 0 or start > len(s):
        return CELEvalError(f"index out of range: {start}")
    return celtypes.IntType(s.find(sub, start))


def _last_index_of(container: Any, item: Any, offset: Any = None) -> Any:
    if isinstance(container, list):
        for position in range(len(container) - 1, -1, -1):
            element = container[position]
            if type(element) is type(item) and element == item:
                return celtypes.IntType(position)
        return celtypes.IntType(-1)
    s, sub = _str(container), _str(item)
    end = len(s) if offset is None else _int(offset)
    if end < 0 or end > len(s):
        return CELEvalError(f"index out of range: {end}")
    return celtypes.IntType(s.rfind(sub, 0, end + len(sub)))


def _lower_ascii(text: Any) -> Any:
    return celtypes.StringType("".join(c.lower() if c.isascii() else c for c in _str(text)))


def _upper_ascii(text: Any) -> Any:
    return celtypes.StringType("".join(c.upper() if c.isascii() else c for c in _str(text)))


def _replace(text: Any, old: Any, new: Any, count: Any = None) -> Any:
    n = -1 if count is None else _int(count)
    return celtypes.StringType(_str(text).replace(_str(old), _str(new), n if n >= 0 else -1))


def _split(text: Any, separator: Any, count: Any = None) -> Any:
    s, sep = _str(text), _str(separator)
    n = -1 if count is None else _int(count)
    if n == 0:
        return celtypes.ListType()
    if sep == "":
        parts = list(s) if n < 0 else [*list(s[: n - 1]), s[n - 1 :]] if len(s) >= n else list(s)
    else:
        parts = s.split(sep, n - 1) if n > 0 else s.split(sep)
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def _substring(text: Any, start: Any, end: Any = None) -> Any:
    s = _str(text)
    i = _int(start)
    j = len(s) if end is None else _int(end)
    if i < 0 or i > len(s) or j < i or j > len(s):
        return CELEvalError(f"index out of range: {i}..{j}")
    return celtypes.StringType(s[i:j])


def _trim(text: Any) -> Any:
    return celtypes.StringType(_str(text).strip())


def _join(items: Any, separator: Any = None) -> Any:
    sep = "" if separator is None else _str(separator)
    return celtypes.StringType(sep.join(_str(item) for item in _list(items)))


def _reverse(text: Any) -> Any:
    return celtypes.StringType(_str(text)[::-1])


_FORMAT_VERB = re.compile(r"%(?:\.(\d+))?([sdfeExXob%])")


def _format(text: Any, args: Any) -> Any:
    values = _list(args)
    position = 0

    def render(match: re.Match[str]) -> str:
        nonlocal position
        precision, verb = match.group(1), match.group(2)
        if verb == "%":
            return "%"
        if position >= len(values):
            raise ValueError("too few arguments for format")
        value = values[position]
        position += 1
        if verb == "s":
            if isinstance(value, celtypes.BoolType):
                return "true" if value else "false"
            if isinstance(value, list):
                return "[" + ", ".join(str(v) for v in value) + "]"
            return str(value)
        if verb == "d":
            return str(_int(value))
        number = float(value) if verb in "fEe" else _int(value)
        if verb == "f":
            return f"{number:.{int(precision) if precision else 6}f}"
        if verb in "eE":
            return f"{number:.{int(precision) if precision else 6}{verb}}"
        return format(int(number), {"x": "x", "X": "X", "o": "o", "b": "b"}[verb])

    return celtypes.StringType(_FORMAT_VERB.sub(render, _str(text)))


# --------------------------------------------------------------------------------------------
# Lists (Kubernetes library.Lists) and regex (library.Regex)
# --------------------------------------------------------------------------------------------


def _comparable(items: list[Any]) -> list[Any]:
    if items and len({type(item) for item in items}) > 1:
        raise TypeError("list elements of different types")
    return items


def _is_sorted(items: Any) -> Any:
    values = _comparable(_list(items))
    return celtypes.BoolType(all(values[i] <= values[i + 1] for i in range(len(values) - 1)))


def _sum(items: Any) -> Any:
    values = _comparable(_list(items))
    if not values:
        return celtypes.IntType(0)
    total = values[0]
    for value in values[1:]:
        total = total + value
    return total


def _max(items: Any) -> Any:
    values = _comparable(_list(items))
    if not values:
        return CELEvalError("max of empty list")
    return max(values)


def _find(text: Any, pattern: Any) -> Any:
    try:
        match = re.search(_str(pattern), _str(text))
    except re.error as exc:
        return CELEvalError(f"invalid regex: {exc}")
    return celtypes.StringType(match.group(0) if match else "")


def _find_all(text: Any, pattern: Any, limit: Any = None) -> Any:
    try:
        found = [m.group(0) for m in re.finditer(_str(pattern), _str(text))]
    except re.error as exc:
        return CELEvalError(f"invalid regex: {exc}")
    n = -1 if limit is None else _int(limit)
    if n >= 0:
        found = found[:n]
    return celtypes.ListType([celtypes.StringType(f) for f in found])


# --------------------------------------------------------------------------------------------
# URLs (Kubernetes library.URLs)
# --------------------------------------------------------------------------------------------


class URLValue:
    """A parsed URL (the CEL ``URL`` type)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.parts = urlsplit(text)

    def __str__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, URLValue) and self.text == other.text

    def __hash__(self) -> int:
        return hash(self.text)


def _parse_url(text: str) -> URLValue:
    if not text or " " in text:
        raise ValueError(f"URL parse error: {text!r}")
    value = URLValue(text)
    if not value.parts.scheme and not text.startswith("/"):
        raise ValueError(f"URL parse error: {text!r} is not an absolute URI or absolute path")
    value.parts.port  # noqa: B018 - validates the port
    return value


def _url(text: Any) -> Any:
    try:
        return _parse_url(_str(text))
    except ValueError as exc:
        return CELEvalError(str(exc))


def _is_url(text: Any) -> Any:
    try:
        _parse_url(_str(text))
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _u(value: Any) -> URLValue:
    if not isinstance(value, URLValue):
        raise TypeError("expected a URL")
    return value


def _get_scheme(url: Any) -> Any:
    return celtypes.StringType(_u(url).parts.scheme)


def _get_host(url: Any) -> Any:
    return celtypes.StringType(_u(url).parts.netloc.rpartition("@")[2])


def _get_hostname(url: Any) -> Any:
    host = _u(url).parts.netloc.rpartition("@")[2]
    if host.startswith("["):
        return celtypes.StringType(host[1 : host.find("]")])
    return celtypes.StringType(host.partition(":")[0])


def _get_port(url: Any) -> Any:
    host = _u(url).parts.netloc.rpartition("@")[2]
    if host.startswith("["):
        rest = host[host.find("]") + 1 :]
        return celtypes.StringType(rest[1:] if rest.startswith(":") else "")
    return celtypes.StringType(host.partition(":")[2])


def _get_escaped_path(url: Any) -> Any:
    return celtypes.StringType(_u(url).parts.path)


def _get_query(url: Any) -> Any:
    query = parse_qs(_u(url).parts.query, keep_blank_values=True)
    return celtypes.MapType(
        {
            celtypes.StringType(k): celtypes.ListType([celtypes.StringType(v) for v in vs])
            for k, vs in query.items()
        }
    )


# --------------------------------------------------------------------------------------------
# IP and CIDR (Kubernetes library.IP / library.CIDR)
# --------------------------------------------------------------------------------------------


class IPValue:
    def __init__(self, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
        self.address = address

    def __str__(self) -> str:
        return str(self.address)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IPValue) and self.address == other.address

    def __hash__(self) -> int:
        return hash(self.address)


class CIDRValue:
    def __init__(self, address: ipaddress.IPv4Address | ipaddress.IPv6Address, prefix: int) -> None:
        self.address = address
        self.prefix = prefix
        self.network = ipaddress.ip_network(f"{address}/{prefix}", strict=False)

    def __str__(self) -> str:
        return f"{self.address}/{self.prefix}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CIDRValue) and (self.address, self.prefix) == (other.address, other.prefix)

    def __hash__(self) -> int:
        return hash((self.address, self.prefix))


def _parse_ip(text: str) -> IPValue:
    if "%" in text:
        raise ValueError(f"IP address with zone value is not allowed: {text}")
    address = ipaddress.ip_address(text)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        raise ValueError(f"IPv4-mapped IPv6 address is not allowed: {text}")
    return IPValue(address)


def _parse_cidr(text: str) -> CIDRValue:
    address_text, slash, prefix_text = text.partition("/")
    if not slash or not prefix_text.isdigit():
        raise ValueError(f"network address parse error during conversion from string: {text}")
    ip = _parse_ip(address_text)
    prefix = int(prefix_text)
    if prefix > ip.address.max_prefixlen:
        raise ValueError(f"network address parse error during conversion from string: {text}")
    return CIDRValue(ip.address, prefix)


def _ip(value: Any) -> Any:
    if isinstance(value, CIDRValue):
        return IPValue(value.address)
    try:
        return _parse_ip(_str(value))
    except ValueError as exc:
        return CELEvalError(f"IP Address {value!s} parse error during conversion from string: {exc}")


def _is_ip(value: Any) -> Any:
    try:
        _parse_ip(_str(value))
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _cidr(value: Any) -> Any:
    try:
        return _parse_cidr(_str(value))
    except ValueError as exc:
        return CELEvalError(str(exc))


def _is_cidr(value: Any) -> Any:
    try:
        _parse_cidr(_str(value))
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _addr(value: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    if not isinstance(value, IPValue):
        raise TypeError("expected an IP")
    return value.address


def _family(value: Any) -> Any:
    return celtypes.IntType(_addr(value).version)


def _ip_predicate(check: Callable[[Any], bool]) -> Callable[[Any], Any]:
    def predicate(value: Any) -> Any:
        return celtypes.BoolType(check(_addr(value)))

    return predicate


def _is_global_unicast(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if address.is_multicast or address.is_loopback or address.is_link_local or address.is_unspecified:
        return False
    return not (isinstance(address, ipaddress.IPv4Address) and address == ipaddress.IPv4Address("255.255.255.255"))


def _is_link_local_multicast(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv4Address):
        return address in ipaddress.ip_network("224.0.0.0/24")
    return address in ipaddress.ip_network("ff02::/16")


def _c(value: Any) -> CIDRValue:
    if not isinstance(value, CIDRValue):
        raise TypeError("expected a CIDR")
    return value


def _contains_ip(cidr: Any, other: Any) -> Any:
    network = _c(cidr).network
    address = other.address if isinstance(other, IPValue) else _parse_ip(_str(other)).address
    return celtypes.BoolType(address.version == network.version and address in network)


def _contains_cidr(cidr: Any, other: Any) -> Any:
    network = _c(cidr).network
    inner = other if isinstance(other, CIDRValue) else _parse_cidr(_str(other))
    if inner.network.version != network.version:
        return celtypes.BoolType(False)
    return celtypes.BoolType(inner.network.subnet_of(network))  # type: ignore[arg-type]


def _prefix_length(cidr: Any) -> Any:
    return celtypes.IntType(_c(cidr).prefix)


def _masked(cidr: Any) -> Any:
    value = _c(cidr)
    return CIDRValue(value.network.network_address, value.prefix)


# --------------------------------------------------------------------------------------------
# Optional types (cel-go cel.OptionalTypes, every version)
# --------------------------------------------------------------------------------------------


class OptionalValue:
    """A CEL ``optional_type`` value: ``optional.of(v)`` (present) or ``optional.none()``.

    Equal to another optional when both are empty, or both hold equal values; never equal to a
    value of another type. Not a valid map key.
    """

    __slots__ = ("_present", "_value")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, present: bool, value: Any = None) -> None:
        self._present = present
        self._value = value if present else None

    @classmethod
    def of(cls, value: Any) -> OptionalValue:
        return cls(True, value)

    @property
    def has_value(self) -> bool:
        return self._present

    @property
    def value(self) -> Any:
        """The held value; only meaningful when ``has_value``."""
        return self._value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OptionalValue):
            return False
        if not self._present or not other._present:
            return self._present == other._present
        try:
            return bool(self._value == other._value)
        except TypeError:
            return False

    def __repr__(self) -> str:
        return f"optional.of({self._value!r})" if self._present else "optional.none()"


OPTIONAL_NONE = OptionalValue(False)


def _optional(value: Any) -> OptionalValue:
    if not isinstance(value, OptionalValue):
        raise TypeError("expected an optional value")
    return value


def _is_zero_value(value: Any) -> bool:
    """cel-go's ``IsZeroValue``: false, 0, 0u, 0.0, "", b"", [], {}, null, 0s, the Unix epoch."""
    if value is None or isinstance(value, celtypes.NullType):
        return True
    if isinstance(value, celtypes.TimestampType):
        return value.timestamp() == 0
    if isinstance(value, celtypes.DurationType):
        return value.total_seconds() == 0
    if isinstance(value, bool | int | float | str | bytes | list | dict):
        return not value
    return False


def _optional_of(value: Any) -> Any:
    return OptionalValue.of(value)


def _optional_of_non_zero_value(value: Any) -> Any:
    return OPTIONAL_NONE if _is_zero_value(value) else OptionalValue.of(value)


def _optional_none() -> Any:
    return OPTIONAL_NONE


def _has_value(optional: Any) -> Any:
    return celtypes.BoolType(_optional(optional).has_value)


def _value(optional: Any) -> Any:
    held = _optional(optional)
    if not held.has_value:
        return CELEvalError("optional.none() dereference")
    return held.value


def _first(items: Any) -> Any:
    values = _list(items)
    return OptionalValue.of(values[0]) if values else OPTIONAL_NONE


def _last(items: Any) -> Any:
    values = _list(items)
    return OptionalValue.of(values[-1]) if values else OPTIONAL_NONE


def _unwrap(items: Any) -> Any:
    out = []
    for item in _list(items):
        if not isinstance(item, OptionalValue):
            return CELEvalError(f"value {item} is not optional")
        if item.has_value:
            out.append(item.value)
    return celtypes.ListType(out)


def global_functions() -> dict[str, Callable[..., Any]]:
    """The library functions called as ``f(args)``, by CEL name."""
    return {
        "semver": _semver,
        "isSemver": _is_semver,
        "quantity": _quantity,
        "isQuantity": _is_quantity,
        "url": _url,
        "isURL": _is_url,
        "ip": _ip,
        "isIP": _is_ip,
        "cidr": _cidr,
        "isCIDR": _is_cidr,
        # optional types (``optional.of(x)`` is parsed as a call of ``optional.of``)
        "optional.of": _optional_of,
        "optional.ofNonZeroValue": _optional_of_non_zero_value,
        "optional.none": _optional_none,
        "optional.unwrap": _unwrap,
    }


def member_functions() -> dict[str, Callable[..., Any]]:
    """The library functions called as methods ``receiver.f(args)``, by CEL name; celpy passes
    the receiver first. ``ip`` is both (``ip(s)`` and ``cidr.ip()``), ``_ip`` dispatching on its
    argument; ``or`` / ``orValue`` / ``optMap`` / ``optFlatMap`` are evaluated by ``cel_eval``."""
    return {
        # semver and quantity
        "major": _semver_part(0),
        "minor": _semver_part(1),
        "patch": _semver_part(2),
        "isInteger": _is_integer,
        "asInteger": _as_integer,
        "asApproximateFloat": _as_approximate_float,
        "sign": _sign,
        "add": _add,
        "sub": _sub,
        "isGreaterThan": _is_greater_than,
        "isLessThan": _is_less_than,
        "compareTo": _compare_to,
        # strings
        "charAt": _char_at,
        "indexOf": _index_of,
        "lastIndexOf": _last_index_of,
        "lowerAscii": _lower_ascii,
        "upperAscii": _upper_ascii,
        "replace": _replace,
        "split": _split,
        "substring": _substring,
        "trim": _trim,
        "join": _join,
        "reverse": _reverse,
        "format": _format,
        # lists and regex
        "isSorted": _is_sorted,
        "sum": _sum,
        "max": _max,
        "find": _find,
        "findAll": _find_all,
        # URLs
        "getScheme": _get_scheme,
        "getHost": _get_host,
        "getHostname": _get_hostname,
        "getPort": _get_port,
        "getEscapedPath": _get_escaped_path,
        "getQuery": _get_query,
        # IP and CIDR
        "family": _family,
        "isUnspecified": _ip_predicate(lambda a: a.is_unspecified),
        "isLoopback": _ip_predicate(lambda a: a.is_loopback),
        "isLinkLocalMulticast": _ip_predicate(_is_link_local_multicast),
        "isLinkLocalUnicast": _ip_predicate(lambda a: a.is_link_local and not a.is_multicast),
        "isGlobalUnicast": _ip_predicate(_is_global_unicast),
        "ip": _ip,
        "containsIP": _contains_ip,
        "containsCIDR": _contains_cidr,
        "prefixLength": _prefix_length,
        "masked": _masked,
        # optional types
        "hasValue": _has_value,
        "value": _value,
        "first": _first,
        "last": _last,
        "unwrapOpt": _unwrap,
    }


def functions() -> dict[str, Callable[..., Any]]:
    """Every library function by CEL name (shared names dispatch on their argument types)."""
    return {**global_functions(), **member_functions()}


_ENVIRONMENT: celpy.Environment | None = None


def environment() -> celpy.Environment:
    """The one CEL environment (built once): ``optional_type`` names the type of optional values
    (``type(x) == optional_type``)."""
    global _ENVIRONMENT
    if _ENVIRONMENT is None:
        annotations: dict[str, Any] = {"optional_type": OptionalValue}
        _ENVIRONMENT = celpy.Environment(annotations=annotations)
    return _ENVIRONMENT
