"""The name checks a managed cluster makes when the work agent creates an object (pure).

Two layers refuse a bad name, with their own words:

- the client (client-go) refuses a name or namespace that cannot be a URL path segment
  (``.``, ``..``, or containing ``/`` or ``%``) before sending anything:
  ``invalid resource name "a/b": [may not contain '/']``;
- kube-apiserver validates ``metadata.name`` by kind and answers 422 Invalid:
  ``ConfigMap "Not_Valid!" is invalid: metadata.name: Invalid value: "Not_Valid!": a lowercase
  RFC 1123 subdomain must consist of ...``. Most kinds need an RFC 1123 subdomain; Namespaces
  and StatefulSets an RFC 1123 label, Services an RFC 1035 label; RBAC kinds only a path
  segment (so ``system:aggregate-to-admin`` is fine); a CronJob name is limited to 52
  characters (its Jobs append a suffix).

The messages are kube-apiserver's (k8s.io/apimachinery ``util/validation``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = _LABEL + "(\\." + _LABEL + ")*"
_DNS1035 = "[a-z]([-a-z0-9]*[a-z0-9])?"
_LABEL_RE = re.compile("^" + _LABEL + "$")
_SUBDOMAIN_RE = re.compile("^" + _SUBDOMAIN + "$")
_DNS1035_RE = re.compile("^" + _DNS1035 + "$")

LABEL_MAX = 63
SUBDOMAIN_MAX = 253
CRONJOB_NAME_MAX = 52

_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character"
)
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character"
)


def _regex_error(message: str, pattern: str, *examples: str) -> str:
    shown = " or ".join(f"'{example}', " for example in examples)  # Go's RegexError: "'a',  or 'b', "
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


def _too_long(limit: int) -> str:
    return f"must be no more than {limit} characters"


def dns1123_label(value: str) -> list[str]:
    errors = [_too_long(LABEL_MAX)] if len(value) > LABEL_MAX else []
    if not _LABEL_RE.match(value):
        if _SUBDOMAIN_RE.match(value):
            errors.append("must not contain dots")
        else:
            errors.append(_regex_error(_LABEL_MSG, _LABEL, "my-name", "123-abc"))
    return errors


def dns1123_subdomain(value: str) -> list[str]:
    errors = [_too_long(SUBDOMAIN_MAX)] if len(value) > SUBDOMAIN_MAX else []
    if not _SUBDOMAIN_RE.match(value):
        errors.append(_regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN, "example.com"))
    return errors


def dns1035_label(value: str) -> list[str]:
    errors = [_too_long(LABEL_MAX)] if len(value) > LABEL_MAX else []
    if not _DNS1035_RE.match(value):
        errors.append(_regex_error(_DNS1035_MSG, _DNS1035, "my-name", "abc-123"))
    return errors


def path_segment(value: str) -> list[str]:
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in value]


def _cronjob(value: str) -> list[str]:
    errors = dns1123_subdomain(value)
    return [*errors, _too_long(CRONJOB_NAME_MAX)] if len(value) > CRONJOB_NAME_MAX else errors


_RBAC = "rbac.authorization.k8s.io"
NAME_RULES: dict[tuple[str, str], Callable[[str], list[str]]] = {
    ("", "Namespace"): dns1123_label,
    ("", "Service"): dns1035_label,
    ("apps", "StatefulSet"): dns1123_label,
    ("batch", "CronJob"): _cronjob,
    (_RBAC, "Role"): path_segment,
    (_RBAC, "RoleBinding"): path_segment,
    (_RBAC, "ClusterRole"): path_segment,
    (_RBAC, "ClusterRoleBinding"): path_segment,
}


def name_errors(group: str, kind: str, name: str) -> list[str]:
    """kube-apiserver's complaints about ``name`` for an object of this kind (empty: valid)."""
    return NAME_RULES.get((group, kind), dns1123_subdomain)(name)


def go_quote(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def invalid_name(group_kind: str, name: str, errors: list[str]) -> str:
    """The message of the 422 Invalid a bad ``metadata.name`` gets."""
    causes = [f"metadata.name: Invalid value: {go_quote(name)}: {error}" for error in errors]
    summary = causes[0] if len(causes) == 1 else "[" + ", ".join(causes) + "]"
    return f"{group_kind} {go_quote(name)} is invalid: {summary}"


def client_refusal(name: str, namespace: str) -> str | None:
    """client-go's error for a name or namespace it cannot put in a URL, if any."""
    for what, value in (("namespace", namespace), ("resource name", name)):
        errors = path_segment(value) if value else []
        if errors:
            return f"invalid {what} {go_quote(value)}: [{' '.join(errors)}]"
    return None
