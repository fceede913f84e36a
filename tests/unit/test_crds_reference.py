"""Our generated CRDs against OCM's own (../shared/reference/ocm-crds): same names and scope, the
same versions in the same order with the same served/storage flags, and for every served version
the same printer columns, subresources, and for every property path the same type, format, enum,
default, patterns, bounds and list/map semantics. OCM paths we do not model are listed
(informational). Skipped when the reference folder is absent."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
import yaml

from ocm_rollout.api import crdgen
from tests.unit.helpers import schema_nodes

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "ocm-crds"

pytestmark = pytest.mark.skipif(not REFERENCE.is_dir(), reason=f"{REFERENCE} is absent")

COMPARED = (
    "type",
    "format",
    "enum",
    "default",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "pattern",
    "nullable",
    "x-kubernetes-int-or-string",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
)

_NO_TYPE_DEFAULT = (
    "type has no default: the API server defaults before it validates, so a default would turn the "
    "documentation's {rolloutType: Progressive} into {type: All, rolloutType: Progressive}, which the "
    "CEL rule rejects; an unset type reads rolloutType, else All (what OCM's default gave), and the "
    "default of the whole rolloutStrategy object still sets type All"
)

_OLDER_SPELLING = (
    "rolloutType, the older spelling of type in OCM's documentation (the seed's ManifestWorkReplicaSet "
    "example), is accepted and read as type instead of being pruned (which silently rolled out to All)"
)
_CEL_COST = (
    "at most 1,000 items: each one's rolloutStrategy carries a CEL rule (rolloutType agrees with type), and "
    "kube-apiserver refuses the CRD when the rule's estimated cost times the items an unbounded list may "
    "hold exceeds its budget (docs/behaviour/limits.md)"
)
_ROLLBACK = "revision history and rollback, with OCM enhancement 229's names (not in OCM's API yet)"
_PLUGIN = (
    "rollout plugin of OCM enhancement 231 (rolloutStrategy.plugin, not in OCM's API yet); shared by "
    "ClusterManagementAddOn placements, whose strategy is the same RolloutStrategy type"
)
_CHECKS = (
    "verified rollouts (ours, issue 24): built-in feedback and metric checks a cluster must pass before "
    "it counts as succeeded, next to enhancement 231's plugin; docs/behaviour/validation.md"
)
_PROMOTION = (
    "manual promotion (ours, issue 24): decision groups that wait for `ocm-rollout rollout promote`; "
    "docs/behaviour/validation.md"
)
# Every property path under rolloutStrategy.validation / .promotion (a sub-tree OCM lacks entirely).
_CHECK_PATHS = tuple(
    f".validation{tail}"
    for tail in (
        "", ".checks", ".checks[]", ".checks[].name", ".checks[].feedback",
        ".checks[].feedback.successCondition", ".checks[].feedback.failureCondition", ".checks[].metric",
        ".checks[].metric.provider", ".checks[].metric.provider.address", ".checks[].metric.provider.name",
        ".checks[].metric.query", ".checks[].metric.successCondition", ".checks[].metric.failureCondition",
        ".checks[].metric.initialDelay", ".checks[].metric.interval", ".checks[].metric.count",
        ".checks[].metric.failureLimit", ".checks[].metric.inconclusiveLimit",
        ".checks[].metric.consecutiveErrorLimit", ".checks[].metric.timeout",
    )
)  # fmt: skip
_PROMOTION_PATHS = tuple(
    f".promotion{tail}"
    for tail in ("", ".type", ".decisionGroups", ".decisionGroups[]", ".decisionGroups[].groupName",
                 ".decisionGroups[].groupIndex")
)  # fmt: skip
_MWRS_STRATEGY = ".spec.placementRefs[].rolloutStrategy"
# ClusterManagementAddOn v1beta1 places the same cluster.open-cluster-management.io/v1alpha1
# RolloutStrategy as v1alpha1, so each of its rollout-strategy deviations holds in both versions.
_CMA_VERSIONS = ("v1alpha1", "v1beta1")
_CMA_STRATEGY = ".spec.installStrategy.placements[].rolloutStrategy"

# Deliberate differences, each with its reason, keyed by (kind, version, path, schema key).
KNOWN_DIFFERENCES: dict[tuple[str, str, str, str], str] = {
    ("ManifestWorkReplicaSet", "v1alpha1", "", "required"): (
        "spec is required: a ManifestWorkReplicaSet without placementRefs cannot do anything"
    ),
    ("ManifestWorkReplicaSet", "v1alpha1", ".spec.placementRefs[].rolloutStrategy.type", "default"): _NO_TYPE_DEFAULT,
    **{("ClusterManagementAddOn", v, f"{_CMA_STRATEGY}.type", "default"): _NO_TYPE_DEFAULT for v in _CMA_VERSIONS},
    ("ManifestWorkReplicaSet", "v1alpha1", ".spec.placementRefs", "maxItems"): _CEL_COST,
    **{("ClusterManagementAddOn", v, ".spec.installStrategy.placements", "maxItems"): _CEL_COST for v in _CMA_VERSIONS},
}

# Paths we define and OCM's CRD does not, each with its reason, keyed by (kind, version, path).
EXTRA_PATHS: dict[tuple[str, str, str], str] = {
    ("ManifestWorkReplicaSet", "v1alpha1", ".spec.placementRefs[].rolloutStrategy.rolloutType"): _OLDER_SPELLING,
    ("ManifestWorkReplicaSet", "v1alpha1", ".spec.placementRefs[].rolloutStrategy.failureStrategy"): _ROLLBACK,
    ("ManifestWorkReplicaSet", "v1alpha1", ".spec.revisionHistoryLimit"): _ROLLBACK,
    ("ManifestWorkReplicaSet", "v1alpha1", ".status.currentRevision"): _ROLLBACK,
    ("ManifestWorkReplicaSet", "v1alpha1", ".status.updateRevision"): _ROLLBACK,
    ("ManifestWorkReplicaSet", "v1alpha1", ".status.collisionCount"): _ROLLBACK,
    ("ManifestWorkReplicaSet", "v1alpha1", ".status.abortedTime"): _ROLLBACK,
    ("ManifestWorkReplicaSet", "v1alpha1", ".spec.paused"): (
        "pause and resume (ours; OCM has none): while true no work is written or deleted"
    ),
    **{("ClusterManagementAddOn", v, f"{_CMA_STRATEGY}.rolloutType"): _OLDER_SPELLING for v in _CMA_VERSIONS},
    **{("ClusterManagementAddOn", v, f"{_CMA_STRATEGY}.failureStrategy"): _ROLLBACK for v in _CMA_VERSIONS},
    **{(kind, v, f"{base}.plugin"): _PLUGIN for kind, v, base in (
        ("ManifestWorkReplicaSet", "v1alpha1", _MWRS_STRATEGY),
        *(("ClusterManagementAddOn", v, _CMA_STRATEGY) for v in _CMA_VERSIONS),
    )},
    **{(kind, v, f"{base}{tail}"): _CHECKS for kind, v, base in (
        ("ManifestWorkReplicaSet", "v1alpha1", _MWRS_STRATEGY),
        *(("ClusterManagementAddOn", v, _CMA_STRATEGY) for v in _CMA_VERSIONS),
    ) for tail in _CHECK_PATHS},
    **{(kind, v, f"{base}{tail}"): _PROMOTION for kind, v, base in (
        ("ManifestWorkReplicaSet", "v1alpha1", _MWRS_STRATEGY),
        *(("ClusterManagementAddOn", v, _CMA_STRATEGY) for v in _CMA_VERSIONS),
    ) for tail in _PROMOTION_PATHS},
}  # fmt: skip


@functools.cache
def reference_crds() -> dict[str, dict[str, Any]]:
    out = {}
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for path in sorted(REFERENCE.glob("*.yaml")):
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
        out[doc["spec"]["names"]["kind"]] = doc
    return out


OURS = {crd["spec"]["names"]["kind"]: crd for crd in crdgen.generate_crds()}
# Every (kind, version) we serve, in CRD order.
SERVED = [(kind, v["name"]) for kind in sorted(OURS) for v in OURS[kind]["spec"]["versions"]]


def pair(kind: str, version: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Our and OCM's ``spec.versions`` entry of one version of a kind."""
    ours = [v for v in OURS[kind]["spec"]["versions"] if v["name"] == version]
    theirs = [v for v in reference_crds()[kind]["spec"]["versions"] if v["name"] == version]
    assert ours, f"we do not serve {kind} {version}"
    assert theirs, f"OCM does not serve {kind} {version}"
    return ours[0], theirs[0]


def nodes(version: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return dict(schema_nodes(version["schema"]["openAPIV3Schema"]))


def facts(node: dict[str, Any], key: str) -> Any:
    value = node.get(key)
    return sorted(value or []) if key == "required" else value


@pytest.mark.parametrize("kind", sorted(OURS))
def test_names_and_scope_match_ocm(kind: str) -> None:
    ours, theirs = OURS[kind], reference_crds()[kind]
    assert ours["metadata"]["name"] == theirs["metadata"]["name"]
    assert ours["spec"]["group"] == theirs["spec"]["group"]
    assert ours["spec"]["names"] == theirs["spec"]["names"]
    assert ours["spec"]["scope"] == theirs["spec"]["scope"]


@pytest.mark.parametrize("kind", sorted(OURS))
def test_versions_served_and_stored_in_ocms_order(kind: str) -> None:
    def flags(crd: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [(v["name"], v.get("served"), v.get("storage"), v.get("deprecated", False)) for v in crd["spec"]["versions"]]

    assert flags(OURS[kind]) == flags(reference_crds()[kind])
    # OCM's CRD files carry no conversion stanza: its cluster-manager operator adds the webhook
    # to the ClusterManagementAddOn and ManagedClusterAddOn CRDs when it installs them. Ours
    # carry it for those two (the chart and `up` point it at their webhook); the others need none.
    conversion = OURS[kind]["spec"].get("conversion")
    assert reference_crds()[kind]["spec"].get("conversion") is None
    if kind in ("ClusterManagementAddOn", "ManagedClusterAddOn"):
        assert conversion is not None and conversion["strategy"] == "Webhook"
        assert conversion["webhook"]["clientConfig"]["service"]["path"] == "/convert"
    else:
        assert conversion is None


@pytest.mark.parametrize(("kind", "version"), SERVED)
def test_subresources_match_ocm(kind: str, version: str) -> None:
    ours, theirs = pair(kind, version)
    # An empty `subresources: {}` (OCM's AddOnTemplate) enables nothing: the same as none.
    assert (ours.get("subresources") or None) == (theirs.get("subresources") or None)


@pytest.mark.parametrize(("kind", "version"), SERVED)
def test_printer_columns_match_ocm(kind: str, version: str) -> None:
    ours, theirs = pair(kind, version)

    def columns(v: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [(c["name"], c["type"], c["jsonPath"], c.get("priority")) for c in v.get("additionalPrinterColumns", [])]

    assert columns(ours) == columns(theirs)


@pytest.mark.parametrize(("kind", "version"), SERVED)
def test_shared_paths_have_ocms_types_and_rules(kind: str, version: str) -> None:
    ours, theirs = (nodes(v) for v in pair(kind, version))
    differences = []
    for path in sorted(set(ours) & set(theirs)):
        for key in (*COMPARED, "required"):
            mine, ocm = facts(ours[path], key), facts(theirs[path], key)
            if mine != ocm and (kind, version, path, key) not in KNOWN_DIFFERENCES:
                differences.append(f"{path} {key}: ours={mine!r} OCM={ocm!r}")
    assert differences == []


@pytest.mark.parametrize(("kind", "version"), SERVED)
def test_we_model_no_path_ocm_lacks(kind: str, version: str) -> None:
    ours, theirs = (set(nodes(v)) for v in pair(kind, version))
    allowed = {path for k, v, path in EXTRA_PATHS if (k, v) == (kind, version)}
    assert sorted(ours - theirs - allowed) == []
    # Every allowed extra path is still one we define and OCM lacks (no stale entries).
    assert sorted(allowed - (ours - theirs)) == []


def test_every_listed_difference_names_a_served_version() -> None:
    keys = [key[:2] for key in KNOWN_DIFFERENCES] + [key[:2] for key in EXTRA_PATHS]
    assert sorted(set(keys) - set(SERVED)) == []


def test_known_differences_are_still_differences() -> None:
    stale = []
    for kind, version, path, key in KNOWN_DIFFERENCES:
        ours, theirs = (nodes(v).get(path, {}) for v in pair(kind, version))
        if facts(ours, key) == facts(theirs, key):
            stale.append((kind, version, path, key))
    assert stale == []


def test_list_ocm_paths_not_modelled_yet(capsys: pytest.CaptureFixture[str]) -> None:
    lines = []
    for kind, version in SERVED:
        ours, theirs = (nodes(v) for v in pair(kind, version))
        missing = [p for p in theirs if p not in ours]
        # Report only the top of each missing subtree.
        tops = [p for p in missing if not any(p != q and p.startswith(q) and p[len(q)] in ".[{" for q in missing)]
        lines.extend(f"  {kind} {version}: {p}" for p in tops)
    with capsys.disabled():
        print("\nOCM schema paths not modelled (informational):")
        print("\n".join(lines) if lines else "  none")
