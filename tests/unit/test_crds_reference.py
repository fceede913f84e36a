"""Our generated CRDs against OCM's own (../shared/reference/ocm-crds): same names, scope,
printer columns, and for every property path both define the same type, format, enum, default,
patterns, bounds and list/map semantics. OCM paths we do not model are listed (informational).
Skipped when the reference folder is absent."""

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

# Deliberate differences, each with its reason.
KNOWN_DIFFERENCES: dict[tuple[str, str, str], str] = {
    ("ManifestWorkReplicaSet", "", "required"): (
        "spec is required: a ManifestWorkReplicaSet without placementRefs cannot do anything"
    ),
    ("ManifestWorkReplicaSet", ".spec.placementRefs[].rolloutStrategy.type", "default"): _NO_TYPE_DEFAULT,
    (
        "ClusterManagementAddOn",
        ".spec.installStrategy.placements[].rolloutStrategy.type",
        "default",
    ): _NO_TYPE_DEFAULT,
}

_OLDER_SPELLING = (
    "rolloutType, the older spelling of type in OCM's documentation (the seed's ManifestWorkReplicaSet "
    "example), is accepted and read as type instead of being pruned (which silently rolled out to All)"
)

# Paths we define and OCM's CRD does not, each with its reason.
_ROLLBACK = "revision history and rollback, with OCM enhancement 229's names (not in OCM's API yet)"
EXTRA_PATHS: dict[tuple[str, str], str] = {
    ("ManifestWorkReplicaSet", ".spec.placementRefs[].rolloutStrategy.rolloutType"): _OLDER_SPELLING,
    ("ClusterManagementAddOn", ".spec.installStrategy.placements[].rolloutStrategy.rolloutType"): _OLDER_SPELLING,
    ("ManifestWorkReplicaSet", ".spec.placementRefs[].rolloutStrategy.failureStrategy"): _ROLLBACK,
    ("ClusterManagementAddOn", ".spec.installStrategy.placements[].rolloutStrategy.failureStrategy"): _ROLLBACK,
    ("ManifestWorkReplicaSet", ".spec.revisionHistoryLimit"): _ROLLBACK,
    ("ManifestWorkReplicaSet", ".status.currentRevision"): _ROLLBACK,
    ("ManifestWorkReplicaSet", ".status.updateRevision"): _ROLLBACK,
    ("ManifestWorkReplicaSet", ".status.collisionCount"): _ROLLBACK,
    ("ManifestWorkReplicaSet", ".status.abortedTime"): _ROLLBACK,
    ("ManifestWorkReplicaSet", ".spec.paused"): (
        "pause and resume (ours; OCM has none): while true no work is written or deleted"
    ),
}


@functools.cache
def reference_crds() -> dict[str, dict[str, Any]]:
    out = {}
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for path in sorted(REFERENCE.glob("*.yaml")):
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
        out[doc["spec"]["names"]["kind"]] = doc
    return out


OURS = {crd["spec"]["names"]["kind"]: crd for crd in crdgen.generate_crds()}


def pair(kind: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    ours = OURS[kind]
    theirs = reference_crds()[kind]
    version = ours["spec"]["versions"][0]
    matching = [v for v in theirs["spec"]["versions"] if v["name"] == version["name"]]
    assert matching, f"OCM does not serve {kind} {version['name']}"
    return ours, theirs, version, matching[0]


@pytest.mark.parametrize("kind", sorted(OURS))
def test_names_scope_and_subresources_match_ocm(kind: str) -> None:
    ours, theirs, version, ref_version = pair(kind)
    assert ours["metadata"]["name"] == theirs["metadata"]["name"]
    assert ours["spec"]["group"] == theirs["spec"]["group"]
    assert ours["spec"]["names"] == theirs["spec"]["names"]
    assert ours["spec"]["scope"] == theirs["spec"]["scope"]
    assert version.get("subresources") == ref_version.get("subresources")


@pytest.mark.parametrize("kind", sorted(OURS))
def test_printer_columns_match_ocm(kind: str) -> None:
    _, _, version, ref_version = pair(kind)

    def columns(v: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [(c["name"], c["type"], c["jsonPath"], c.get("priority")) for c in v.get("additionalPrinterColumns", [])]

    assert columns(version) == columns(ref_version)


@pytest.mark.parametrize("kind", sorted(OURS))
def test_shared_paths_have_ocms_types_and_rules(kind: str) -> None:
    _, _, version, ref_version = pair(kind)
    ours = dict(schema_nodes(version["schema"]["openAPIV3Schema"]))
    theirs = dict(schema_nodes(ref_version["schema"]["openAPIV3Schema"]))
    differences = []
    for path in sorted(set(ours) & set(theirs)):
        for key in (*COMPARED, "required"):
            mine, ocm = ours[path].get(key), theirs[path].get(key)
            if key == "required":
                mine, ocm = sorted(mine or []), sorted(ocm or [])
            if mine != ocm and (kind, path, key) not in KNOWN_DIFFERENCES:
                differences.append(f"{path} {key}: ours={mine!r} OCM={ocm!r}")
    assert differences == []


@pytest.mark.parametrize("kind", sorted(OURS))
def test_we_model_no_path_ocm_lacks(kind: str) -> None:
    _, _, version, ref_version = pair(kind)
    ours = {p for p, _ in schema_nodes(version["schema"]["openAPIV3Schema"])}
    theirs = {p for p, _ in schema_nodes(ref_version["schema"]["openAPIV3Schema"])}
    allowed = {path for known_kind, path in EXTRA_PATHS if known_kind == kind}
    assert sorted(ours - theirs - allowed) == []
    # Every allowed extra path is still one we define and OCM lacks (no stale entries).
    assert sorted(allowed - (ours - theirs)) == []


def test_known_differences_are_still_differences() -> None:
    stale = []
    for kind, path, key in KNOWN_DIFFERENCES:
        _, _, version, ref_version = pair(kind)
        ours = dict(schema_nodes(version["schema"]["openAPIV3Schema"])).get(path, {})
        theirs = dict(schema_nodes(ref_version["schema"]["openAPIV3Schema"])).get(path, {})
        mine, ocm = ours.get(key), theirs.get(key)
        if key == "required":
            mine, ocm = sorted(mine or []), sorted(ocm or [])
        if mine == ocm:
            stale.append((kind, path, key))
    assert stale == []


def test_list_ocm_paths_not_modelled_yet(capsys: pytest.CaptureFixture[str]) -> None:
    lines = []
    for kind in sorted(OURS):
        _, _, version, ref_version = pair(kind)
        ours = {p for p, _ in schema_nodes(version["schema"]["openAPIV3Schema"])}
        theirs = [p for p, _ in schema_nodes(ref_version["schema"]["openAPIV3Schema"])]
        missing = [p for p in theirs if p not in ours]
        # Report only the top of each missing subtree.
        tops = [p for p in missing if not any(p != q and p.startswith(q) and p[len(q)] in ".[{" for q in missing)]
        lines.extend(f"  {kind} {version['name']}: {p}" for p in tops)
    with capsys.disabled():
        print("\nOCM schema paths not modelled (informational):")
        print("\n".join(lines) if lines else "  none")
