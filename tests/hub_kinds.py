"""The two kinds of hub the end-to-end tests run on (no tests here).

- ``HUB_KINDS``: ``local`` (the embedded hub) and ``kube-apiserver`` (a real control plane,
  ``ocm_rollout.sandbox.kube_hub``).
- ``skip_unless_built(kind)``: a pytest skip, naming ``make kube-hub``, when the real control
  plane's binaries are not built (a failure when ``CI`` is set).
- ``up_args(kind)``: the ``ocm-rollout up`` flags that pick the hub.
"""

from __future__ import annotations

import os

import pytest

from ocm_rollout.sandbox.kube_hub import HUB_NAME, MissingBinaries, find_binaries

LOCAL = "local"
KUBE_APISERVER = HUB_NAME
HUB_KINDS = (LOCAL, KUBE_APISERVER)


def skip_unless_built(kind: str) -> None:
    """Skip (fail under CI, whose .ci/run builds them first) when ``kind`` needs binaries that
    are not built."""
    if kind == KUBE_APISERVER:
        try:
            find_binaries()
        except MissingBinaries as exc:
            if os.environ.get("CI"):
                pytest.fail(f"CI must run every test on kube-apiserver: {exc}")
            pytest.skip(str(exc))


def up_args(kind: str) -> list[str]:
    return [] if kind == LOCAL else ["--hub", kind]
