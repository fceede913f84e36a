"""Simulated managed-cluster agents: the pure core (no I/O, ``now`` passed in).

- ``work``: what the work agent writes for a ManifestWork (``plan_work``);
- ``apply``, ``cluster``, ``kinds``, ``objectnames``: applying manifests to a simulated cluster
  that keeps its objects and refuses what a real cluster refuses (unserved kinds, missing
  namespaces, invalid names);
- ``registration``: the fleet, the registration agent and the hub-side registration controllers;
- ``feedback``, ``rules``, ``resources``: status feedback, condition rules, simulated objects;
- ``conditions``: metav1.Condition helpers with set-condition semantics.

The I/O shell that drives them against an API server is ``ocm_rollout.sandbox.simulation``.
"""
