"""The ManifestWorkReplicaSet controller: a pure core (status mapping, template comparison, work
building, per-placement deploy plans, status aggregation, rollout events and the status report)
and the kopf shell in ``operator.py``."""
