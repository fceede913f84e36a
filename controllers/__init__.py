"""Hub controllers of ocm-rollout: placement, ManifestWorkReplicaSet, addons, and the shared rollout planner."""
