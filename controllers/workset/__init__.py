"""The ManifestWorkReplicaSet controller: a pure core (status mapping, template comparison, work
building, per-placement deploy plans, status aggregation, template revisions and their history,
abort/retry/pause decisions and the revision status, rollout events and the status report) and
the kopf shell in ``operator.py``."""
