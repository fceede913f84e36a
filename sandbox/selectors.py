"""Label and field selectors with kube-apiserver's syntax and matching rules."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ocm_rollout.sandbox.errors import ApiError, bad_request

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?" + _NAME + "$")
_LABEL_VALUE = re.compile(r"^(" + _NAME + ")?$")


def label_key_error(key: str) -> str | None:
    """Why `key` is not a valid label (or annotation) key, or None."""
    if not _LABEL_KEY.match(key):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character, with an optional DNS subdomain prefix and '/'"
        )
    prefix, _, name = key.rpartition("/")
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if len(prefix) > 253:
        return "prefix part must be no more than 253 characters"
    return None


def label_value_error(value: str) -> str | None:
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _LABEL_VALUE.match(value):
        return (
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return None


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        if self.op in ("!=", "notin"):
            return not present or labels[self.key] not in self.values
        if not present:
            return False
        try:
            have = int(labels[self.key])
        except ValueError:
            return False
        bound = int(self.values[0])
        return have > bound if self.op == "gt" else have < bound


class LabelSelector:
    """A parsed `labelSelector` query parameter; the empty selector matches everything."""

    def __init__(self, requirements: list[Requirement]) -> None:
        self.requirements = requirements

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @classmethod
    def parse(cls, text: str | None) -> LabelSelector:
        if not text or not text.strip():
            return cls([])
        return cls(_LabelParser(text).parse())


_TOKEN = re.compile(r"\s*(!=|==|=|!|\(|\)|,|>|<|[^\s!=(),<>]+)")


class _LabelParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[str] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                break
            if m.group(1):
                self.tokens.append(m.group(1))
            pos = m.end()
            if text[pos:].strip() == "":
                break
        self.i = 0

    def fail(self, why: str) -> ApiError:
        return bad_request(f"unable to parse requirement: {why} (in label selector {self.text!r})")

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> str:
        tok = self.peek()
        if tok is None:
            raise self.fail("unexpected end of selector")
        self.i += 1
        return tok

    def key(self, tok: str) -> str:
        if tok in ("!=", "==", "=", "!", "(", ")", ",", ">", "<") or tok in ("in", "notin"):
            raise self.fail(f"expected a label key, found {tok!r}")
        why = label_key_error(tok)
        if why:
            raise self.fail(f"invalid label key {tok!r}: {why}")
        return tok

    def value(self, tok: str) -> str:
        if tok in ("!=", "==", "=", "!", "(", ")", ","):
            raise self.fail(f"expected a value, found {tok!r}")
        why = label_value_error(tok)
        if why:
            raise self.fail(f"invalid label value {tok!r}: {why}")
        return tok

    def parse(self) -> list[Requirement]:
        out: list[Requirement] = []
        while True:
            out.append(self.requirement())
            tok = self.peek()
            if tok is None:
                return out
            if tok != ",":
                raise self.fail(f"expected ',' found {tok!r}")
            self.i += 1

    def requirement(self) -> Requirement:
        tok = self.take()
        if tok == "!":
            return Requirement(self.key(self.take()), "!")
        key = self.key(tok)
        op = self.peek()
        if op is None or op == ",":
            return Requirement(key, "exists")
        self.i += 1
        if op in ("=", "==", "!="):
            nxt = self.peek()
            value = "" if nxt is None or nxt == "," else self.value(self.take())
            return Requirement(key, "!=" if op == "!=" else "=", (value,))
        if op in (">", "<"):
            bound = self.take()
            if not re.fullmatch(r"-?\d+", bound):
                raise self.fail(f"for 'gt', 'lt' operators, the value must be an integer, found {bound!r}")
            return Requirement(key, "gt" if op == ">" else "lt", (bound,))
        if op in ("in", "notin"):
            if self.take() != "(":
                raise self.fail(f"expected '(' after {op!r}")
            values: list[str] = []
            while True:
                tok = self.take()
                if tok == ")":
                    if not values:
                        values.append("")
                    break
                if tok == ",":
                    continue
                values.append(self.value(tok))
            return Requirement(key, op, tuple(values))
        raise self.fail(f"unknown operator {op!r}")


# Field selectors ----------------------------------------------------------------------------------

FieldGetter = Callable[[dict[str, Any]], str | None]


def _path_getter(path: str) -> FieldGetter:
    parts = path.split(".")

    def get(obj: dict[str, Any]) -> str | None:
        cur: Any = obj
        for p in parts:
            if not isinstance(cur, dict):
                return None
            cur = cur.get(p)
        if cur is None:
            return ""
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return str(cur)

    return get


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    op: str  # "=" or "!="
    value: str
    getter: FieldGetter

    def matches(self, obj: dict[str, Any]) -> bool:
        have = self.getter(obj) or ""
        return (have == self.value) if self.op == "=" else (have != self.value)


class FieldSelector:
    """A parsed `fieldSelector`; only the fields a resource supports are accepted (400 otherwise)."""

    def __init__(self, requirements: list[FieldRequirement]) -> None:
        self.requirements = requirements

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, obj: dict[str, Any]) -> bool:
        return all(r.matches(obj) for r in self.requirements)

    def exact(self, field: str) -> str | None:
        """The value an `=` requirement pins `field` to, if any (lets the store skip a scan)."""
        for r in self.requirements:
            if r.field == field and r.op == "=":
                return r.value
        return None

    @classmethod
    def parse(cls, text: str | None, supported: frozenset[str]) -> FieldSelector:
        if not text or not text.strip():
            return cls([])
        reqs: list[FieldRequirement] = []
        for term in _split_unescaped(text, ","):
            term = term.strip()
            if not term:
                continue
            for op_text, op_kind in (("!=", "!="), ("==", "="), ("=", "=")):
                idx = _find_unescaped(term, op_text)
                if idx >= 0:
                    field = term[:idx].strip()
                    value = _unescape(term[idx + len(op_text) :].strip())
                    op = op_kind
                    break
            else:
                raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
            if field not in supported:
                raise bad_request(f"field label not supported: {field}")
            reqs.append(FieldRequirement(field, op, value, _path_getter(field)))
        return cls(reqs)


def _find_unescaped(text: str, needle: str) -> int:
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(needle, i):
            return i
        i += 1
    return -1


def _split_unescaped(text: str, sep: str) -> list[str]:
    out: list[str] = []
    cur = ""
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cur += text[i : i + 2]
            i += 2
            continue
        if ch == sep:
            out.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    out.append(cur)
    return out


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)
