"""The local hub and the simulated fleet: what ``ocm-rollout up`` and the integration tests run
instead of a real cluster.

- The hub (``server``, ``engine``, ``store``, ``schema``, ``protobuf*``, ...): a
  Kubernetes-compatible API server for the project's CRDs and the built-in kinds the controllers
  and OCM's own controllers use. Requests in, stored objects and watch events out.
- The fleet (``agents/``, ``simulation``, ``sim_main``, ``sim_profile``): simulated managed
  clusters that register, renew their leases, and run a work agent and add-on agents, as OCM's
  klusterlet does, writing only through the API (``ocm_rollout.client``).

Layer: imports ``ocm_rollout.api`` and ``ocm_rollout.client``, never the controllers.
"""
