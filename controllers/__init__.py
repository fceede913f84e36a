"""Hub controllers of ocm-rollout: placement, ManifestWorkReplicaSet (workset), add-ons (addon),
and what they share: the pure rollout planner (rollout), wire readers (common) and the kopf runtime
(runtime). Layer: imports ``ocm_rollout.api`` and ``ocm_rollout.client``, never the local hub;
a controller never imports another controller's package (tests/unit/test_import_layers.py)."""
