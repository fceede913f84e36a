"""cel-go's optional types in celSelector (docs/behaviour/scheduling.md §3: the environment declares them).

The syntax (``x.?f``, ``x[?k]``, ``[?e]``, ``{?k: v}``), the functions (``optional.of``,
``optional.ofNonZeroValue``, ``optional.none``, ``optional.unwrap``, ``hasValue``, ``value``,
``or``, ``orValue``, ``first``, ``last``, ``unwrapOpt``) and the macros (``optMap``,
``optFlatMap``), evaluated as cel-go evaluates them, and the misuses cel-go's type check
rejects reported as compile errors (PlacementMisconfigured), never as a silent no match.
"""

from __future__ import annotations

from typing import Any

import pytest

from ocm_rollout.api.cluster_v1 import ManagedClusterVersion
from ocm_rollout.controllers.placement.cel import CelCompileError, CelSelector, compile_all, to_cel
from tests.unit.test_sched_builders import cluster, misconfigured, placement, plain, run, satisfied, world

CLUSTER = {
    "metadata": {"name": "c1", "labels": {"env": "prod", "zone": ""}},
    "status": {"version": {"kubernetes": "v1.29.1"}, "clusterClaims": [{"name": "region", "value": "eu"}]},
}
BARE = {"metadata": {"name": "c2"}}  # no labels, no status: the JSON form leaves them out


def matches(expr: str, value: dict[str, Any] = CLUSTER) -> bool:
    return CelSelector(compile_all([expr]), lambda c, r: None).matches(to_cel(value))


def compile_error(expr: str) -> str:
    with pytest.raises(CelCompileError) as info:
        compile_all([expr])
    return str(info.value)


# --------------------------------------------------------------------------------------------
# Index and field selection
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "on_cluster", "on_bare"),
    [
        # [?key] on a map: present, present but empty, absent; and on an absent map (viral).
        ('managedCluster.metadata.labels[?"env"].orValue("") == "prod"', True, False),
        ('managedCluster.metadata.labels[?"env"].hasValue()', True, False),
        ('managedCluster.metadata.labels[?"zone"].hasValue()', True, False),
        ('managedCluster.metadata.labels[?"zone"].orValue("none") == ""', True, False),
        ('managedCluster.metadata.labels[?"team"].orValue("none") == "none"', True, False),
        ('!managedCluster.metadata.labels[?"team"].hasValue()', True, False),
        ('managedCluster.?metadata.?labels[?"env"].orValue("none") == "prod"', True, False),
        ('managedCluster.?metadata.?labels[?"env"].orValue("none") == "none"', False, True),
        # .?field, chained
        ('managedCluster.?status.?version.orValue({}) == {"kubernetes": "v1.29.1"}', True, False),
        ('managedCluster.?status.?version.?kubernetes.orValue("") == "v1.29.1"', True, False),
        ('managedCluster.?status.?version.?kubernetes.orValue("") == ""', False, True),
        ('managedCluster.?status.?version.?kubernetes.orValue("").startsWith("v1.")', True, False),
        ('!managedCluster.?status.?version.hasValue()', False, True),
        # after the first optional selection, plain selections and indexes are optional too
        ('managedCluster.?status.version.kubernetes == optional.of("v1.29.1")', True, False),
        ('managedCluster.?status.version.kubernetes == optional.none()', False, True),
        ('managedCluster.?status.clusterClaims[0].value.orValue("") == "eu"', True, False),
        ('managedCluster.?status.clusterClaims[0].value.orValue("none") == "none"', False, True),
        # .? on a field that holds a value without fields is optional.none()
        ('managedCluster.metadata.?name.?first == optional.none()', True, True),
        ('managedCluster.metadata.?name == optional.of(managedCluster.metadata.name)', True, True),
        # [?index] on a list: in range, out of range, negative, a whole double
        ('managedCluster.?status.?clusterClaims[?0].name.orValue("") == "region"', True, False),
        ('!managedCluster.?status.?clusterClaims[?1].hasValue()', True, True),
        ('[1, 2, 3][?0] == optional.of(1) && [1, 2, 3][?2].value() == 3', True, True),
        ('![1, 2, 3][?3].hasValue() && ![1, 2, 3][?-1].hasValue()', True, True),
        ('[1, 2, 3][?1.0].value() == 2 && [1, 2, 3][?1u].value() == 2', True, True),
        # [?key] on map literals
        ('{"a": 1}[?"a"].value() == 1 && {"a": 1}[?"b"] == optional.none()', True, True),
        ('{1: "x"}[?1u].value() == "x" && !{1: "x"}[?true].hasValue()', True, True),
        # has() through an optional selection
        ("has(managedCluster.?status.version)", True, False),
        ("!has(managedCluster.?status.nothing)", True, True),
    ],
)
def test_select_and_index(expr: str, on_cluster: bool, on_bare: bool) -> None:
    assert (matches(expr), matches(expr, BARE)) == (on_cluster, on_bare)


# --------------------------------------------------------------------------------------------
# Functions and macros
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expr",
    [
        "optional.of(1).hasValue() && optional.of(1).value() == 1",
        "!optional.none().hasValue()",
        "optional.none() == optional.none()",
        "optional.of(1) != optional.none() && optional.none() != optional.of(1)",
        "optional.of(1) == optional.of(1.0) && optional.of(1) != optional.of(2)",
        "optional.of(optional.none()).hasValue()",
        "optional.none().orValue(7) == 7 && optional.of(1).orValue(7) == 1",
        "optional.none().or(optional.of(2)).value() == 2",
        "optional.of(1).or(optional.of(2)) == optional.of(1)",
        "optional.none().or(optional.none()) == optional.none()",
        "optional.none().or(optional.none()).or(optional.of(3)).value() == 3",
        # or and orValue evaluate their argument only when needed
        "optional.of(1).or(optional.of(1 / 0)).value() == 1",
        "optional.of('a').orValue(1 / 0) == 'a'",
        'optional.ofNonZeroValue("") == optional.none() && optional.ofNonZeroValue("x").value() == "x"',
        "optional.ofNonZeroValue(0) == optional.none() && optional.ofNonZeroValue(0.0) == optional.none()",
        "optional.ofNonZeroValue(false) == optional.none() && optional.ofNonZeroValue(null) == optional.none()",
        "optional.ofNonZeroValue([]) == optional.none() && optional.ofNonZeroValue({}) == optional.none()",
        "optional.ofNonZeroValue([0]).hasValue() && optional.ofNonZeroValue(1u).hasValue()",
        'managedCluster.?metadata.labels.optMap(l, l.size()).orValue(0) == 2',
        "optional.none().optMap(x, x + 1) == optional.none()",
        'optional.of({"k": {"s": 1}}).optFlatMap(m, m.?k.?s) == optional.of(1)',
        'optional.of({"k": {}}).optFlatMap(m, m.?k.?s) == optional.none()',
        "[1, 2, 3].first() == optional.of(1) && [1, 2, 3].last() == optional.of(3)",
        "[].first() == optional.none() && [].last() == optional.none()",
        "optional.unwrap([optional.of(1), optional.none(), optional.of(3)]) == [1, 3]",
        "[optional.none(), optional.of(2)].unwrapOpt() == [2]",
        "type(optional.none()) == optional_type && type(optional.of(1)) == optional_type",
        "dyn(optional.of(1)).value() == 1",
        # optional elements and entries in literals
        "[?optional.none(), 1, ?optional.of(2)] == [1, 2]",
        '{?"a": optional.none(), "b": 1, ?"c": optional.of(3)} == {"b": 1, "c": 3}',
        '[?managedCluster.metadata.labels[?"env"], ?managedCluster.metadata.labels[?"team"]] == ["prod"]',
        '{?"v": managedCluster.?status.?version.?kubernetes}.v == "v1.29.1"',
        # cel-go also accepts a trailing comma in list and map literals
        '[1, 2,] == [1, 2] && {"a": 1,} == {"a": 1}',
    ],
)
def test_expression_is_true(expr: str) -> None:
    assert matches(expr) is True


@pytest.mark.parametrize(
    "expr",
    [
        "optional.none().value() == 1",  # optional.none() dereference
        '[1, 2][?"a"].hasValue()',  # a string index into a list
        "[1, 2][?1.5].hasValue()",  # a fraction index into a list
        "[1].?a.hasValue()",  # a field of a list
        "managedCluster.metadata.or(optional.of(1)).hasValue()",  # or() on a value that is not optional
        "managedCluster.metadata.orValue(1) == 1",
        "managedCluster.metadata.hasValue()",
        "optional.unwrap([1]) == [1]",  # not a list of optionals
        "[?managedCluster.metadata.name] == []",  # an optional element that is not optional
        "optional.none().or(optional.of(1 / 0)).hasValue()",  # the argument runs when needed
    ],
)
def test_evaluation_errors_do_not_match(expr: str) -> None:
    assert matches(expr) is False


def test_an_optional_result_is_not_a_boolean() -> None:
    assert matches("optional.of(true)") is False
    assert matches("optional.of(true).value()") is True


# --------------------------------------------------------------------------------------------
# Compile errors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        # what cel-go's type check rejects: an optional where a plain value is needed
        ('managedCluster.metadata.labels[?"env"] == "prod"', "found no matching overload for '_==_' applied to '(optional_type, string)'"),
        ('managedCluster.?metadata.name.startsWith("c")', "found no matching overload for 'startsWith'"),
        ("size(managedCluster.?metadata)", "found no matching overload for 'size'"),
        ("!managedCluster.?metadata", "found no matching overload for '!_'"),
        ("managedCluster.?metadata && true", "found no matching overload for '_&&_'"),
        ("managedCluster.?spec.x + 1 > 2", "found no matching overload for '_+_'"),
        ("managedCluster.?spec < 1", "found no matching overload for '_<_'"),
        ("managedCluster.?spec ? true : false", "found no matching overload for '_?_:_'"),
        ("managedCluster.?spec.all(x, true)", "cannot be range of a comprehension"),
        ('"prod".orValue("")', "found no matching overload for 'orValue' applied to 'string.(string)'"),
        ("[1].hasValue()", "found no matching overload for 'hasValue'"),
        ("optional.none().or(1)", "found no matching overload for 'or'"),
        ("[?1]", "expected type 'optional_type(int)' but found 'int'"),
        ('{?"a": "x"}', "expected type 'optional_type(string)' but found 'string'"),
        # arity and macro shape
        ("optional.none(1).hasValue()", "found no matching overload for 'optional.none' applied to 1 argument"),
        ("optional.of().hasValue()", "found no matching overload for 'optional.of' applied to 0 arguments"),
        ("optional.of(1).value(2) == 1", "found no matching overload for 'value' applied to 1 argument"),
        ("optional.of(1).optMap(1, 2).hasValue()", "optMap() variable name must be a simple identifier"),
        # names and syntax
        ("optional.maybe(1).hasValue()", "undeclared reference to 'optional'"),
        ("optional == 1", "undeclared reference to 'optional'"),
        ("has(managedCluster.?metadata)", "invalid argument to has() macro"),
        ("managedCluster.?", "Syntax error: mismatched input '<EOF>'"),
        ("managedCluster.metadata.labels[?]", "Syntax error: mismatched input ']'"),
        ("managedCluster.metadata.?`env`", "Syntax error"),
    ],
)
def test_compile_errors(expr: str, fragment: str) -> None:
    message = compile_error(expr)
    assert message.startswith("compilation failed: ERROR: <input>:1:"), message
    assert fragment in message, message


def test_comparing_an_optional_with_data_compiles_as_in_cel_go() -> None:
    # managedCluster's fields are dyn, and dyn may be compared with an optional.
    assert matches('managedCluster.metadata.labels[?"env"] == managedCluster.metadata.name') is False
    assert matches('managedCluster.metadata.labels[?"env"] == optional.of(managedCluster.metadata.labels.env)') is True


def test_syntax_error_points_at_the_column() -> None:
    assert compile_error("managedCluster.metadata.labels[?]").endswith(
        " | managedCluster.metadata.labels[?]\n | " + "." * 32 + "^"
    )


# --------------------------------------------------------------------------------------------
# Through a full scheduling pass
# --------------------------------------------------------------------------------------------


def fleet() -> list[Any]:
    tagged = cluster("prod-new", {"env": "prod"})
    tagged.status.version = ManagedClusterVersion(kubernetes="v1.30.2")
    old = cluster("prod-old", {"env": "prod"})
    old.status.version = ManagedClusterVersion(kubernetes="v1.27.0")
    return [tagged, old, cluster("dev", {"env": "dev"}), cluster("bare")]


def cel_placement(*expressions: str) -> Any:
    return placement(predicates=[{"requiredClusterSelector": {"celSelector": {"celExpressions": list(expressions)}}}])


@pytest.mark.parametrize(
    ("expressions", "selected"),
    [
        (['managedCluster.metadata.labels[?"env"].orValue("") == "prod"'], ["prod-new", "prod-old"]),
        # labels is absent from "bare": selecting it is an error, as in cel-go ([?] is optional
        # from there on, not before)
        (['managedCluster.metadata.labels[?"env"].orValue("none") != "prod"'], ["dev"]),
        (['managedCluster.metadata.?labels[?"env"].orValue("none") != "prod"'], ["bare", "dev"]),
        (['!managedCluster.?metadata.?labels.hasValue()'], ["bare"]),
        (
            [
                'managedCluster.?metadata.?labels[?"env"].orValue("") == "prod"',
                'semver(managedCluster.?status.?version.?kubernetes.orValue("v0.0.0"), true).isGreaterThan(semver("1.28.0"))',
            ],
            ["prod-new"],
        ),
        (['managedCluster.?status.?version.?kubernetes.optMap(v, v.startsWith("v1.2")).orValue(false)'], ["prod-old"]),
        (['optional.none().orValue(true)'], ["bare", "dev", "prod-new", "prod-old"]),
    ],
)
def test_schedule_selects_with_optional_expressions(expressions: list[str], selected: list[str]) -> None:
    result = run(cel_placement(*expressions), world(fleet()))
    assert misconfigured(result)[0] == "False"
    assert sorted(result.selected) == selected


def test_schedule_reports_a_mistyped_optional_comparison_as_misconfigured() -> None:
    result = run(cel_placement('managedCluster.metadata.labels[?"env"] == "prod"'), world(plain(2)))
    status, reason, message = misconfigured(result)
    assert (status, reason) == ("True", "Misconfigured")
    assert message.startswith("Predicate:compilation failed: ERROR: <input>:1:1: found no matching overload for '_==_'")
    assert satisfied(result)[:2] == ("False", "NoManagedClusterMatched")
