"""Which ClusterManagementAddOn events queue the add-on's ManagedClusterAddOns again
(controllers/addon/indexes.py)."""

from __future__ import annotations

from ocm_rollout.controllers.addon.indexes import AddonIndexes

LIFECYCLE = "addon.open-cluster-management.io/lifecycle"


def _cma(uid: str = "u1", status: str = "", annotations: dict[str, str] | None = None, deleting: bool = False) -> dict:
    meta: dict = {"name": "a", "uid": uid, "annotations": annotations or {}}
    if deleting:
        meta["deletionTimestamp"] = "2024-05-01T12:00:00Z"
    return {"metadata": meta, "spec": {}, "status": {"note": status}}


def test_only_what_an_mca_pass_reads_of_its_cma_queues_its_mcas_again() -> None:
    ix = AddonIndexes()
    for cluster in ("c1", "c2"):
        ix.on_mca("ADDED", {"metadata": {"name": "a", "namespace": cluster}}, None)
    keys = ["c1/a", "c2/a"]
    assert sorted(ix.mca_keys_of_cma_event("", _cma())) == keys  # first sight (also after a restart)
    assert ix.mca_keys_of_cma_event("MODIFIED", _cma(status="x")) == []  # a status write
    assert sorted(ix.mca_keys_of_cma_event("MODIFIED", _cma(annotations={LIFECYCLE: "self"}))) == keys
    assert sorted(ix.mca_keys_of_cma_event("MODIFIED", _cma(annotations={LIFECYCLE: "self"}, deleting=True))) == keys
    assert sorted(ix.mca_keys_of_cma_event("ADDED", _cma(uid="u2"))) == keys  # created again
    assert sorted(ix.mca_keys_of_cma_event("DELETED", _cma(uid="u2"))) == keys
    assert sorted(ix.mca_keys_of_cma_event("MODIFIED", _cma(uid="u2"))) == keys  # forgotten on DELETED
