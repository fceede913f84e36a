"""Talking to an API server, for everything of ours that does: the controllers, the simulated
fleet and the CLI.

- ``kubeconfig``: a kubeconfig (or the in-cluster config) in, a configured ``kubernetes`` client out;
- ``kube``: the async facade over that client (``Kube``): requests as plain JSON dicts, the
  ``Resource`` constants, typed errors (``NotFound``, ``Conflict``, ...);
- ``watchcache``: one resource listed and watched into a local cache, with relists on 410;
- ``queue``: the keyed, de-duplicating work queue with requeue-after and back-off;
- ``fencing``: the write fence a lost leader lease closes;
- ``logging``: the one-event-per-line log format every process writes.

Layer: imports ``ocm_rollout.api`` only. ``controllers`` and ``sandbox`` build on it; neither
imports the other.
"""
