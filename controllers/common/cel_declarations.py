"""What OCM's CEL environment declares: its variable, type names, macros and functions.

Names flow from here into the parser (which calls are ``optional.*`` functions), the
compile-time checks (what an identifier or a call may name, with how many arguments) and the
evaluator (which macros celpy runs itself). The Kubernetes library functions are the ones
``cel_library`` implements, called the way it says.

Pure: no I/O.
"""

from __future__ import annotations

from ocm_rollout.controllers.common import cel_library

VARIABLE = "managedCluster"

# Identifiers that name types (usable as values, e.g. ``type(x) == string``).
TYPE_IDENTS = frozenset(
    {"int", "uint", "double", "string", "bool", "bytes", "list", "map", "null_type", "type", "dyn", "optional_type"}
)
# The macros cel-go's optional types add: ``x.optMap(v, e)``, ``x.optFlatMap(v, e)``.
OPTIONAL_MACROS = frozenset({"optMap", "optFlatMap"})
# Every declared macro (called as a method), with the numbers of arguments it takes.
MACROS: dict[str, tuple[int, ...]] = {
    "all": (2,), "exists": (2,), "exists_one": (2,), "filter": (2,), "map": (2, 3),
    **{name: (2,) for name in OPTIONAL_MACROS},
}  # fmt: skip
# The macros celpy evaluates itself (they iterate their receiver).
CELPY_MACROS = frozenset({"all", "exists", "exists_one", "filter", "map", "reduce", "min"})

# Functions of cel-go's optional types, with the number of arguments their one overload takes.
OPTIONAL_GLOBALS = {"optional.of": 1, "optional.ofNonZeroValue": 1, "optional.none": 0, "optional.unwrap": 1}
OPTIONAL_MEMBERS = {"hasValue": 0, "value": 0, "or": 1, "orValue": 1, "first": 0, "last": 0, "unwrapOpt": 0}

GLOBAL_FUNCTIONS = frozenset(
    {
        # standard
        "size", "int", "uint", "double", "string", "bytes", "bool", "type", "dyn", "duration",
        "timestamp", "matches",
        # Kubernetes libraries, optional types
        *cel_library.global_functions(),
        *OPTIONAL_GLOBALS,
    }
)  # fmt: skip
MEMBER_FUNCTIONS = frozenset(
    {
        # standard
        "size", "contains", "startsWith", "endsWith", "matches", "getDate", "getDayOfMonth",
        "getDayOfWeek", "getDayOfYear", "getFullYear", "getMonth", "getHours", "getMilliseconds",
        "getMinutes", "getSeconds",
        # Kubernetes libraries (lists' ``min`` is evaluated by celpy), optional types
        "min",
        *cel_library.member_functions(),
        *OPTIONAL_MEMBERS,
        # OCM
        "scores", "parseJSON",
    }
)  # fmt: skip
