"""Pydantic models of the Open Cluster Management kinds ocm-rollout reads and writes, the
shared meta types, the constants users see, and the CRD generator (``ocm_rollout.api.crdgen``).

One module per API group/version: ``cluster_v1``, ``cluster_v1beta1``, ``cluster_v1beta2``,
``cluster_v1alpha1``, ``work_v1``, ``work_v1alpha1``, ``addon_v1alpha1``, ``addon_v1beta1``;
``addon_template`` holds AddOnTemplate in both its versions. ``kinds`` lists every kind with the
versions it is served in. Conventions are described in ``ocm_rollout.api.meta``.
``addon_conversion`` (OCM's rules in ``addon_conversion_rules``) converts the add-on kinds between
v1alpha1 and v1beta1 as plain JSON.
"""
