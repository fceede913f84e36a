"""The placement scheduler and controller (spec: SCHEDULING.md).

Pure core (no I/O, explicit ``now``):
- ``snapshot``: the typed input of a pass (parsed models, per-cluster views, decision counts).
- ``selectors``, ``cel``, ``cel_library``, ``quantity``: label/claim selectors, CEL, quantities.
- ``filters``: Predicate and TaintToleration, and the toleration requeue time.
- ``prioritizers``: weights, Balance, Steady, ResourceAllocatable*, AddOn scores.
- ``groups``: decision groups and 100-cluster pages; ``status``: the Placement status.
- ``scheduler``: one pass (``schedule(placement, snapshot, now)``) -> ``ScheduleResult``.
- ``decisions``: the PlacementDecision objects, the writes to get there, the event texts.
- ``explain``: the debug endpoint's JSON and ``ocm-rollout schedule --explain``.
- ``triggers``: which Placements a change re-queues.

Shell: ``operator`` (kopf; ``setup(registry, context)``, the debug routes). The controller
writes Placement status, PlacementDecisions and Events only; ManagedClusterSet and
ManagedClusterSetBinding status belong to OCM's registration hub controller (the simulation in
the local hub).
"""
