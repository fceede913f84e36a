"""Benchmark of CRD conversion through the add-on conversion webhook, on the local hub.

The hub (``python -m ocm_rollout.sandbox.server``-like, in a thread of this process) serves the
CRDs from ``crds/``, whose ClusterManagementAddOn and ManagedClusterAddOn are converted by the
webhook; the webhook is ``ocm-rollout run --controllers none --webhook-bind-address`` in a process
of its own, as ``ocm-rollout up`` runs it. With ``--mcas`` ManagedClusterAddOns (default 1,000,
one per namespace, each with a status), it measures with the official client:

- LIST of every MCA in v1alpha1 (the storage version: no conversion) and in v1beta1 (one review
  for the page), cold (the first v1beta1 list) and warm (answers remembered);
- a watch in each version receiving ``--patches`` status patches (one per MCA): the time from the
  first patch to the last event received.

Prints each figure and the v1beta1/v1alpha1 ratios.

    .venv/bin/python bench/conversion.py [--mcas 1000] [--patches 1000]
"""

from __future__ import annotations

import argparse
import base64
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from kubernetes import client, config, watch

from ocm_rollout.controllers.runtime import webhook
from ocm_rollout.sandbox import tls
from ocm_rollout.sandbox.crd import load_crd_files
from ocm_rollout.sandbox.server import run_in_thread

REPO = Path(__file__).resolve().parents[1]
G = "addon.open-cluster-management.io"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _timed(fn: Any) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def _watch_patches(crs: Any, version: str, names: list[str], round_id: str) -> float:
    """Seconds from the first status patch to the watch in ``version`` seeing the last one."""
    seen: set[str] = set()
    ready = threading.Event()
    done = threading.Event()
    listed = crs.list_cluster_custom_object(G, version, "managedclusteraddons")
    rv = listed["metadata"]["resourceVersion"]

    def follow() -> None:
        stream = watch.Watch()
        ready.set()
        for event in stream.stream(crs.list_cluster_custom_object, G, version, "managedclusteraddons",
                                   resource_version=rv, timeout_seconds=300):
            obj = event["object"]
            if (obj.get("status") or {}).get("namespace") == round_id:
                seen.add(obj["metadata"]["namespace"])
                if len(seen) == len(names):
                    stream.stop()
        done.set()

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    ready.wait()
    time.sleep(0.5)
    started = time.perf_counter()
    for ns in names:
        crs.patch_namespaced_custom_object_status(G, "v1alpha1", ns, "managedclusteraddons", "bench",
                                                  {"status": {"namespace": round_id}})
    done.wait(300)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mcas", type=int, default=1000)
    parser.add_argument("--patches", type=int, default=1000)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-conversion-"))
    creds = tls.generate(["127.0.0.1"])
    (work / webhook.CERT_FILE).write_bytes(creds.cert_pem + creds.ca_pem)
    (work / webhook.KEY_FILE).write_bytes(creds.key_pem)
    port = _free_port()
    client_config = {"url": f"https://127.0.0.1:{port}{webhook.PATH}", "caBundle": base64.b64encode(creds.ca_pem).decode()}
    hub = run_in_thread(kubeconfig=work / "kubeconfig", crds=load_crd_files([REPO / "crds"]), conversion_webhook=client_config)
    server = subprocess.Popen(
        [sys.executable, "-m", "ocm_rollout.cli", "run", "--controllers", "none", "--kubeconfig", str(work / "kubeconfig"),
         "--no-leader-elect", "--health-bind-address", "0", "--metrics-bind-address", "0",
         "--webhook-bind-address", f"127.0.0.1:{port}", "--webhook-cert-dir", str(work), "--log-level", "warning"],
        env={**os.environ},
    )
    try:
        api_client = config.new_client_from_config(config_file=str(work / "kubeconfig"))
        crs: Any = client.CustomObjectsApi(api_client)
        core = client.CoreV1Api(api_client)
        names = [f"bench-{i:05d}" for i in range(args.mcas)]
        for ns in names:
            core.create_namespace({"metadata": {"name": ns}})
            crs.create_namespaced_custom_object(G, "v1alpha1", ns, "managedclusteraddons", {
                "apiVersion": f"{G}/v1alpha1", "kind": "ManagedClusterAddOn", "metadata": {"name": "bench"},
                "spec": {"installNamespace": "agents"}})
            crs.patch_namespaced_custom_object_status(G, "v1alpha1", ns, "managedclusteraddons", "bench", {"status": {
                "registrations": [{"signerName": "kubernetes.io/kube-apiserver-client",
                                   "subject": {"user": f"agent-{ns}", "groups": ["g"]}}],
                "conditions": [{"type": "Available", "status": "True", "reason": "R", "message": "m",
                                "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
        deadline = time.monotonic() + 30
        while True:  # the webhook process is up
            try:
                crs.list_cluster_custom_object(G, "v1beta1", "managedclusteraddons", limit=1)
                break
            except client.ApiException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        alpha = min(_timed(lambda: crs.list_cluster_custom_object(G, "v1alpha1", "managedclusteraddons")) for _ in range(3))
        hub.call(lambda: hub.hub.engine.converter._cache.clear())  # type: ignore[union-attr]
        cold = _timed(lambda: crs.list_cluster_custom_object(G, "v1beta1", "managedclusteraddons"))
        warm = min(_timed(lambda: crs.list_cluster_custom_object(G, "v1beta1", "managedclusteraddons")) for _ in range(3))
        patched = names[: args.patches]
        watch_alpha = _watch_patches(crs, "v1alpha1", patched, "round-a")
        watch_beta = _watch_patches(crs, "v1beta1", patched, "round-b")
        rows = [
            (f"LIST {args.mcas} MCAs, v1alpha1 (storage, no conversion)", f"{alpha * 1000:.0f} ms", ""),
            (f"LIST {args.mcas} MCAs, v1beta1, cold (one review)", f"{cold * 1000:.0f} ms", f"{cold / alpha:.2f}x"),
            (f"LIST {args.mcas} MCAs, v1beta1, warm (answers remembered)", f"{warm * 1000:.0f} ms", f"{warm / alpha:.2f}x"),
            (f"{len(patched)} status patches seen by a v1alpha1 watch", f"{watch_alpha:.2f} s", ""),
            (f"{len(patched)} status patches seen by a v1beta1 watch", f"{watch_beta:.2f} s", f"{watch_beta / watch_alpha:.2f}x"),
        ]
        width = max(len(r[0]) for r in rows)
        print(f"conversion webhook benchmark (python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")
        for label, value, ratio in rows:
            print(f"{label:<{width}}  {value:>9}  {ratio}")
        api_client.close()
    finally:
        server.terminate()
        server.wait(20)
        hub.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
