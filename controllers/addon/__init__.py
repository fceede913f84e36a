"""The hub add-on manager (docs/behaviour/addons.md): install strategy and MCA lifecycle, configuration
references and rollout, MCA Progressing. Pure cores (no I/O) beside the kopf shell ``operator``.

The cores follow the project's rule for pure cores: they compute on the stored JSON, read through
the accessors of ``ocm_rollout.controllers.common.wire`` (no private copies), and turn the parts of the
ClusterManagementAddOn spec they interpret into their own small typed values in ``configs``
(``install_type``/``placement_strategies`` for the install strategy, ``default_configs`` and
``build_graph`` for ``Config``, ``DesiredConfigs`` and ``PlacementNode``); they import no pydantic
model from ``api``. The models guard the edges: ``operator`` validates the CMA with its model
before calling the cores (an invalid one gets an ``InvalidClusterManagementAddOn`` Warning event
and no core is called)."""
