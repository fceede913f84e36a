"""OCM enhancement 231: the ManifestWorkReplicaSet rollout plugin protocol (gRPC), its registry
(work-controller-config), client, PluginLoaded condition and per-cluster state table."""
