"""One hung request, on purpose: reproductions of what the 3-minute fault run (test_faults.py)
found, each an ``ocm-rollout run`` process behind the fault proxy with one request left
unanswered (``FaultProxy.hang_next``) and no other fault.

Each failed before every request got a timeout:

1. A watch cache whose re-listing hangs must not be stuck for good (``client/watchcache.py``
   lists through ``Kube.request``, whose GETs once had no timeout, ``client/kube.py``): the add-on
   manager must see the AddOnDeploymentConfig change.
2. Such a process exits on SIGTERM: the operator's thread waits for the hung request's executor
   thread (``controllers/runtime/operator.py``, ``_drain``), which the request timeout bounds.
3. kopf's own LIST of an informer is bounded too (``operator_settings()`` sets kopf's
   ``networking.request_timeout``; its default was 5 minutes), so the workset controller acts on
   ManifestWorkReplicaSets within the timeout.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ocm_rollout.api.addon_hashing import spec_hash
from ocm_rollout.client.kube import (
    ADDON_DEPLOYMENT_CONFIGS,
    CLUSTER_MANAGEMENT_ADDONS,
    MANAGED_CLUSTER_ADDONS,
    MANAGED_CLUSTERS,
    MANIFEST_WORK_REPLICA_SETS,
    MANIFEST_WORKS,
    NAMESPACES,
    PLACEMENTS,
)
from tests.faults.proxy import FaultProxy
from tests.faults.test_faults import thread_dump
from tests.hubs import start_hub
from tests.integration.helpers import STARTUP_TIMEOUT, Api, RunProcess, decide, start_run, wait_until
from tests.integration.test_addon_env import adc_ref, desired_hashes
from tests.integration.test_workset_env import CONFIGMAP_TEMPLATE

pytestmark = [pytest.mark.faults, pytest.mark.integration]

NS = "hung"
CLUSTERS = ["cluster-1", "cluster-2"]
ADDON = "stalled"
ADC = "stalled-config"
# How long a controller gets to act on a change while one of its requests hangs: the request
# timeout (client/kube.py and kopf's, 30 s) and a margin.
ACT_SECONDS = 45.0
ADC_LIST = r"^GET /apis/addon\.open-cluster-management\.io/v1alpha1/addondeploymentconfigs\?limit="
ADC_WATCH = r"addondeploymentconfigs\?.*watch=true"
MWRS_LIST = r"^GET /apis/work\.open-cluster-management\.io/v1alpha1/manifestworkreplicasets$"


@dataclass
class Setting:
    """A hub with two clusters and a decided Placement, and the fault proxy (no faults) before it."""

    directory: Path
    hub: Any
    proxy: FaultProxy
    api: Api
    kubeconfig: Path

    def controller(self, name: str) -> RunProcess:
        proc = start_run(
            name, self.kubeconfig, self.directory,
            "--controllers", name, "--lease-namespace", "default", "--lease-name", f"hung-{name}",
            "--identity", f"hung-{name}",
            env={"PYTHONFAULTHANDLER": "1"},
        )  # fmt: skip
        wait_until(lambda: proc.logged("operator started"), timeout=STARTUP_TIMEOUT, message=f"the {name} operator")
        return proc


@pytest.fixture(scope="module")
def setting(tmp_path_factory: pytest.TempPathFactory, hub_kind: str) -> Iterator[Setting]:
    directory = tmp_path_factory.mktemp("hung")
    hub = start_hub(hub_kind, directory, kubeconfig=directory / "hub.kubeconfig")
    assert hub.kubeconfig is not None
    proxy = FaultProxy(hub.kubeconfig).start()
    proxy.faults_off()
    api = Api(str(hub.kubeconfig))
    api.create(NAMESPACES, {"metadata": {"name": NS}})
    for cluster in CLUSTERS:
        api.create(NAMESPACES, {"metadata": {"name": cluster}})
        api.create(MANAGED_CLUSTERS, {"metadata": {"name": cluster}, "spec": {"hubAcceptsClient": True}})
    api.create(PLACEMENTS, {"metadata": {"name": "p"}, "spec": {}}, NS)
    decide(api, NS, "p", CLUSTERS)
    try:
        yield Setting(directory, hub, proxy, api, proxy.write_kubeconfig(directory / "proxy.kubeconfig"))
    finally:
        proxy.stop()
        hub.stop()


def _desired(api: Api) -> list[str]:
    mcas = [api.get_or_none(MANAGED_CLUSTER_ADDONS, ADDON, c) for c in CLUSTERS]
    return [next(iter(desired_hashes(m).values()), "") for m in mcas]


def _adc(api: Api, value: str) -> str:
    spec = {"customizedVariables": [{"name": "v", "value": value}]}
    if api.get_or_none(ADDON_DEPLOYMENT_CONFIGS, ADC, NS) is None:
        stored = api.create(ADDON_DEPLOYMENT_CONFIGS, {"metadata": {"name": ADC}, "spec": spec}, NS)
    else:
        stored = api.patch(ADDON_DEPLOYMENT_CONFIGS, ADC, {"spec": spec}, NS)
    return spec_hash(stored)


@dataclass
class StalledAddon:
    """The add-on manager after its AddOnDeploymentConfig cache's re-listing hung, and a change
    of that configuration: whether the change reached the add-ons, and how SIGTERM went."""

    reached: bool
    desired: list[str]
    exit_code: int | None
    dump: str
    hung: list[Any]


@pytest.fixture(scope="module")
def stalled_addon(setting: Setting) -> StalledAddon:
    api, proxy = setting.api, setting.proxy
    first = _adc(api, "1")
    proc = setting.controller("addon")
    try:
        api.create(CLUSTER_MANAGEMENT_ADDONS, {"metadata": {"name": ADDON}, "spec": {"installStrategy": {
            "type": "Placements", "placements": [{"namespace": NS, "name": "p", "configs": [adc_ref(NS, ADC)]}],
        }}})  # fmt: skip
        wait_until(lambda: _desired(api) == [first] * len(CLUSTERS), timeout=60, message="the add-ons configured")
        # The configuration cache's watch breaks, and its listing again is never answered.
        proxy.hang_next(ADC_LIST)
        wait_until(lambda: proxy.cut_watches(ADC_WATCH) > 0, timeout=30, message="the configuration watch cut")
        wait_until(lambda: proxy.open_hangs(), timeout=30, message="the configuration cache listing again")
        second = _adc(api, "2")
        reached = True
        try:
            wait_until(lambda: _desired(api) == [second] * len(CLUSTERS), timeout=ACT_SECONDS, message="")
        except pytest.fail.Exception:
            reached = False
        desired = _desired(api)
        hung = proxy.hung()
        exit_code: int | None = None
        dump = ""
        proc.process.send_signal(signal.SIGTERM)
        try:
            exit_code = proc.process.wait(timeout=ACT_SECONDS)
        except subprocess.TimeoutExpired:
            proc.process.send_signal(signal.SIGABRT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.process.wait(timeout=10)
            dump = thread_dump(proc.log_path.read_text(encoding="utf-8", errors="replace"))
        print(f"\nstalled add-on manager: configuration change reached {reached}, desired {desired}, "
              f"exit {exit_code}, hung {hung}\n{dump}")
        return StalledAddon(reached, desired, exit_code, dump, hung)
    finally:
        proc.kill()


def test_a_hung_relisting_does_not_stall_a_watch_cache(stalled_addon: StalledAddon) -> None:
    assert stalled_addon.reached, f"the add-ons still want {stalled_addon.desired} {ACT_SECONDS:g}s after the change"


def test_sigterm_ends_a_process_whose_request_hangs(stalled_addon: StalledAddon) -> None:
    assert stalled_addon.exit_code == 0, f"still running {ACT_SECONDS:g}s after SIGTERM:\n{stalled_addon.dump[-4000:]}"


def test_a_hung_informer_listing_does_not_stall_the_workset_controller(setting: Setting) -> None:
    api, proxy = setting.api, setting.proxy
    proxy.hang_next(MWRS_LIST)
    proc = setting.controller("workset")
    try:
        wait_until(lambda: any(h.path.endswith("/manifestworkreplicasets") for h in proxy.open_hangs()), timeout=30,
                   message="the workset controller listing ManifestWorkReplicaSets")
        api.create(MANIFEST_WORK_REPLICA_SETS, {"metadata": {"name": "web"}, "spec": {
            "placementRefs": [{"name": "p"}], "manifestWorkTemplate": CONFIGMAP_TEMPLATE}}, NS)  # fmt: skip

        def works() -> list[str]:
            found = api.list(MANIFEST_WORKS, labels=f"work.open-cluster-management.io/manifestworkreplicaset={NS}.web")
            return sorted(w["metadata"]["namespace"] for w in found)

        reached = True
        try:
            wait_until(lambda: works() == CLUSTERS, timeout=ACT_SECONDS, message="")
        except pytest.fail.Exception:
            reached = False
        assert reached, f"no works {ACT_SECONDS:g}s after the MWRS was created; still hung: {proxy.open_hangs()}"
    finally:
        proc.kill()
