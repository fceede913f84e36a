"""api/addon_conversion: OCM's v1alpha1 <-> v1beta1 rules for the add-on kinds, lossless round
trips both ways (property tests over objects shaped by the served CRDs), the refusals, and the
ConversionReview answer."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ocm_rollout.api.addon_conversion import (
    ANNOTATION_V1ALPHA1_FIELDS,
    ANNOTATION_V1BETA1_FIELDS,
    KINDS,
    V1ALPHA1,
    V1BETA1,
    ConversionError,
    convert,
    review,
)
from ocm_rollout.api.constants import (
    ANNOTATION_V1ALPHA1_INSTALL_NAMESPACE,
    RESERVED_NO_DEFAULT_CONFIG_NAME,
)

Obj = dict[str, Any]
KUBE = "kubernetes.io/kube-apiserver-client"
ADC = {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs"}
EXAMPLES = 300
SLOW = [HealthCheck.too_slow]  # objects are big; a busy CI machine draws them slowly

# --- strategies: valid objects of each kind in each version ---------------------------------

labels = st.from_regex(r"[a-z]([-a-z0-9]{0,6}[a-z0-9])?", fullmatch=True)
texts = st.text(st.characters(codec="utf-8"), max_size=8)
hashes = st.from_regex(r"[0-9a-f]{8}", fullmatch=True)
signers = st.one_of(
    st.just(KUBE),
    st.sampled_from(["example.com/signer", "open-cluster-management.io/addon-x"]),
)


def optional(draw: st.DrawFn, out: Obj, key: str, values: st.SearchStrategy[Any]) -> None:
    """Set ``out[key]`` to a drawn value, or leave it absent."""
    if draw(st.booleans()):
        out[key] = draw(values)


def likely(draw: st.DrawFn, out: Obj, key: str, values: st.SearchStrategy[Any]) -> None:
    """As ``optional``, set three times in four (for the parts the rules are about)."""
    if draw(st.integers(0, 3)):
        out[key] = draw(values)


@st.composite
def group_resources(draw: st.DrawFn) -> Obj:
    return {
        "group": draw(st.sampled_from(["", "addon.open-cluster-management.io", "example.io"])),
        "resource": draw(st.sampled_from(["addondeploymentconfigs", "addontemplates", "configmaps"])),
    }


def unique_by_gr(items: st.SearchStrategy[Obj]) -> st.SearchStrategy[list[Obj]]:
    return st.lists(items, max_size=3, unique_by=lambda c: (c["group"], c["resource"]))


@st.composite
def referents(draw: st.DrawFn, name: st.SearchStrategy[str] = labels) -> Obj:
    out = {"name": draw(name)}
    optional(draw, out, "namespace", labels)
    return out


@st.composite
def spec_hashes(draw: st.DrawFn) -> Obj:
    return {**draw(referents()), "specHash": draw(hashes)}


@st.composite
def addon_configs(draw: st.DrawFn) -> Obj:
    return {**draw(group_resources()), **draw(referents())}


@st.composite
def metadata(draw: st.DrawFn, namespaced: bool, annotation_keys: list[str]) -> Obj:
    out: Obj = {"name": draw(labels)}
    if namespaced:
        out["namespace"] = draw(labels)
    optional(draw, out, "resourceVersion", st.integers(1, 999).map(str))
    optional(draw, out, "generation", st.integers(1, 9))
    optional(draw, out, "labels", st.dictionaries(labels, labels, max_size=2))
    optional(draw, out, "annotations", st.dictionaries(st.sampled_from(annotation_keys), texts))
    return out


ANNOTATIONS = ["a.example.io/x", "addon.open-cluster-management.io/lifecycle"]


@st.composite
def conditions(draw: st.DrawFn) -> list[Obj]:
    kinds = draw(st.lists(st.sampled_from(["Available", "Progressing"]), unique=True))
    return [
        {
            "type": kind,
            "status": draw(st.sampled_from(["True", "False", "Unknown"])),
            "reason": "R",
            "message": draw(texts),
            "lastTransitionTime": "2026-01-02T03:04:05Z",
        }
        for kind in kinds
    ]


@st.composite
def add_on_meta(draw: st.DrawFn) -> Obj:
    out: Obj = {}
    optional(draw, out, "displayName", texts)
    optional(draw, out, "description", texts)
    return out


@st.composite
def config_coordinates(draw: st.DrawFn) -> Obj:
    out: Obj = {}
    optional(draw, out, "crdName", labels)
    optional(draw, out, "crName", labels)
    optional(draw, out, "lastObservedGeneration", st.integers(1, 5))
    return out


@st.composite
def install_strategies(draw: st.DrawFn) -> Obj:
    if draw(st.booleans()):
        return {"type": "Manual"}
    placements = []
    for ref in draw(st.lists(st.tuples(labels, labels), max_size=2, unique=True)):
        placement: Obj = {"namespace": ref[0], "name": ref[1]}
        optional(draw, placement, "configs", unique_by_gr(addon_configs()))
        optional(
            draw,
            placement,
            "rolloutStrategy",
            st.sampled_from(
                [{"type": "All"}, {"type": "Progressive", "progressive": {"maxConcurrency": "25%"}}]
            ),
        )
        placements.append(placement)
    return {"type": "Placements", "placements": placements}


@st.composite
def install_progressions(draw: st.DrawFn) -> list[Obj]:
    out = []
    for ref in draw(st.lists(st.tuples(labels, labels), min_size=1, max_size=2, unique=True)):
        progression: Obj = {"namespace": ref[0], "name": ref[1]}
        references = []
        for gr in draw(unique_by_gr(group_resources())):
            reference = dict(gr)
            for key in ("desiredConfig", "lastKnownGoodConfig", "lastAppliedConfig"):
                optional(draw, reference, key, spec_hashes())
            references.append(reference)
        progression["configReferences"] = references
        optional(draw, progression, "conditions", conditions())
        out.append(progression)
    return out


@st.composite
def default_config_references(draw: st.DrawFn) -> list[Obj]:
    return [{**gr, "desiredConfig": draw(spec_hashes())} for gr in draw(unique_by_gr(group_resources()))]


@st.composite
def cma_alpha(draw: st.DrawFn) -> Obj:
    spec: Obj = {}
    optional(draw, spec, "addOnMeta", add_on_meta())
    optional(draw, spec, "addOnConfiguration", config_coordinates())
    supported = []
    for gr in draw(unique_by_gr(group_resources())):
        item = dict(gr)
        optional(draw, item, "defaultConfig", referents())
        supported.append(item)
    keep_empty: bool = draw(st.booleans())
    if supported or keep_empty:
        spec["supportedConfigs"] = supported
    optional(draw, spec, "installStrategy", install_strategies())
    out: Obj = {
        "apiVersion": V1ALPHA1,
        "kind": "ClusterManagementAddOn",
        "metadata": draw(metadata(False, ANNOTATIONS)),
        "spec": spec,
    }
    status: Obj = {}
    optional(draw, status, "defaultconfigReferences", default_config_references())
    likely(draw, status, "installProgressions", install_progressions())
    likely(draw, out, "status", st.just(status))
    return out


@st.composite
def cma_beta(draw: st.DrawFn) -> Obj:
    spec: Obj = {}
    optional(draw, spec, "addOnMeta", add_on_meta())
    defaults = []
    for gr in draw(unique_by_gr(group_resources())):
        if draw(st.booleans()):
            defaults.append({**gr, "name": RESERVED_NO_DEFAULT_CONFIG_NAME})
        else:
            defaults.append({**gr, **draw(referents())})
    keep_empty: bool = draw(st.booleans())
    if defaults or keep_empty:
        spec["defaultConfigs"] = defaults
    optional(draw, spec, "installStrategy", install_strategies())
    out: Obj = {
        "apiVersion": V1BETA1,
        "kind": "ClusterManagementAddOn",
        "metadata": draw(metadata(False, ANNOTATIONS)),
        "spec": spec,
    }
    status: Obj = {}
    optional(draw, status, "defaultConfigReferences", default_config_references())
    likely(draw, status, "installProgressions", install_progressions())
    likely(draw, out, "status", st.just(status))
    return out


@st.composite
def subjects(draw: st.DrawFn, units_key: str | None) -> Obj:
    out: Obj = {"user": draw(st.sampled_from(["", "system:addon:x", "agent"]))}
    optional(draw, out, "groups", st.lists(labels, max_size=2))
    if units_key is not None:
        optional(draw, out, units_key, st.lists(labels, max_size=2))
    return out


@st.composite
def registrations_alpha(draw: st.DrawFn) -> Obj:
    out: Obj = {"signerName": draw(signers)}
    optional(draw, out, "subject", subjects("organizationUnit"))
    return out


@st.composite
def registrations_beta(draw: st.DrawFn) -> Obj:
    if draw(st.booleans()):
        out: Obj = {"type": "kubeClient"}
        kube_client: Obj = {}
        optional(draw, kube_client, "subject", subjects(None))
        likely(draw, kube_client, "driver", st.sampled_from(["csr", "token"]))
        likely(draw, out, "kubeClient", st.just(kube_client))
        return out
    custom: Obj = {"signerName": draw(signers)}
    optional(draw, custom, "subject", subjects("organizationUnits"))
    return {"type": "customSigner", "customSigner": custom}


@st.composite
def mca_status(draw: st.DrawFn, alpha: bool) -> Obj:
    status: Obj = {}
    optional(draw, status, "conditions", conditions())
    optional(
        draw,
        status,
        "relatedObjects",
        st.lists(st.builds(lambda gr, ref: {**gr, **ref}, group_resources(), referents()), max_size=2),
    )
    optional(draw, status, "addOnMeta", add_on_meta())
    optional(draw, status, "supportedConfigs", unique_by_gr(group_resources()))
    optional(draw, status, "namespace", labels)
    optional(draw, status, "healthCheck", st.sampled_from([{}, {"mode": "Lease"}, {"mode": "Customized"}]))
    references = []
    for gr in draw(unique_by_gr(group_resources())):
        reference: Obj = {**gr, "lastObservedGeneration": draw(st.integers(0, 4))}
        optional(draw, reference, "desiredConfig", spec_hashes())
        likely(draw, reference, "lastAppliedConfig", spec_hashes())
        if alpha:  # usually the desired config's name/namespace, as OCM's controllers write it
            desired = reference.get("desiredConfig")
            if desired is not None and draw(st.booleans()):
                reference.update({k: desired[k] for k in ("name", "namespace") if k in desired})
            else:
                reference.update(draw(referents()))
        references.append(reference)
    likely(draw, status, "configReferences", st.just(references))
    if alpha:
        likely(draw, status, "registrations", st.lists(registrations_alpha(), min_size=1, max_size=3))
        optional(draw, status, "kubeClientDriver", st.sampled_from(["csr", "token"]))
        optional(draw, status, "addOnConfiguration", config_coordinates())
    else:
        likely(draw, status, "registrations", st.lists(registrations_beta(), min_size=1, max_size=3))
    return status


@st.composite
def mca_alpha(draw: st.DrawFn) -> Obj:
    spec: Obj = {}
    optional(draw, spec, "installNamespace", labels)
    optional(draw, spec, "configs", unique_by_gr(addon_configs()))
    out: Obj = {
        "apiVersion": V1ALPHA1,
        "kind": "ManagedClusterAddOn",
        # a v1alpha1 object may carry the annotation OCM uses for v1beta1 objects
        "metadata": draw(metadata(True, [*ANNOTATIONS, ANNOTATION_V1ALPHA1_INSTALL_NAMESPACE])),
        "spec": spec,
    }
    likely(draw, out, "status", mca_status(True))
    return out


@st.composite
def mca_beta(draw: st.DrawFn) -> Obj:
    spec: Obj = {}
    optional(draw, spec, "configs", unique_by_gr(addon_configs()))
    meta = draw(metadata(True, ANNOTATIONS))
    if draw(st.booleans()):
        meta.setdefault("annotations", {})[ANNOTATION_V1ALPHA1_INSTALL_NAMESPACE] = draw(labels)
    out: Obj = {"apiVersion": V1BETA1, "kind": "ManagedClusterAddOn", "metadata": meta, "spec": spec}
    likely(draw, out, "status", mca_status(False))
    return out


@st.composite
def same_schema_kinds(draw: st.DrawFn, api_version: str) -> Obj:
    kind = draw(st.sampled_from(["AddOnDeploymentConfig", "AddOnTemplate"]))
    if kind == "AddOnDeploymentConfig":
        spec: Obj = {}
        optional(
            draw,
            spec,
            "customizedVariables",
            st.lists(st.builds(lambda n, v: {"name": n, "value": v}, labels, texts), max_size=2),
        )
        optional(draw, spec, "agentInstallNamespace", labels)
        optional(draw, spec, "nodePlacement", st.just({"nodeSelector": {"a": "b"}}))
    else:
        spec = {"addonName": draw(labels), "agentSpec": {"workload": {"manifests": []}}}
        optional(draw, spec, "registration", st.just([{"type": "KubeClient"}]))
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": draw(metadata(kind == "AddOnDeploymentConfig", ANNOTATIONS)),
        "spec": spec,
    }


alpha_objects = st.one_of(cma_alpha(), mca_alpha(), same_schema_kinds(V1ALPHA1))
beta_objects = st.one_of(cma_beta(), mca_beta(), same_schema_kinds(V1BETA1))


def note_rules(alpha: Obj, beta: Obj) -> None:
    """Record (``--hypothesis-show-statistics``) which rules a generated pair exercised."""
    event(alpha["kind"])
    alpha_status, beta_status = alpha.get("status", {}), beta.get("status", {})
    features = {
        "carries v1alpha1 fields": ANNOTATION_V1ALPHA1_FIELDS in beta["metadata"].get("annotations", {}),
        "carries v1beta1 fields": ANNOTATION_V1BETA1_FIELDS in alpha["metadata"].get("annotations", {}),
        "installNamespace": "installNamespace" in alpha.get("spec", {}),
        "no default config": any(
            "defaultConfig" not in c for c in alpha.get("spec", {}).get("supportedConfigs", [])
        ),
        "default config": any(
            "defaultConfig" in c for c in alpha.get("spec", {}).get("supportedConfigs", [])
        ),
        "kubeClient registration": any(
            r.get("type") == "kubeClient" for r in beta_status.get("registrations", [])
        ),
        "customSigner registration": any(
            r.get("type") == "customSigner" for r in beta_status.get("registrations", [])
        ),
        "kubeClientDriver": "kubeClientDriver" in alpha_status,
        "configReference lastAppliedConfig": any(
            "lastAppliedConfig" in r for r in alpha_status.get("configReferences", [])
        ),
        "installProgressions": bool(alpha_status.get("installProgressions")),
    }
    for name, seen in features.items():
        if seen:
            event(name)


# --- round trips ----------------------------------------------------------------------------


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(alpha_objects)
def test_v1alpha1_round_trip_is_identity(obj: Obj) -> None:
    before = copy.deepcopy(obj)
    beta = convert(obj, V1BETA1)
    assert obj == before  # the input is untouched
    assert beta["apiVersion"] == V1BETA1
    note_rules(obj, beta)
    assert convert(beta, V1ALPHA1) == obj


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(beta_objects)
def test_v1beta1_round_trip_is_identity(obj: Obj) -> None:
    before = copy.deepcopy(obj)
    alpha = convert(obj, V1ALPHA1)
    assert obj == before
    assert alpha["apiVersion"] == V1ALPHA1
    note_rules(alpha, obj)
    assert convert(alpha, V1BETA1) == obj


@settings(max_examples=EXAMPLES // 3, deadline=None, suppress_health_check=SLOW)
@given(st.one_of(alpha_objects, beta_objects))
def test_same_version_is_an_equal_copy(obj: Obj) -> None:
    out = convert(obj, obj["apiVersion"])
    assert out == obj
    assert out is not obj and out.get("metadata") is not obj.get("metadata")


@settings(max_examples=EXAMPLES // 3, deadline=None, suppress_health_check=SLOW)
@given(st.one_of(cma_beta(), mca_beta()))
def test_ocm_shaped_v1beta1_needs_no_extra_annotation(obj: Obj) -> None:
    """A v1beta1 object as OCM writes it (one driver for all kubeClient registrations, each with
    its kubeClient; no empty list or map where Go omits them) goes to v1alpha1 with nothing
    carried along."""
    registrations = obj.get("status", {}).get("registrations", [])
    kube = [r for r in registrations if r["type"] == "kubeClient"]
    drivers = {r.get("kubeClient", {}).get("driver") for r in kube}
    if len(drivers) > 1 or any("kubeClient" not in r for r in kube):
        return
    if any(r["customSigner"]["signerName"] == KUBE for r in registrations if "customSigner" in r):
        return
    if (
        any(
            c["name"] == RESERVED_NO_DEFAULT_CONFIG_NAME and "namespace" in c
            for c in obj["spec"].get("defaultConfigs", [])
        )
        or obj["spec"].get("defaultConfigs") == []
        or obj["metadata"].get("annotations") == {}
    ):
        return
    alpha = convert(obj, V1ALPHA1)
    assert ANNOTATION_V1BETA1_FIELDS not in alpha["metadata"].get("annotations", {})


def without(obj: Obj, key: str) -> Obj:
    """``obj`` without annotation ``key``, and without an annotation map or metadata left empty."""
    out = copy.deepcopy(obj)
    metadata = out.get("metadata", {})
    annotations = metadata.get("annotations", {})
    annotations.pop(key, None)
    if "annotations" in metadata and not annotations:
        del metadata["annotations"]
    if "metadata" in out and not metadata:
        del out["metadata"]
    return out


@settings(max_examples=EXAMPLES // 3, deadline=None, suppress_health_check=SLOW)
@given(st.one_of(alpha_objects, beta_objects))
def test_result_is_ocms_apart_from_the_carried_annotation(obj: Obj) -> None:
    """What the other version's readers see is exactly what OCM's rules give."""
    to_beta, to_alpha = KINDS[obj["kind"]]
    if obj["apiVersion"] == V1ALPHA1:
        got, key, ocm = convert(obj, V1BETA1), ANNOTATION_V1ALPHA1_FIELDS, to_beta
    else:
        got, key, ocm = convert(obj, V1ALPHA1), ANNOTATION_V1BETA1_FIELDS, to_alpha
    assert without(got, key) == without(ocm(copy.deepcopy(obj)), "")


@settings(max_examples=EXAMPLES // 6, deadline=None, suppress_health_check=SLOW)
@given(st.lists(st.one_of(alpha_objects, beta_objects), max_size=4), st.sampled_from([V1ALPHA1, V1BETA1]))
def test_review_converts_each_object_in_order(objects: list[Obj], desired: str) -> None:
    answer = review(conversion_review(objects, desired))["response"]
    assert answer["result"] == {"status": "Success"}
    assert answer["convertedObjects"] == [convert(o, desired) for o in objects]


# --- OCM's rules, one by one ----------------------------------------------------------------


def cma(api_version: str, spec: Obj, status: Obj | None = None, **meta: Any) -> Obj:
    out: Obj = {
        "apiVersion": api_version,
        "kind": "ClusterManagementAddOn",
        "metadata": {"name": "helloworld", **meta},
        "spec": spec,
    }
    if status is not None:
        out["status"] = status
    return out


def mca(api_version: str, spec: Obj, status: Obj | None = None, **meta: Any) -> Obj:
    out = cma(api_version, spec, status, namespace="cluster1", **meta)
    out["kind"] = "ManagedClusterAddOn"
    return out


def carried(obj: Obj, key: str) -> list[Obj]:
    return list(json.loads(obj["metadata"]["annotations"][key]))


def test_cma_default_configs_become_supported_configs() -> None:
    placement = {
        "namespace": "global",
        "name": "all",
        "configs": [{**ADC, "name": "tuned", "namespace": "global"}],
        "rolloutStrategy": {"type": "All"},
    }
    progression = {
        "namespace": "global",
        "name": "all",
        "configReferences": [
            {**ADC, "desiredConfig": {"name": "tuned", "namespace": "global", "specHash": "h1"}}
        ],
    }
    beta = cma(
        V1BETA1,
        {
            "addOnMeta": {"displayName": "Hello", "description": "says hello"},
            "defaultConfigs": [{**ADC, "name": "base", "namespace": "open-cluster-management"}],
            "installStrategy": {"type": "Placements", "placements": [placement]},
        },
        {
            "defaultConfigReferences": [{**ADC, "desiredConfig": {"name": "base", "specHash": "h0"}}],
            "installProgressions": [progression],
        },
    )
    alpha = convert(beta, V1ALPHA1)
    assert alpha == cma(
        V1ALPHA1,
        {
            "addOnMeta": {"displayName": "Hello", "description": "says hello"},
            "supportedConfigs": [
                {**ADC, "defaultConfig": {"name": "base", "namespace": "open-cluster-management"}}
            ],
            "installStrategy": {"type": "Placements", "placements": [placement]},
        },
        {
            "defaultconfigReferences": [{**ADC, "desiredConfig": {"name": "base", "specHash": "h0"}}],
            "installProgressions": [progression],
        },
    )
    assert convert(alpha, V1BETA1) == beta


def test_cma_supported_config_without_default_gets_the_reserved_name() -> None:
    alpha = cma(
        V1ALPHA1,
        {"supportedConfigs": [ADC, {"group": "", "resource": "configmaps", "defaultConfig": {"name": "c"}}]},
    )
    beta = convert(alpha, V1BETA1)
    assert beta["spec"] == {
        "defaultConfigs": [
            {**ADC, "name": RESERVED_NO_DEFAULT_CONFIG_NAME},
            {"group": "", "resource": "configmaps", "name": "c"},
        ]
    }
    assert "annotations" not in beta["metadata"]
    back = convert(beta, V1ALPHA1)
    assert back == alpha and "defaultConfig" not in back["spec"]["supportedConfigs"][0]


def test_cma_reserved_name_in_v1alpha1_is_refused() -> None:
    alpha = cma(
        V1ALPHA1,
        {
            "supportedConfigs": [
                ADC,
                {**ADC, "resource": "x", "defaultConfig": {"name": RESERVED_NO_DEFAULT_CONFIG_NAME}},
            ]
        },
    )
    with pytest.raises(ConversionError) as caught:
        convert(alpha, V1BETA1)
    assert caught.value.field == "spec.supportedConfigs[1].defaultConfig.name"
    assert str(caught.value) == f"{caught.value.field}: {caught.value.message}"
    assert "reserved" in caught.value.message


def test_cma_add_on_configuration_rides_along_in_v1beta1() -> None:
    alpha = cma(V1ALPHA1, {"addOnConfiguration": {"crdName": "a.b.io", "crName": "c"}})
    beta = convert(alpha, V1BETA1)
    assert beta["spec"] == {}
    assert carried(beta, ANNOTATION_V1ALPHA1_FIELDS) == [
        {"path": ["spec", "addOnConfiguration"], "to": {"crdName": "a.b.io", "crName": "c"}}
    ]
    assert convert(beta, V1ALPHA1) == alpha


def test_cma_reserved_name_with_namespace_in_v1beta1_rides_along() -> None:
    beta = cma(
        V1BETA1, {"defaultConfigs": [{**ADC, "name": RESERVED_NO_DEFAULT_CONFIG_NAME, "namespace": "ns"}]}
    )
    alpha = convert(beta, V1ALPHA1)
    assert alpha["spec"] == {"supportedConfigs": [ADC]}
    assert carried(alpha, ANNOTATION_V1BETA1_FIELDS) == [
        {"path": ["spec", "defaultConfigs", 0, "namespace"], "to": "ns"}
    ]
    assert convert(alpha, V1BETA1) == beta


def test_mca_install_namespace_is_an_annotation_in_v1beta1() -> None:
    alpha = mca(V1ALPHA1, {"installNamespace": "addon-ns", "configs": [{**ADC, "name": "c"}]})
    beta = convert(alpha, V1BETA1)
    assert beta["metadata"]["annotations"] == {ANNOTATION_V1ALPHA1_INSTALL_NAMESPACE: "addon-ns"}
    assert beta["spec"] == {"configs": [{**ADC, "name": "c"}]}
    assert convert(beta, V1ALPHA1) == alpha


def test_mca_annotation_becomes_install_namespace_other_annotations_stay() -> None:
    beta = mca(V1BETA1, {}, annotations={ANNOTATION_V1ALPHA1_INSTALL_NAMESPACE: "addon-ns", "team": "a"})
    alpha = convert(beta, V1ALPHA1)
    assert alpha["spec"] == {"installNamespace": "addon-ns"}
    assert alpha["metadata"]["annotations"] == {"team": "a"}
    only = mca(V1BETA1, {}, annotations={ANNOTATION_V1ALPHA1_INSTALL_NAMESPACE: "addon-ns"})
    assert "annotations" not in convert(only, V1ALPHA1)["metadata"]


def test_mca_v1alpha1_annotation_without_install_namespace_round_trips() -> None:
    alpha = mca(V1ALPHA1, {}, annotations={ANNOTATION_V1ALPHA1_INSTALL_NAMESPACE: "stale"})
    beta = convert(alpha, V1BETA1)
    assert convert(beta, V1ALPHA1) == alpha


def test_mca_registrations_typed_and_driver() -> None:
    alpha = mca(
        V1ALPHA1,
        {},
        {
            "registrations": [
                {"signerName": KUBE, "subject": {"user": "system:addon:x", "groups": ["g"]}},
                {"signerName": "example.com/s", "subject": {"user": "u", "organizationUnit": ["ou"]}},
            ],
            "kubeClientDriver": "token",
        },
    )
    beta = convert(alpha, V1BETA1)
    assert beta["status"] == {
        "registrations": [
            {
                "type": "kubeClient",
                "kubeClient": {"subject": {"user": "system:addon:x", "groups": ["g"]}, "driver": "token"},
            },
            {
                "type": "customSigner",
                "customSigner": {
                    "signerName": "example.com/s",
                    "subject": {"user": "u", "organizationUnits": ["ou"]},
                },
            },
        ]
    }
    assert "annotations" not in beta["metadata"]
    assert convert(beta, V1ALPHA1) == alpha


def test_mca_driver_goes_to_every_kube_client_registration_and_back_from_the_first() -> None:
    beta = mca(
        V1BETA1,
        {},
        {
            "registrations": [
                {"type": "customSigner", "customSigner": {"signerName": "example.com/s"}},
                {"type": "kubeClient", "kubeClient": {"driver": "csr"}},
                {"type": "kubeClient", "kubeClient": {"driver": "csr"}},
            ]
        },
    )
    alpha = convert(beta, V1ALPHA1)
    assert alpha["status"] == {
        "registrations": [{"signerName": "example.com/s"}, {"signerName": KUBE}, {"signerName": KUBE}],
        "kubeClientDriver": "csr",
    }
    assert "annotations" not in alpha["metadata"]
    assert convert(alpha, V1BETA1) == beta


def test_mca_losses_ride_along_both_ways() -> None:
    alpha = mca(
        V1ALPHA1,
        {},
        {
            "registrations": [{"signerName": KUBE, "subject": {"user": "u", "organizationUnit": ["ou"]}}],
            "addOnConfiguration": {"crdName": "x"},
        },
    )
    beta = convert(alpha, V1BETA1)
    assert beta["status"]["registrations"] == [
        {"type": "kubeClient", "kubeClient": {"subject": {"user": "u"}}}
    ]
    assert {tuple(e["path"]) for e in carried(beta, ANNOTATION_V1ALPHA1_FIELDS)} == {
        ("status", "addOnConfiguration"),
        ("status", "registrations", 0, "subject", "organizationUnit"),
    }
    assert convert(beta, V1ALPHA1) == alpha
    lonely_driver = mca(V1ALPHA1, {}, {"kubeClientDriver": "csr"})
    assert convert(convert(lonely_driver, V1BETA1), V1ALPHA1) == lonely_driver
    mixed = mca(
        V1BETA1,
        {},
        {
            "registrations": [
                {"type": "kubeClient", "kubeClient": {"driver": "token"}},
                {"type": "kubeClient"},
                {"type": "kubeClient", "kubeClient": {}},
            ]
        },
    )
    alpha_mixed = convert(mixed, V1ALPHA1)
    assert alpha_mixed["status"]["kubeClientDriver"] == "token"
    assert ANNOTATION_V1BETA1_FIELDS in alpha_mixed["metadata"]["annotations"]
    assert convert(alpha_mixed, V1BETA1) == mixed


def test_mca_config_references_name_comes_from_desired_config() -> None:
    desired = {"name": "c", "namespace": "ns", "specHash": "h"}
    beta = mca(
        V1BETA1,
        {},
        {
            "configReferences": [
                {**ADC, "lastObservedGeneration": 1, "desiredConfig": desired},
                {"group": "", "resource": "configmaps", "lastObservedGeneration": 0},
            ]
        },
    )
    alpha = convert(beta, V1ALPHA1)
    assert alpha["status"]["configReferences"] == [
        {**ADC, "lastObservedGeneration": 1, "desiredConfig": desired, "name": "c", "namespace": "ns"},
        {"group": "", "resource": "configmaps", "lastObservedGeneration": 0, "name": ""},
    ]
    assert "annotations" not in alpha["metadata"]
    assert convert(alpha, V1BETA1) == beta
    written = mca(V1ALPHA1, {}, {"configReferences": [{**ADC, "name": "old", "desiredConfig": desired}]})
    assert convert(convert(written, V1BETA1), V1ALPHA1) == written


@pytest.mark.parametrize("kind", ["AddOnDeploymentConfig", "AddOnTemplate"])
def test_same_schema_kinds_change_only_api_version(kind: str) -> None:
    obj = {"apiVersion": V1ALPHA1, "kind": kind, "metadata": {"name": "a"}, "spec": {"x": [1]}}
    assert convert(obj, V1BETA1) == {**obj, "apiVersion": V1BETA1}
    assert convert({**obj, "apiVersion": V1BETA1}, V1ALPHA1) == obj


def test_a_field_changed_since_keeps_its_new_value() -> None:
    beta = mca(
        V1BETA1,
        {},
        {
            "registrations": [
                {"type": "kubeClient", "kubeClient": {"driver": "token"}},
                {"type": "kubeClient", "kubeClient": {"driver": "csr"}},
            ]
        },
    )
    alpha = convert(beta, V1ALPHA1)
    alpha["status"]["kubeClientDriver"] = "csr"  # a v1alpha1 client changes the driver
    again = convert(alpha, V1BETA1)
    assert [r["kubeClient"]["driver"] for r in again["status"]["registrations"]] == ["csr", "csr"]


# --- refusals -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "api_version", "field"),
    [
        ({"apiVersion": V1ALPHA1, "kind": "Placement"}, V1BETA1, "kind"),
        (
            {"apiVersion": "addon.open-cluster-management.io/v2", "kind": "AddOnTemplate"},
            V1BETA1,
            "apiVersion",
        ),
        ({"apiVersion": V1ALPHA1, "kind": "AddOnTemplate"}, "v1", "apiVersion"),
        (mca(V1ALPHA1, {}, {"registrations": "x"}), V1BETA1, "status.registrations"),
        (mca(V1ALPHA1, {}, {"registrations": [1]}), V1BETA1, "status.registrations[0]"),
        (
            cma(V1ALPHA1, {"supportedConfigs": [{**ADC, "defaultConfig": "x"}]}),
            V1BETA1,
            "spec.supportedConfigs[0].defaultConfig",
        ),
        (
            mca(V1BETA1, {}, annotations={ANNOTATION_V1ALPHA1_INSTALL_NAMESPACE: 7}),
            V1ALPHA1,
            f"metadata.annotations[{ANNOTATION_V1ALPHA1_INSTALL_NAMESPACE}]",
        ),
        (mca(V1ALPHA1, {"installNamespace": ["a"]}), V1BETA1, "spec.installNamespace"),
    ],
)
def test_refused(obj: Obj, api_version: str, field: str) -> None:
    with pytest.raises(ConversionError) as caught:
        convert(obj, api_version)
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("obj", "api_version", "annotation"),
    [
        (cma(V1ALPHA1, {}, annotations={ANNOTATION_V1ALPHA1_FIELDS: "[]"}), V1BETA1, ANNOTATION_V1ALPHA1_FIELDS),
        (cma(V1BETA1, {}, annotations={ANNOTATION_V1BETA1_FIELDS: "[]"}), V1ALPHA1, ANNOTATION_V1BETA1_FIELDS),
        (cma(V1BETA1, {}, annotations={ANNOTATION_V1ALPHA1_FIELDS: "{"}), V1ALPHA1, ANNOTATION_V1ALPHA1_FIELDS),
        (cma(V1BETA1, {}, annotations={ANNOTATION_V1ALPHA1_FIELDS: '[{"path": []}]'}), V1ALPHA1, ANNOTATION_V1ALPHA1_FIELDS),
        (
            cma(V1BETA1, {}, annotations={ANNOTATION_V1ALPHA1_FIELDS: '[{"path": ["metadata", "name"]}]'}),
            V1ALPHA1,
            ANNOTATION_V1ALPHA1_FIELDS,
        ),
    ],
)
def test_a_misplaced_or_malformed_carried_annotation_is_dropped_not_refused(obj: Obj, api_version: str, annotation: str) -> None:
    """A client may write anything into an annotation: the object still converts (a stored
    object must stay readable in every version), as if the annotation were absent."""
    plain = copy.deepcopy(obj)
    del plain["metadata"]["annotations"][annotation]
    if not plain["metadata"]["annotations"]:
        del plain["metadata"]["annotations"]
    assert convert(obj, api_version) == convert(plain, api_version)


# --- ConversionReview -----------------------------------------------------------------------


def conversion_review(objects: list[Obj], desired: str) -> Obj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "desiredAPIVersion": desired,
            "objects": objects,
        },
    }


def test_review_success_in_order() -> None:
    objects = [
        mca(V1ALPHA1, {"installNamespace": "a"}),
        cma(V1ALPHA1, {"supportedConfigs": [ADC]}),
        {
            "apiVersion": V1BETA1,
            "kind": "AddOnDeploymentConfig",
            "metadata": {"name": "x", "namespace": "n"},
            "spec": {},
        },
    ]
    answer = review(conversion_review(objects, V1BETA1))
    assert answer["apiVersion"] == "apiextensions.k8s.io/v1"
    assert answer["kind"] == "ConversionReview"
    response = answer["response"]
    assert response["uid"] == "705ab4f5-6393-11e8-b7cc-42010a800002"
    assert response["result"] == {"status": "Success"}
    assert response["convertedObjects"] == [convert(o, V1BETA1) for o in objects]


def test_review_answers_in_the_version_asked() -> None:
    asked = {**conversion_review([], V1BETA1), "apiVersion": "apiextensions.k8s.io/v1beta1"}
    assert review(asked)["apiVersion"] == "apiextensions.k8s.io/v1beta1"
    assert review({**asked, "apiVersion": "x/v1"})["apiVersion"] == "apiextensions.k8s.io/v1"


def test_review_failure_names_object_and_field() -> None:
    bad = cma(
        V1ALPHA1, {"supportedConfigs": [{**ADC, "defaultConfig": {"name": RESERVED_NO_DEFAULT_CONFIG_NAME}}]}
    )
    answer = review(conversion_review([mca(V1ALPHA1, {}), bad], V1BETA1))
    response = answer["response"]
    assert response["uid"] == "705ab4f5-6393-11e8-b7cc-42010a800002"
    assert "convertedObjects" not in response
    assert response["result"]["status"] == "Failure"
    message = response["result"]["message"]
    assert "objects[1] (ClusterManagementAddOn helloworld)" in message
    assert "spec.supportedConfigs[0].defaultConfig.name" in message


def test_review_failure_for_a_bad_target_or_request() -> None:
    answer = review(conversion_review([mca(V1ALPHA1, {})], "addon.open-cluster-management.io/v9"))
    assert answer["response"] == {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "result": {
            "status": "Failure",
            "message": "request.desiredAPIVersion: cannot convert to 'addon.open-cluster-management.io/v9'",
        },
    }
    wrong_kind = review(
        conversion_review([mca(V1ALPHA1, {}), {"apiVersion": V1ALPHA1, "kind": "X"}], V1BETA1)
    )
    assert wrong_kind["response"]["result"]["message"] == "objects[1] (X): kind: cannot convert kind 'X'"
    empty = review({"request": {"uid": "u"}})
    assert empty["response"] == {
        "uid": "u",
        "result": {"status": "Failure", "message": "request.objects: expected a list"},
    }
    assert review(conversion_review([], V1BETA1))["response"]["convertedObjects"] == []
