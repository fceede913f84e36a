"""Every differential sequence, and the two fresh hubs they run on (used by the tests and by
``bench/hub_diff.py``).

- ``all_sequences()``: the sequences of every area, names unique.
- ``Hubs``: a fresh local hub and a fresh kube-apiserver (etcd, kube-controller-manager) with the
  project's CRDs and the same users; ``Hubs.run(sequence)`` runs it on both at once and returns
  ``(local answers, kube-apiserver answers)``.
"""

from __future__ import annotations

import secrets
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.differential import seq_api, seq_objects, seq_reads
from tests.differential.engine import Answers, HubClient, Sequence, run
from tests.hubs import hub_thread, kube_hub

# Users other than the administrator, for RBAC sequences (no groups).
USERS = ("alice", "bob")


def all_sequences() -> list[Sequence]:
    found = seq_objects.sequences() + seq_reads.sequences() + seq_api.sequences()
    names = [s.name for s in found]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    assert not duplicates, f"sequence names must be unique: {duplicates}"
    return found


class Hubs:
    def __init__(self, directory: Path) -> None:
        local_tokens = {user: secrets.token_urlsafe(24) for user in USERS}
        self.local = hub_thread(kubeconfig=directory / "local.kubeconfig",
                                tokens={token: user for user, token in local_tokens.items()})
        try:
            self.kube = kube_hub(directory / "kube-hub", kubeconfig=directory / "kube.kubeconfig",
                                 users={user: () for user in USERS})
        except BaseException:
            self.local.stop()
            raise
        self.local_client = HubClient.from_kubeconfig(str(directory / "local.kubeconfig"), local_tokens)
        self.kube_client = HubClient.from_kubeconfig(
            str(directory / "kube.kubeconfig"), {user: self.kube.hub.user_token(user) for user in USERS})
        self.pool = ThreadPoolExecutor(2, thread_name_prefix="differential")

    def run(self, sequence: Sequence) -> tuple[Answers, Answers]:
        local = self.pool.submit(run, sequence, self.local_client)
        kube = self.pool.submit(run, sequence, self.kube_client)
        return local.result(), kube.result()

    def stop(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.kube.stop()
        self.local.stop()
