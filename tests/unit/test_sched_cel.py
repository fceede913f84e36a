"""The CEL environment of celSelector: checker, OCM functions and the Kubernetes libraries."""

from __future__ import annotations

import pytest

from ocm_rollout.controllers.placement.cel import CelCompileError, CelSelector, compile_all, to_cel

CLUSTER = {
    "metadata": {"name": "c1", "labels": {"env": "prod", "version": "1.2.3"}, "annotations": {"cfg": '{"n": 2, "l": ["a"]}'}},
    "status": {"version": {"kubernetes": "v1.29.1"}, "allocatable": {"memory": "16Gi", "cpu": "3500m"}},
}


def evaluate(expr: str, scores: dict[tuple[str, str], list[tuple[str, int]]] | None = None) -> bool:
    lookup = (scores or {}).get
    return CelSelector(compile_all([expr]), lambda c, r: lookup((c, r))).matches(to_cel(CLUSTER))


def compile_error(expr: str) -> str:
    with pytest.raises(CelCompileError) as info:
        compile_all([expr])
    return str(info.value)


@pytest.mark.parametrize(
    "expr",
    [
        'managedCluster.metadata.labels.env == "prod"',
        '"env" in managedCluster.metadata.labels',
        'managedCluster.metadata.labels.all(k, k.size() > 0)',
        'managedCluster.metadata.labels.exists(k, k.startsWith("ver"))',
        '[1, 2, 3].map(x, x * 2)[2] == 6',
        '[1, 2, 3].filter(x, x > 1).size() == 2',
        '[1, 2, 3].exists_one(x, x == 2)',
        'managedCluster.metadata.annotations.cfg.parseJSON().n == 2',
        'managedCluster.metadata.annotations.cfg.parseJSON().l[0] == "a"',
        'semver(managedCluster.metadata.labels.version).minor() == 2',
        'semver("1.2.3-alpha").isLessThan(semver("1.2.3"))',
        'semver("v1.29", true).compareTo(semver("1.29.0")) == 0',
        'isSemver("1.2.3") && !isSemver("1.2")',
        'quantity(managedCluster.status.allocatable.cpu).isLessThan(quantity("4"))',
        'quantity("1.5").add(quantity("500m")).isInteger()',
        'quantity("2Ki").asInteger() == 2048',
        'quantity("1.5").asApproximateFloat() == 1.5',
        'quantity("-1").sign() == -1',
        'isQuantity("10Gi") && !isQuantity("ten")',
        '"a-b-c".split("-") == ["a", "b", "c"]',
        '"Hello".upperAscii() == "HELLO" && "Hello".lowerAscii() == "hello"',
        '"  x ".trim() == "x"',
        '"abcdef".substring(1, 3) == "bc"',
        '"abc".charAt(1) == "b"',
        '"abcabc".indexOf("c") == 2 && "abcabc".lastIndexOf("c") == 5',
        '["a", "b"].join("-") == "a-b"',
        '"aaa".replace("a", "b", 2) == "bba"',
        '"%d items".format([3]) == "3 items"',
        '[1, 2, 3].isSorted() && [3, 1].sum() == 4 && [4, 2].min() == 2 && [4, 2].max() == 4',
        '[1, 2, 1].indexOf(1) == 0 && [1, 2, 1].lastIndexOf(1) == 2',
        '"x123y45".find("[0-9]+") == "123" && "x123y45".findAll("[0-9]+") == ["123", "45"]',
        'url("https://h.example:8443/p?q=1").getHostname() == "h.example"',
        'url("https://h.example/p?q=1&q=2").getQuery()["q"] == ["1", "2"]',
        'isURL("https://x") && !isURL("not a url")',
        'ip("10.0.0.1").family() == 4 && ip("::1").isLoopback()',
        'cidr("10.0.0.0/8").containsIP(ip("10.9.9.9")) && cidr("10.0.0.0/8").containsCIDR("10.1.0.0/16")',
        'cidr("10.1.2.3/8").masked() == cidr("10.0.0.0/8") && cidr("10.0.0.0/8").prefixLength() == 8',
        'isIP("1.2.3.4") && !isIP("1.2.3") && isCIDR("::/0")',
        'managedCluster.scores("s").exists(x, x.name == "cpu" && x.value == 40)',
        '1 < 1.5 && 2.0 == 2 && 3u > 2',
    ],
)
def test_expression_is_true(expr: str) -> None:
    assert evaluate(expr, {("c1", "s"): [("cpu", 40)]}) is True


@pytest.mark.parametrize(
    "expr",
    [
        "managedCluster.metadata.labels.missing == 1",
        'semver("nope").major() == 1',
        'quantity("1.5").asInteger() == 1',
        '"x".parseJSON() == 1',
        'managedCluster.scores("absent").size() == 0',
        '"abc".charAt(10) == ""',
        "1 / 0 == 1",
        "42",
    ],
)
def test_errors_and_non_booleans_do_not_match(expr: str) -> None:
    assert evaluate(expr) is False


def test_every_expression_must_be_true() -> None:
    selector = CelSelector(compile_all(["true", "false"]), lambda c, r: None)
    assert selector.matches(to_cel(CLUSTER)) is False


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ("cluster.name == 1", "undeclared reference to 'cluster'"),
        ("managedCluster.frobnicate()", "undeclared reference to 'frobnicate'"),
        ("frobnicate(1)", "undeclared reference to 'frobnicate'"),
        ("[1].all(x, y > 0)", "undeclared reference to 'y'"),
        ("[1].all(1, true)", "argument must be a simple name"),
        ("[1].map(x)", "no matching overload for 'map'"),
        ("has(managedCluster)", "invalid argument to has() macro"),
        ("managedCluster.metadata.", "Syntax error"),
        ("Foo{a: 1}", "message construction"),
        ("[1].reduce(a, x, 0, a + x)", "undeclared reference to 'reduce'"),
    ],
)
def test_compile_errors(expr: str, fragment: str) -> None:
    message = compile_error(expr)
    assert message.startswith("compilation failed: ERROR: <input>:")
    assert fragment in message


def test_compile_error_points_at_column() -> None:
    assert compile_error("managedCluster.x == y").endswith(" | managedCluster.x == y\n | ....................^")


def test_macro_variable_is_scoped_to_macro() -> None:
    assert "undeclared reference to 'x'" in compile_error("[1].all(x, x > 0) && x > 0")


def test_type_names_are_declared() -> None:
    assert evaluate('type(managedCluster.metadata.name) == string') is True




def test_running_out_of_budget_is_no_match() -> None:
    selector = CelSelector(compile_all(["[1, 2, 3].all(x, x > 0)"]), lambda c, r: None)
    assert selector.matches(to_cel(CLUSTER)) is True
    assert selector.matches(to_cel(CLUSTER), budget=10) is False


def test_budget_is_shared_by_the_expressions_of_a_selector() -> None:
    one = CelSelector(compile_all(["[1, 2, 3].all(x, x > 0)"]), lambda c, r: None)
    two = CelSelector(compile_all(["[1, 2, 3].all(x, x > 0)"] * 2), lambda c, r: None)
    needed = next(b for b in range(1, 500) if one.matches(to_cel(CLUSTER), budget=b))
    assert two.matches(to_cel(CLUSTER), budget=needed) is False
    assert two.matches(to_cel(CLUSTER), budget=2 * needed) is True


def test_exhausted_budget_is_not_absorbed_by_or() -> None:
    selector = CelSelector(compile_all(["[1, 2, 3, 4, 5, 6].all(x, x > 0) || true"]), lambda c, r: None)
    assert selector.matches(to_cel(CLUSTER), budget=8) is False
