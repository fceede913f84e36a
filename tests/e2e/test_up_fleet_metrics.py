"""`ocm-rollout up`'s fleet metrics endpoint, scraped by a real Prometheus server: a profile gives
web:2.0 a high error ratio on cluster1, and Prometheus sees it there once the work is applied, and
the default everywhere else. And the endpoints `up` records next to its kubeconfig."""

from __future__ import annotations

import json
import re
from pathlib import Path

import kubernetes
import pytest

from tests.e2e.helpers import Up, eventually
from tests.hub_kinds import up_args
from tests.prometheus_server import free_port, prometheus_binary, running_prometheus, values_by

pytestmark = pytest.mark.e2e

PROFILE = """\
defaults:
  applyDelay: 200ms
  progressDuration: 200ms
  metrics:
    http_error_ratio: 0.001
    http_requests: {counter: 50}
clusters:
- name: cluster1
  contains: "web:2.0"
  metrics: {http_error_ratio: 0.3}
"""

WORK = {
    "apiVersion": "work.open-cluster-management.io/v1",
    "kind": "ManifestWork",
    "metadata": {"name": "web"},
    "spec": {
        "workload": {
            "manifests": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": "web", "namespace": "default"},
                    "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "web:2.0"}]}}},
                }
            ]
        }
    },
}


def test_prometheus_scrapes_each_clusters_metrics_as_its_works_apply(tmp_path: Path) -> None:
    prometheus_binary()  # skip before starting anything when there is no Prometheus
    profile = tmp_path / "profile.yaml"
    profile.write_text(PROFILE)
    port = free_port()
    # Prometheus first: it takes a few seconds to scrape a new target, while `up` starts.
    with running_prometheus([f"127.0.0.1:{port}"], tmp_path / "prometheus") as prometheus:
        up = Up(tmp_path, "--clusters", "3", "--controllers", "none", "--no-view", "--profile", str(profile),
                "--fleet-metrics-port", str(port))
        try:
            kubeconfig = up.wait_kubeconfig()
            url = f"http://127.0.0.1:{port}/metrics"
            assert json.loads((kubeconfig.parent / "endpoints.json").read_text())["fleetMetrics"] == url
            eventually(lambda: f"fleet metrics: {url}" in up.output(), message="the fleet metrics line of the banner")

            defaults = {"cluster1": 0.001, "cluster2": 0.001, "cluster3": 0.001}
            eventually(
                lambda: values_by(prometheus, "http_error_ratio", "cluster") == defaults,
                timeout=30, message="the default error ratio of every cluster, scraped",
            )
            config = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
            kubernetes.client.CustomObjectsApi(config).create_namespaced_custom_object(
                "work.open-cluster-management.io", "v1", "cluster1", "manifestworks", WORK
            )
            eventually(
                lambda: values_by(prometheus, 'http_error_ratio{cluster="cluster1"}', "cluster") == {"cluster1": 0.3},
                timeout=30, message="web:2.0's error ratio on cluster1",
            )
            assert values_by(prometheus, "http_error_ratio", "cluster") == {**defaults, "cluster1": 0.3}
            requests = values_by(prometheus, "http_requests_total", "cluster")
            assert set(requests) == set(defaults) and all(value > 0 for value in requests.values()), requests
            assert up.interrupt() == 0, up.output()
        finally:
            up.stop()


def test_up_records_its_endpoints_next_to_the_kubeconfig(tmp_path: Path, hub_kind: str) -> None:
    up = Up(tmp_path, *up_args(hub_kind), "--clusters", "1", "--controllers", "placement", "--no-view")
    try:
        endpoints_file = up.wait_kubeconfig().parent / "endpoints.json"
        endpoints = eventually(lambda: endpoints_file.exists() and json.loads(endpoints_file.read_text()),
                               message="endpoints.json")
        assert set(endpoints) == {"hub", "kubeconfig", "fleetMetrics", "debug", "dashboard"}
        assert endpoints["kubeconfig"] == str(up.kubeconfig)
        assert re.fullmatch(r"https://127\.0\.0\.1:\d+", endpoints["hub"])
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/metrics", endpoints["fleetMetrics"])
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/debug/placements/NAMESPACE/NAME", endpoints["debug"])
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", endpoints["dashboard"])
        assert f"dashboard: {endpoints['dashboard']}" in up.output()
        assert up.interrupt() == 0, up.output()
    finally:
        up.stop()

