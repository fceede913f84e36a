"""Metric checks: PromQL rendering with escaped placeholders (injection attempts included), the
Prometheus /api/v1/query answer (every result type, error answers, garbage), one measurement's
judgement and Argo Rollouts' analysis semantics over the measurements."""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ocm_rollout.api.rollout_checks import MetricCheck
from ocm_rollout.controllers.rollout.checks.metric import (
    Measurement,
    MetricSettings,
    assess,
    judge,
    judge_result,
)
from ocm_rollout.controllers.rollout.checks.phase import Phase
from ocm_rollout.controllers.rollout.checks.promql import (
    PrometheusAnswerError,
    QueryTemplateError,
    parse_answer,
    regex_quote,
    render_query,
    string_literal,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
Obj = dict[str, Any]


# -- rendering ----------------------------------------------------------------------------------

_GO_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", '"': '"', "'": "'"}


def go_unquote(text: str) -> tuple[str, str]:
    """Lex one double-quoted Go/PromQL string literal at the start of ``text``: (value, rest)."""
    assert text[0] == '"'
    out, i = [], 1
    while True:
        ch = text[i]
        if ch == '"':
            return "".join(out), text[i + 1 :]
        assert ch != "\n", "a newline inside a string literal"
        if ch == "\\":
            code = text[i + 1]
            if code in _GO_ESCAPES:
                out.append(_GO_ESCAPES[code])
                i += 2
            elif code in "uU":
                width = 4 if code == "u" else 8
                out.append(chr(int(text[i + 2 : i + 2 + width], 16)))
                i += 2 + width
            else:
                raise AssertionError(f"unknown escape \\{code}")
        else:
            out.append(ch)
            i += 1


INJECTIONS = [
    'a"} or vector(1) #',
    'a\\"} or vector(1)',
    "a\\",
    'x"\n} or on() vector(1)',
    "a'} or vector(1)",
    "a`} or vector(1)",
    "{{cluster}}",
    "\u2028\x00\x7f\U0001f600",
    "",
]


@pytest.mark.parametrize("name", INJECTIONS)
def test_a_cluster_name_stays_one_string_literal(name: str) -> None:
    query = render_query("up{cluster={{cluster}}} > 0", cluster=name)
    assert query.startswith("up{cluster=")
    literal, rest = go_unquote(query[len("up{cluster=") :])
    assert literal == name
    assert rest == "} > 0"


@pytest.mark.parametrize("name", [*INJECTIONS, "prod.eu-1", "a+b(c)|[d]{2}^$*?"])
def test_the_regex_placeholder_matches_the_name_literally(name: str) -> None:
    query = render_query("up{cluster=~{{clusterRegex}}}", cluster=name)
    pattern, rest = go_unquote(query[len("up{cluster=~") :])
    assert rest == "}"
    assert re.fullmatch(pattern, name) is not None
    if name:
        assert re.fullmatch(pattern, name + "x") is None
    assert regex_quote("prod.eu-1") == "prod\\.eu-1"


def test_every_placeholder_is_rendered_and_spacing_is_allowed() -> None:
    query = render_query("x{c={{ cluster }}, n={{name}}, ns={{namespace}}}", cluster="c1", name="web", namespace="default")
    assert query == 'x{c="c1", n="web", ns="default"}'
    assert string_literal('a"b\\c\td') == '"a\\"b\\\\c\\td"'
    with pytest.raises(QueryTemplateError, match="unknown placeholder"):
        render_query("up{c={{clusterName}}}", cluster="c")
    with pytest.raises(QueryTemplateError, match="inside a string literal"):
        render_query('up{c="x-{{cluster}}"}', cluster="c")
    # Quotes and comments are followed: only a placeholder inside a literal is refused.
    assert render_query('up{a="}\\"#", c={{cluster}}} # {{name}}', cluster="c", name="n") == (
        'up{a="}\\"#", c="c"} # "n"'
    )


def test_the_api_rejects_templates_the_renderer_would_refuse() -> None:
    for query in ("up{c={{clusterName}}}", 'up{c="{{cluster}}"}', "up{c='{{ cluster }}'}", 'up{c="x-{{cluster}}-y"}',
                  "label_replace(up, `a`, `{{cluster}}`, ``, ``)", 'up{a="\\"", c="{{cluster}}"}'):
        with pytest.raises(ValueError):
            MetricCheck.model_validate({"provider": {"name": "p"}, "query": query, "successCondition": "true"})


# -- answers ------------------------------------------------------------------------------------


def answer(result_type: str, result: Any, **extra: Any) -> str:
    return json.dumps({"status": "success", "data": {"resultType": result_type, "result": result}, **extra})


def test_a_vector_gives_values_and_series() -> None:
    parsed = parse_answer(answer("vector", [
        {"metric": {"cluster": "c1", "code": "500"}, "value": [1700000000.123, "0.25"]},
        {"metric": {}, "value": [1700000000, "NaN"]},
        {"metric": {}, "value": [1700000000, "+Inf"]},
    ], warnings=["partial"]))  # fmt: skip
    assert parsed.result_type == "vector"
    assert parsed.result[0] == 0.25 and math.isnan(parsed.result[1]) and parsed.result[2] == math.inf
    assert parsed.series[0] == {"metric": {"cluster": "c1", "code": "500"}, "value": 0.25}
    assert parsed.warnings == ["partial"]
    assert parsed.describe() == '[0.25, "NaN", "+Inf"]'
    assert parse_answer(answer("vector", [])).result == []


def test_scalar_matrix_and_string() -> None:
    assert parse_answer(answer("scalar", [1, "1e3"])).result == 1000.0
    matrix = parse_answer(answer("matrix", [{"metric": {"a": "b"}, "values": [[1, "1"], [2, "2.5"]]}]))
    assert matrix.result == [[1.0, 2.5]] and matrix.series == [{"metric": {"a": "b"}, "values": [1.0, 2.5]}]
    assert parse_answer(answer("string", [1, "hello"])).result == "hello"
    assert parse_answer(answer("vector", []).encode()).result_type == "vector"
    assert parse_answer({"status": "success", "data": {"resultType": "scalar", "result": [1, "-2"]}}).result == -2.0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('{"status":"error","errorType":"bad_data","error":"parse error at char 5"}', "Prometheus answered bad_data: parse error at char 5"),
        ('{"status":"error"}', "Prometheus answered error: (no message)"),
        ("<html>502 Bad Gateway</html>", "the answer is not JSON"),
        (b"\xff\xfe", "the answer is not JSON"),
        ("", "the answer is not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"status":"pending"}', "no status success or error"),
        ('{"status":"success"}', "no data object"),
        (answer("histogram", []), "unknown resultType 'histogram'"),
        (answer("vector", {"a": 1}), "vector: result is not a list"),
        (answer("vector", [{"metric": {}, "value": [1, "abc"]}]), "vector[0]: sample value 'abc' is not a number"),
        (answer("vector", [{"metric": {}, "value": [1, "1_000"]}]), "is not a number"),
        (answer("vector", [{"metric": {}, "value": [1, 0.5]}]), "is not a number"),
        (answer("vector", [{"metric": {}, "value": ["1", "0.5"]}]), "timestamp"),
        (answer("vector", [{"metric": {}, "value": [1]}]), "a sample is [timestamp"),
        (answer("vector", [{"metric": {"a": 1}, "value": [1, "1"]}]), "labels must be a map of strings"),
        (answer("vector", [5]), "vector[0]: not an object"),
        (answer("matrix", [{"metric": {}}]), "matrix[0]: not an object with values"),
        (answer("scalar", "1"), "a sample is [timestamp"),
        (answer("string", [1, 2]), "string: result is not"),
    ],
)
def test_error_answers_and_garbage_are_clear_errors(body: str | bytes, message: str) -> None:
    with pytest.raises(PrometheusAnswerError) as caught:
        parse_answer(body)
    assert message in str(caught.value)


# -- one measurement ----------------------------------------------------------------------------


def settings(**fields: Any) -> MetricSettings:
    body = {"provider": {"address": "http://prom:9090"}, "query": "up{cluster={{cluster}}}", **fields}
    return MetricSettings.compile("error-rate", MetricCheck.model_validate(body))


def measure(s: MetricSettings, body: Any = None, error: str | None = None, at: datetime = T0) -> Measurement:
    return judge(s, body, cluster="c1", started_at=at, finished_at=at + timedelta(seconds=1), error=error)


def test_argo_condition_semantics() -> None:
    low, high = answer("vector", [{"metric": {}, "value": [1, "0.01"]}]), answer("vector", [{"metric": {}, "value": [1, "0.5"]}])
    mid = answer("vector", [{"metric": {}, "value": [1, "0.1"]}])
    only_success = settings(successCondition="result[0] < 0.05")
    assert measure(only_success, low).phase is Phase.SUCCESSFUL
    assert measure(only_success, high).phase is Phase.FAILED
    only_failure = settings(failureCondition="result[0] > 0.2")
    assert measure(only_failure, low).phase is Phase.SUCCESSFUL
    assert measure(only_failure, high).phase is Phase.FAILED
    both = settings(successCondition="result[0] < 0.05", failureCondition="result[0] > 0.2")
    assert [measure(both, b).phase for b in (low, mid, high)] == [Phase.SUCCESSFUL, Phase.INCONCLUSIVE, Phase.FAILED]
    overlapping = settings(successCondition="true", failureCondition="true")
    assert measure(overlapping, low).phase is Phase.FAILED
    taken = measure(both, mid)
    assert taken.value == "[0.1]" and taken.message == "neither successCondition nor failureCondition is true"


def test_errors_of_a_measurement() -> None:
    s = settings(successCondition="result[0] < 0.05")
    empty = measure(s, answer("vector", []))
    assert empty.phase is Phase.ERROR and empty.message.startswith("condition error:")
    assert measure(settings(successCondition="size(result) == 0 || result[0] < 0.05"), answer("vector", [])).phase is Phase.SUCCESSFUL
    bad = measure(s, '{"status":"error","errorType":"timeout","error":"query timed out"}')
    assert (bad.phase, bad.message) == (Phase.ERROR, "Prometheus answered timeout: query timed out")
    down = measure(s, error="connection refused")
    assert (down.phase, down.message) == (Phase.ERROR, "query failed: connection refused")
    not_bool = measure(settings(successCondition="result"), answer("scalar", [1, "1"]))
    assert not_bool.phase is Phase.ERROR and "not a bool" in not_bool.message
    assert measure(s, answer("vector", [{"metric": {}, "value": [1, "NaN"]}])).phase is Phase.FAILED


def test_series_labels_and_cluster_are_variables() -> None:
    s = settings(successCondition='series.all(x, x.metric.cluster == cluster) && resultType == "vector"')
    good = answer("vector", [{"metric": {"cluster": "c1"}, "value": [1, "1"]}])
    assert judge_result(s, parse_answer(good), "c1")[0] is Phase.SUCCESSFUL
    assert judge_result(s, parse_answer(good), "c2")[0] is Phase.FAILED


# -- the check ----------------------------------------------------------------------------------


def m(phase: Phase, minute: float, message: str = "") -> Measurement:
    at = T0 + timedelta(minutes=minute)
    return Measurement(phase, at, at + timedelta(seconds=1), "", message)


S, F, INC, E = Phase.SUCCESSFUL, Phase.FAILED, Phase.INCONCLUSIVE, Phase.ERROR


def test_the_first_measurement_waits_for_the_initial_delay() -> None:
    check = settings(successCondition="true", initialDelay="30s", interval="1m", count=3)
    first = assess(check, [], T0)
    assert (first.phase, first.next_measurement_at) == (Phase.RUNNING, T0 + timedelta(seconds=30))
    assert not first.due(T0) and first.due(T0 + timedelta(seconds=30))
    assert assess(settings(successCondition="true"), [], T0).next_measurement_at == T0


def test_count_successes_complete_the_check_interval_apart() -> None:
    check = settings(successCondition="true", interval="1m", count=3)
    running = assess(check, [m(S, 0), m(S, 1)], T0)
    assert running.phase is Phase.RUNNING and running.message == "2/3 measurement(s) taken"
    assert running.next_measurement_at == T0 + timedelta(minutes=2, seconds=1)
    done = assess(check, [m(S, 0), m(S, 1), m(S, 2)], T0)
    assert (done.phase, done.message, done.next_measurement_at) == (Phase.SUCCESSFUL, "count (3) reached", None)
    single = assess(settings(successCondition="true"), [m(S, 0)], T0)
    assert single.phase is Phase.SUCCESSFUL


def test_failure_limit() -> None:
    check = settings(successCondition="true", interval="1m", count=5, failureLimit=1)
    assert assess(check, [m(F, 0), m(S, 1)], T0).phase is Phase.RUNNING
    failed = assess(check, [m(F, 0, "successCondition is false"), m(S, 1), m(F, 2, "successCondition is false")], T0)
    assert failed.phase is Phase.FAILED
    assert failed.message == "failed (2) > failureLimit (1): successCondition is false"
    assert failed.next_measurement_at is None
    # With the default limit 0, the first failure fails the check.
    assert assess(settings(successCondition="true", interval="1m", count=5), [m(F, 0)], T0).phase is Phase.FAILED
    # Failures within the limit do not stop the count from succeeding.
    assert assess(check, [m(F, 0), m(S, 1), m(S, 2), m(S, 3), m(S, 4)], T0).phase is Phase.SUCCESSFUL


def test_inconclusive_limit() -> None:
    check = settings(successCondition="true", interval="1m", count=4, inconclusiveLimit=1)
    assert assess(check, [m(INC, 0)], T0).phase is Phase.RUNNING
    result = assess(check, [m(INC, 0), m(INC, 1)], T0)
    assert (result.phase, result.message) == (Phase.INCONCLUSIVE, "inconclusive (2) > inconclusiveLimit (1)")


def test_consecutive_errors_do_not_count_and_retry_after_ten_seconds() -> None:
    check = settings(successCondition="true", interval="5m", count=2, consecutiveErrorLimit=2)
    errored = assess(check, [m(S, 0), m(E, 5, "query failed: connection refused")], T0)
    assert errored.phase is Phase.RUNNING and errored.errors == 1 and errored.consecutive_errors == 1
    assert errored.next_measurement_at == T0 + timedelta(minutes=5, seconds=11)
    assert errored.message == "1/2 measurement(s) taken; the last one errored: query failed: connection refused"
    # An error between two measurements resets nothing but the streak.
    assert assess(check, [m(E, 0), m(E, 1), m(S, 2), m(E, 3), m(E, 4)], T0).phase is Phase.RUNNING
    broken = assess(check, [m(S, 0), m(E, 1), m(E, 2), m(E, 3, "query failed: timeout")], T0)
    assert broken.phase is Phase.ERROR
    assert broken.message == "consecutiveErrors (3) > consecutiveErrorLimit (2): query failed: timeout"
    # Default limit: 4.
    default = settings(successCondition="true")
    assert assess(default, [m(E, i) for i in range(4)], T0).phase is Phase.RUNNING
    assert assess(default, [m(E, i) for i in range(5)], T0).phase is Phase.ERROR


def test_the_last_limit_that_holds_wins_as_in_argo() -> None:
    check = settings(successCondition="true", interval="1m", count=9, consecutiveErrorLimit=0)
    assert assess(check, [m(F, 0), m(INC, 1)], T0).phase is Phase.INCONCLUSIVE
    assert assess(check, [m(F, 0), m(INC, 1), m(E, 2)], T0).phase is Phase.ERROR


def test_settings_defaults() -> None:
    s = settings(successCondition="true")
    assert (s.count, s.interval, s.failure_limit, s.inconclusive_limit, s.consecutive_error_limit) == (1, None, 0, 0, 4)
    assert s.timeout == timedelta(seconds=30) and s.initial_delay == timedelta(0)
    assert settings(successCondition="true", timeout="1.5s").timeout == timedelta(seconds=1.5)
