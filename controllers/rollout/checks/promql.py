"""PromQL for metric checks: a query template and the values of its placeholders in, the query
out; and a Prometheus HTTP API ``/api/v1/query`` answer in, a ``QueryResult`` out.

Placeholders (``{{cluster}}``, ``{{clusterRegex}}``, ``{{name}}``, ``{{namespace}}``; the API
lists them in ``ocm_rollout.api.rollout_checks.QUERY_PLACEHOLDERS``) are replaced by a
double-quoted PromQL string literal with every backslash, double quote and non-printable
character escaped, so a value can never end the literal and add PromQL of its own:
``a"} or vector(1) #`` becomes ``"a\\"} or vector(1) #"``. ``{{clusterRegex}}`` also escapes
the RE2 metacharacters, for ``=~`` / ``!~`` matchers (which Prometheus anchors at both ends).

Pure: no I/O.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ocm_rollout.api.rollout_checks import PLACEHOLDER_RE, QUERY_PLACEHOLDERS, placeholder_in_string

# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------

_SIMPLE_ESCAPES: Final = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_RE2_META: Final = frozenset("\\.+*?()|[]{}^$")


class QueryTemplateError(ValueError):
    """A query template with an unknown placeholder, or one inside a string literal (the API
    rejects both; the renderer checks again)."""


def string_literal(value: str) -> str:
    """``value`` as a double-quoted PromQL (Go) string literal."""
    out = ['"']
    for ch in value:
        if ch in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def regex_quote(value: str) -> str:
    """``value`` with every RE2 metacharacter escaped (Go's ``regexp.QuoteMeta``)."""
    return "".join(f"\\{ch}" if ch in _RE2_META else ch for ch in value)


def render_query(template: str, *, cluster: str, name: str = "", namespace: str = "") -> str:
    """The query ``template`` with each placeholder replaced by its escaped string literal."""
    values = {
        "cluster": string_literal(cluster),
        "clusterRegex": string_literal(regex_quote(cluster)),
        "name": string_literal(name),
        "namespace": string_literal(namespace),
    }
    if set(values) != set(QUERY_PLACEHOLDERS):
        raise QueryTemplateError("the renderer and the API disagree on the placeholders")
    quoted = placeholder_in_string(template)
    if quoted is not None:
        raise QueryTemplateError(f"{quoted} is inside a string literal")

    def replace(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise QueryTemplateError(f"unknown placeholder {match.group(0)!r}")
        return values[key]

    return PLACEHOLDER_RE.sub(replace, template)


# --------------------------------------------------------------------------------------------
# Answers
# --------------------------------------------------------------------------------------------


class PrometheusAnswerError(ValueError):
    """An answer that is an error (``status: error``) or not a Prometheus query answer at all."""


@dataclass(frozen=True)
class QueryResult:
    """A parsed ``/api/v1/query`` answer.

    ``result`` is what the conditions see as ``result``: a vector's sample values (a list of
    floats), a scalar's value (a float), a matrix's per-series values (a list of lists of
    floats), or a string's value. ``series`` adds the labels: ``[{"metric": {...}, "value": v}]``
    (vector) or ``[{"metric": {...}, "values": [...]}]`` (matrix); empty for a scalar or string.
    """

    result_type: str
    result: Any
    series: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def variables(self, cluster: str) -> dict[str, Any]:
        return {"result": self.result, "series": self.series, "resultType": self.result_type, "cluster": cluster}

    def describe(self, limit: int = 200) -> str:
        """A short rendering of the result (for a measurement's value)."""
        text = json.dumps(_jsonable(self.result), allow_nan=True)
        return text if len(text) <= limit else text[: limit - 3] + "..."


_SAMPLE_RE: Final = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$|^[+-]?Inf$|^NaN$")


def _sample_value(raw: Any, where: str) -> float:
    if not isinstance(raw, str) or not _SAMPLE_RE.match(raw):
        raise PrometheusAnswerError(f"{where}: sample value {raw!r} is not a number")
    return float(raw)


def _sample(pair: Any, where: str) -> tuple[float, float]:
    if not isinstance(pair, list) or len(pair) != 2:
        raise PrometheusAnswerError(f"{where}: a sample is [timestamp, \"value\"], got {_short(pair)}")
    timestamp, raw = pair
    if isinstance(timestamp, bool) or not isinstance(timestamp, int | float):
        raise PrometheusAnswerError(f"{where}: sample timestamp {_short(timestamp)} is not a number")
    return float(timestamp), _sample_value(raw, where)


def _labels(item: Mapping[str, Any], where: str) -> dict[str, str]:
    metric = item.get("metric", {})
    if not isinstance(metric, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in metric.items()):
        raise PrometheusAnswerError(f"{where}: metric labels must be a map of strings")
    return dict(metric)


def parse_answer(body: str | bytes | Mapping[str, Any]) -> QueryResult:
    """Parse an ``/api/v1/query`` answer body (any HTTP status: error answers have a JSON body
    too). Raises ``PrometheusAnswerError`` for an error answer or anything unparseable."""
    if isinstance(body, Mapping):
        doc: Any = body
    else:
        try:
            text = body.decode("utf-8") if isinstance(body, bytes) else body
            doc = json.loads(text)
        except (UnicodeDecodeError, ValueError) as exc:
            raise PrometheusAnswerError(f"the answer is not JSON: {exc}; it starts {_short(body)}") from None
    if not isinstance(doc, Mapping):
        raise PrometheusAnswerError(f"the answer is not a JSON object: {_short(doc)}")
    status = doc.get("status")
    if status == "error":
        kind = doc.get("errorType") or "error"
        raise PrometheusAnswerError(f"Prometheus answered {kind}: {doc.get('error') or '(no message)'}")
    if status != "success":
        raise PrometheusAnswerError(f"the answer has no status success or error: {_short(doc)}")
    data = doc.get("data")
    if not isinstance(data, Mapping):
        raise PrometheusAnswerError("the answer has no data object")
    warnings = [str(w) for w in doc.get("warnings") or [] if isinstance(w, str)]
    result_type, raw = data.get("resultType"), data.get("result")
    if result_type == "vector":
        if not isinstance(raw, list):
            raise PrometheusAnswerError("vector: result is not a list")
        series, values = [], []
        for index, item in enumerate(raw):
            where = f"vector[{index}]"
            if not isinstance(item, Mapping):
                raise PrometheusAnswerError(f"{where}: not an object")
            _, value = _sample(item.get("value"), where)
            series.append({"metric": _labels(item, where), "value": value})
            values.append(value)
        return QueryResult("vector", values, series, warnings)
    if result_type == "matrix":
        if not isinstance(raw, list):
            raise PrometheusAnswerError("matrix: result is not a list")
        series, matrix = [], []
        for index, item in enumerate(raw):
            where = f"matrix[{index}]"
            if not isinstance(item, Mapping) or not isinstance(item.get("values"), list):
                raise PrometheusAnswerError(f"{where}: not an object with values")
            values = [_sample(pair, where)[1] for pair in item["values"]]
            series.append({"metric": _labels(item, where), "values": values})
            matrix.append(values)
        return QueryResult("matrix", matrix, series, warnings)
    if result_type == "scalar":
        _, value = _sample(raw, "scalar")
        return QueryResult("scalar", value, [], warnings)
    if result_type == "string":
        if not isinstance(raw, list) or len(raw) != 2 or not isinstance(raw[1], str):
            raise PrometheusAnswerError("string: result is not [timestamp, \"value\"]")
        return QueryResult("string", raw[1], [], warnings)
    raise PrometheusAnswerError(f"unknown resultType {_short(result_type)}")


def _short(value: Any, limit: int = 80) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    text = value if isinstance(value, str) else repr(value)
    return repr(text[:limit] + ("..." if len(text) > limit else ""))


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value
