"""RBAC (`rbac.authorization.k8s.io/v1` Role, RoleBinding, ClusterRole, ClusterRoleBinding) and
`v1` ServiceAccount, served as kube-apiserver serves them.

What kube-apiserver does and the hub does too:
- names: RBAC objects need only be a path segment (`system:aggregate-to-admin` is fine), a
  ServiceAccount an RFC 1123 subdomain;
- defaults: a binding's `roleRef.apiGroup`, and a User or Group subject's `apiGroup`, default to
  `rbac.authorization.k8s.io`;
- validation (k8s.io/kubernetes pkg/apis/rbac/validation): every rule needs verbs; a resource
  rule needs apiGroups and resources; a non-resource rule (ClusterRoles only) names no
  resources; an aggregationRule needs at least one valid clusterRoleSelector; a binding's roleRef
  names a Role or ClusterRole (a ClusterRoleBinding: a ClusterRole) of this API group, and each
  subject is a ServiceAccount (with a namespace in a ClusterRoleBinding), User or Group;
  `roleRef` cannot change (422);
- a PUT of a missing RBAC object creates it (AllowCreateOnUpdate), not of a ServiceAccount;
- table columns: roles show NAME and CREATED AT (kube-apiserver's default table), bindings
  NAME, ROLE, AGE and, wide, USERS, GROUPS, SERVICEACCOUNTS; ServiceAccounts NAME, SECRETS, AGE.

The hub authorizes every authenticated request; these objects are stored and served, not
enforced (see sandbox/README.md).
"""

from __future__ import annotations

from typing import Any

from ocm_rollout.sandbox.agents.objectnames import dns1123_subdomain, path_segment
from ocm_rollout.sandbox.builtin_common import (
    LABEL_SELECTOR,
    STRING_LIST,
    B,
    S,
    array,
    column,
    get_path,
    kind_type,
    obj,
)
from ocm_rollout.sandbox.resources import Column, ResourceType
from ocm_rollout.sandbox.selectors import label_key_error, label_value_error
from ocm_rollout.sandbox.strategy import (
    Cause,
    KindStrategy,
    as_dict,
    as_list,
    forbidden,
    invalid,
    not_supported,
    required,
)
from ocm_rollout.sandbox.table import age_column, name_column

GROUP = "rbac.authorization.k8s.io"

POLICY_RULE = obj(
    verbs=STRING_LIST, apiGroups=STRING_LIST, resources=STRING_LIST, resourceNames=STRING_LIST,
    nonResourceURLs=STRING_LIST,
)
RULES = array(POLICY_RULE)
SUBJECTS = array(obj(kind=S, apiGroup=S, name=S, namespace=S))
ROLE_REF = obj(apiGroup=S, kind=S, name=S)
OBJECT_REFERENCE = obj(apiVersion=S, fieldPath=S, kind=S, name=S, namespace=S, resourceVersion=S, uid=S)


# validation ---------------------------------------------------------------------------------------


def _policy_rule(rule: dict[str, Any], namespaced: bool, where: str) -> list[Cause]:
    causes: list[Cause] = []
    if not as_list(rule.get("verbs")):
        causes.append(required(f"{where}.verbs", "verbs must contain at least one value"))
    urls = as_list(rule.get("nonResourceURLs"))
    if urls:
        if namespaced:
            causes.append(invalid(f"{where}.nonResourceURLs", urls, "namespaced rules cannot apply to non-resource URLs"))
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            causes.append(
                invalid(f"{where}.nonResourceURLs", urls, "rules cannot apply to both regular resources and non-resource URLs")
            )
        return causes
    if not as_list(rule.get("apiGroups")):
        causes.append(required(f"{where}.apiGroups", "resource rules must supply at least one api group"))
    if not as_list(rule.get("resources")):
        causes.append(required(f"{where}.resources", "resource rules must supply at least one resource"))
    return causes


def _rules(o: dict[str, Any], namespaced: bool) -> list[Cause]:
    causes: list[Cause] = []
    for i, rule in enumerate(as_list(o.get("rules"))):
        causes.extend(_policy_rule(as_dict(rule), namespaced, f"rules[{i}]"))
    return causes


_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def _label_selector(selector: dict[str, Any], where: str) -> list[Cause]:
    """metav1 validation.ValidateLabelSelector."""
    causes: list[Cause] = []
    for i, expr in enumerate(as_list(selector.get("matchExpressions"))):
        e = as_dict(expr)
        at = f"{where}.matchExpressions[{i}]"
        op = e.get("operator")
        values = as_list(e.get("values"))
        if op in ("In", "NotIn") and not values:
            causes.append(required(f"{at}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist") and values:
            causes.append(forbidden(f"{at}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        elif op not in _OPERATORS:
            causes.append(invalid(f"{at}.operator", op or "", "not a valid selector operator"))
        why = label_key_error(str(e.get("key") or ""))
        if why:
            causes.append(invalid(f"{at}.key", e.get("key") or "", why))
    for key, value in as_dict(selector.get("matchLabels")).items():
        why = label_key_error(key)
        if why:
            causes.append(invalid(f"{where}.matchLabels", key, why))
        why = label_value_error(str(value))
        if why:
            causes.append(invalid(f"{where}.matchLabels", value, why))
    return causes


def _subject(subject: dict[str, Any], namespaced: bool, where: str) -> list[Cause]:
    causes: list[Cause] = []
    name = subject.get("name") or ""
    if not name:
        causes.append(required(f"{where}.name"))
    kind = subject.get("kind") or ""
    api_group = subject.get("apiGroup") or ""
    if kind == "ServiceAccount":
        if name:
            causes.extend(invalid(f"{where}.name", name, msg) for msg in dns1123_subdomain(name))
        if api_group:
            causes.append(not_supported(f"{where}.apiGroup", api_group, [""]))
        if not namespaced and not subject.get("namespace"):
            causes.append(required(f"{where}.namespace"))
    elif kind in ("User", "Group"):
        if api_group != GROUP:
            causes.append(not_supported(f"{where}.apiGroup", api_group, [GROUP]))
    else:
        causes.append(not_supported(f"{where}.kind", kind, ["ServiceAccount", "User", "Group"]))
    return causes


def _go_role_ref(ref: dict[str, Any]) -> str:
    """A RoleRef as Go's %#v shows it in the 'cannot change roleRef' error."""
    return (
        f'rbac.RoleRef{{APIGroup:"{ref.get("apiGroup") or ""}", Kind:"{ref.get("kind") or ""}", '
        f'Name:"{ref.get("name") or ""}"}}'
    )


def _binding(o: dict[str, Any], old: dict[str, Any] | None, namespaced: bool) -> list[Cause]:
    causes: list[Cause] = []
    ref = as_dict(o.get("roleRef"))
    if (ref.get("apiGroup") or "") != GROUP:
        causes.append(not_supported("roleRef.apiGroup", ref.get("apiGroup") or "", [GROUP]))
    kinds = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]
    if (ref.get("kind") or "") not in kinds:
        causes.append(not_supported("roleRef.kind", ref.get("kind") or "", kinds))
    name = ref.get("name") or ""
    if not name:
        causes.append(required("roleRef.name"))
    else:
        causes.extend(invalid("roleRef.name", name, msg) for msg in path_segment(name))
    for i, subject in enumerate(as_list(o.get("subjects"))):
        causes.extend(_subject(as_dict(subject), namespaced, f"subjects[{i}]"))
    if old is not None:
        before = as_dict(old.get("roleRef"))
        fields = ("apiGroup", "kind", "name")
        if any((ref.get(k) or "") != (before.get(k) or "") for k in fields):
            causes.append(invalid("roleRef", ref, "cannot change roleRef", shown=_go_role_ref(ref)))
    return causes


# strategies ---------------------------------------------------------------------------------------


class _Rbac(KindStrategy):
    def name_errors(self, name: str) -> list[str] | None:
        return path_segment(name)


class RoleStrategy(_Rbac):
    def __init__(self, namespaced: bool) -> None:
        self.namespaced = namespaced

    def validate(self, new: dict[str, Any], old: dict[str, Any] | None, subresource: str | None) -> list[Cause]:
        causes = _rules(new, self.namespaced)
        if not self.namespaced and "aggregationRule" in new and new["aggregationRule"] is not None:
            selectors = as_list(as_dict(new["aggregationRule"]).get("clusterRoleSelectors"))
            if not selectors:
                causes.append(
                    required(
                        "aggregationRule.clusterRoleSelectors",
                        "at least one clusterRoleSelector required if aggregationRule is non-nil",
                    )
                )
            for i, selector in enumerate(selectors):
                causes.extend(_label_selector(as_dict(selector), f"aggregationRule.clusterRoleSelectors[{i}]"))
        return causes


class BindingStrategy(_Rbac):
    def __init__(self, namespaced: bool) -> None:
        self.namespaced = namespaced

    def default(self, obj_: dict[str, Any]) -> None:
        ref = obj_.get("roleRef")
        if isinstance(ref, dict) and not ref.get("apiGroup"):
            obj_["roleRef"] = {**ref, "apiGroup": GROUP}
        subjects = obj_.get("subjects")
        if isinstance(subjects, list):
            out = []
            for s in subjects:
                if isinstance(s, dict) and not s.get("apiGroup") and s.get("kind") in ("User", "Group"):
                    s = {**s, "apiGroup": GROUP}
                out.append(s)
            obj_["subjects"] = out

    def validate(self, new: dict[str, Any], old: dict[str, Any] | None, subresource: str | None) -> list[Cause]:
        return _binding(new, old, self.namespaced)


class ServiceAccountStrategy(KindStrategy):
    pass


# table columns ------------------------------------------------------------------------------------


def _created_at() -> Column:
    """kube-apiserver's default table column (kinds without a printer, such as roles)."""
    return column(
        "Created At",
        "metadata.creationTimestamp",
        "date",
        description="CreationTimestamp is a timestamp representing the server time when this object was created.",
    )


def _subjects_of(o: dict[str, Any], kind: str) -> str:
    """rbac.SubjectsStrings: users, groups, or service accounts as `namespace/name`."""
    names = []
    for s in as_list(o.get("subjects")):
        s = as_dict(s)
        if s.get("kind") != kind:
            continue
        name = str(s.get("name") or "")
        if kind == "ServiceAccount" and s.get("namespace"):
            name = f"{s['namespace']}/{name}"
        names.append(name)
    return ", ".join(names)


def _binding_columns(what: str) -> list[Column]:
    return [
        name_column(),
        Column(
            "Role",
            "string",
            lambda o: f"{get_path(o, 'roleRef', 'kind') or ''}/{get_path(o, 'roleRef', 'name') or ''}",
            description="RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace.",
        ),
        age_column(),
        Column("Users", "string", lambda o: _subjects_of(o, "User"), priority=1, description=f"Users in the {what}"),
        Column("Groups", "string", lambda o: _subjects_of(o, "Group"), priority=1, description=f"Groups in the {what}"),
        Column(
            "ServiceAccounts", "string", lambda o: _subjects_of(o, "ServiceAccount"), priority=1,
            description=f"ServiceAccounts in the {what}",
        ),
    ]


def types() -> list[ResourceType]:
    return [
        kind_type(
            "",
            "ServiceAccount",
            {
                "secrets": array(OBJECT_REFERENCE),
                "imagePullSecrets": array(obj(name=S)),
                "automountServiceAccountToken": B,
            },
            [name_column(), Column("Secrets", "string", lambda o: len(as_list(o.get("secrets")))), age_column()],
            short_names=("sa",),
            strategy=ServiceAccountStrategy(),
            returns_deleted_object=True,
        ),
        kind_type(
            GROUP,
            "Role",
            {"rules": RULES},
            [name_column(), _created_at()],
            strategy=RoleStrategy(True),
            allow_create_on_update=True,
        ),
        kind_type(
            GROUP,
            "ClusterRole",
            {"rules": RULES, "aggregationRule": obj(clusterRoleSelectors=array(LABEL_SELECTOR))},
            [name_column(), _created_at()],
            namespaced=False,
            strategy=RoleStrategy(False),
            allow_create_on_update=True,
        ),
        kind_type(
            GROUP,
            "RoleBinding",
            {"subjects": SUBJECTS, "roleRef": ROLE_REF},
            _binding_columns("roleBinding"),
            strategy=BindingStrategy(True),
            allow_create_on_update=True,
        ),
        kind_type(
            GROUP,
            "ClusterRoleBinding",
            {"subjects": SUBJECTS, "roleRef": ROLE_REF},
            _binding_columns("clusterRoleBinding"),
            namespaced=False,
            strategy=BindingStrategy(False),
            allow_create_on_update=True,
        ),
    ]
