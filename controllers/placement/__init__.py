"""The placement scheduler and controller (spec: docs/behaviour/scheduling.md).

Pure core (no I/O, explicit ``now``):
- ``snapshot``: the typed input of a pass (parsed models, per-cluster views, decision counts).
- ``selectors``, ``quantity``: label/claim selectors, quantities.
- ``cel`` (the entry point) on ``cel_declarations``, ``cel_grammar`` (parser with optional
  types), ``cel_check``/``cel_typecheck`` (compile-time checks), ``cel_values``,
  ``cel_functions``, ``cel_library`` (Kubernetes' CEL library) and ``cel_eval`` (evaluator,
  cost budget).
- ``filters``: Predicate and TaintToleration, and the toleration requeue time.
- ``prioritizers``: weights, Balance, Steady, ResourceAllocatable*, AddOn scores.
- ``spread``: which feasible clusters are selected under ``spreadPolicy`` (greedy, nested
  topologies, the DoNotSchedule skew bound).
- ``groups``: decision groups and 100-cluster pages; ``status``: the Placement status.
- ``scheduler``: one pass (``schedule(placement, snapshot, now)``) -> ``ScheduleResult``,
  including the decision scores under ``scoreRateLimit``.
- ``decisions``: the PlacementDecision objects, the writes to get there, the event texts.
- ``explain``: the debug endpoint's JSON and ``ocm-rollout schedule --explain``.
- ``triggers``: which Placements a change re-queues.

Shell: ``operator`` (kopf; ``setup(registry, context)``, the debug routes). The controller
writes Placement status, PlacementDecisions and Events only; ManagedClusterSet and
ManagedClusterSetBinding status belong to OCM's registration hub controller (the simulation in
the local hub).
"""
