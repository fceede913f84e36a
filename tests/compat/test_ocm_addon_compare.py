"""OCM's own add-on manager, placement controller and work manager against ``ocm-rollout up
--controllers none``, then our controllers on ``up`` with the same input, on each hub kind
(``hub_kind``: the embedded hub and kube-apiserver): the add-on tour
(examples/addons/tour: an AddOnDeploymentConfig, a Placement and a ClusterManagementAddOn with a
Placements install strategy and a Progressive rollout) rolls out on both, OCM's processes log no
request error, and the ClusterManagementAddOn and ManagedClusterAddOn statuses agree field by
field, read in v1beta1 as OCM's manager reads and writes them. The second hub kind to run also
compares OCM's statuses with those OCM wrote on the first: the same, whichever server answered.

What is left out of the comparison, and why: the order of conditions (a map keyed by type whose
order only says which writer came first), timestamps (``lastTransitionTime``, the
``lastApplied``/``lastKnownGood`` times, ``lastObservedGeneration``... anything named ``*Time``
or ``*Timestamp``), and ``null`` values (the README: we leave unset ``lastAppliedConfig`` and
``lastKnownGoodConfig`` out instead of writing ``null``).

One difference of versions is bridged, not ignored: ``make ocm-binaries`` builds OCM v1.2.0,
whose installProgressions messages say ``D/T completed with no errors, ...`` over the selected
clusters T; ours write OCM's later form, ``selected clusters T. configured addons D/C ...``, over
the clusters C whose add-on is configured. Where T equals C the two say the same, and ours is
compared in v1.2.0's form (``_as_ocm_v1_2``); anywhere else it stays a difference.

Skipped when OCM's binaries are absent (``make ocm-binaries`` builds them).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from tests.compat.ocm_binaries import OcmProcess, require
from tests.e2e.helpers import KUBECTL, REPO, Up, eventually
from tests.hub_kinds import up_args

pytestmark = pytest.mark.e2e

ADDON = "addon.open-cluster-management.io"
CLUSTERS = "4"
TOUR = [REPO / "examples" / "addons" / "tour" / f"{name}.yaml" for name in ("setup", "clustermanagementaddon")]
ROLLOUT_SECONDS = 240
OCM_PROCESSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("placement", ()),
    ("work", ("--feature-gates=ManifestWorkReplicaSet=true",)),
    ("addon", ()),
)


def _completed(custom: Any) -> dict[str, Any] | None:
    cma = custom.get_cluster_custom_object(ADDON, "v1beta1", "clustermanagementaddons", "helloworld")
    progressions = (cma.get("status") or {}).get("installProgressions") or []
    if not progressions:
        return None
    for progression in progressions:
        reasons = {c.get("type"): c.get("reason") for c in progression.get("conditions") or []}
        if reasons.get("Progressing") != "Completed":
            return None
    return dict(cma)


def _roll_out(tmp: Path, hub_kind: str, *, ocm: bool) -> tuple[dict[str, Any], dict[str, dict[str, Any]], list[str]]:
    """The tour on one hub of ``hub_kind``; the CMA's and each MCA's status once every progression
    completed, and the request errors OCM's processes logged."""
    args = ["--controllers", "none"] if ocm else []
    up = Up(tmp, *up_args(hub_kind), *args, "--clusters", CLUSTERS, "--no-view")
    processes: list[OcmProcess] = []
    try:
        kubeconfig = up.wait_kubeconfig()
        api_client = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
        custom: Any = kubernetes.client.CustomObjectsApi(api_client)
        core: Any = kubernetes.client.CoreV1Api(api_client)
        eventually(
            lambda: len(custom.list_cluster_custom_object("cluster.open-cluster-management.io", "v1", "managedclusters")["items"])
            == int(CLUSTERS),
            message="the managed clusters",
        )
        if ocm:
            core.create_namespace({"metadata": {"name": "open-cluster-management-hub"}})
            for name, extra in OCM_PROCESSES:
                processes.append(OcmProcess.start(name, kubeconfig, tmp / f"ocm-{name}.log", extra_args=extra))
        for path in TOUR:
            subprocess.run([str(KUBECTL), "--kubeconfig", str(kubeconfig), "apply", "-f", str(path)],
                           check=True, capture_output=True, timeout=60)
        cma = eventually(lambda: _completed(custom), timeout=ROLLOUT_SECONDS,
                         message=f"the tour's rollout to complete ({'OCM' if ocm else 'ours'}, {hub_kind})")
        mcas = {
            m["metadata"]["namespace"]: dict(m.get("status") or {})
            for m in custom.list_cluster_custom_object(ADDON, "v1beta1", "managedclusteraddons")["items"]
            if m["metadata"]["name"] == "helloworld"
        }
        errors: list[str] = []
        for process in processes:
            assert process.running(), f"OCM's {process.name} exited:\n{process.output()}"
            process.stop()
            errors += [f"{process.name}: {line}" for line in process.request_errors()]
        return dict(cma.get("status") or {}), mcas, errors
    finally:
        for process in processes:
            process.stop()
        up.stop()


# OCM's installProgressions message since v1.2.0 (ours): selected clusters T, configured add-ons C.
_LATER_PROGRESSION = re.compile(r"^selected clusters (\d+)\. configured addons (\d+)/(\d+) (.*)$")


def _as_ocm_v1_2(cma_status: dict[str, Any]) -> dict[str, Any]:
    """``cma_status`` with each installProgressions message of the later form in v1.2.0's, where
    the two say the same (every selected cluster's add-on configured: T == C)."""
    progressions = []
    for progression in cma_status.get("installProgressions") or []:
        conditions = []
        for condition in progression.get("conditions") or []:
            found = _LATER_PROGRESSION.match(str(condition.get("message") or ""))
            if found and found[1] == found[3]:
                condition = {**condition, "message": f"{found[2]}/{found[3]} {found[4]}"}
            conditions.append(condition)
        progressions.append({**progression, "conditions": conditions})
    return {**cma_status, "installProgressions": progressions} if progressions else cma_status


def _comparable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _by_type(k, _comparable(v)) for k, v in sorted(value.items())
                if v is not None and not k.endswith(("Time", "Timestamp")) and k != "lastObservedGeneration"}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


def _by_type(key: str, value: Any) -> Any:
    """Conditions by type: a map keyed by type (``listType: map``), whose order only says which
    writer came first."""
    if key == "conditions" and isinstance(value, list):
        return sorted(value, key=lambda c: str(c.get("type")) if isinstance(c, dict) else "")
    return value


def differences(theirs: Any, ours: Any, path: str = "", names: tuple[str, str] = ("OCM", "ours")) -> list[str]:
    """Every path where two statuses differ, with both values (named by ``names``)."""
    if isinstance(theirs, dict) and isinstance(ours, dict):
        found: list[str] = []
        for key in sorted(set(theirs) | set(ours)):
            found += differences(theirs.get(key), ours.get(key), f"{path}.{key}", names)
        return found
    if isinstance(theirs, list) and isinstance(ours, list) and len(theirs) == len(ours):
        return [d for i, (a, b) in enumerate(zip(theirs, ours, strict=True))
                for d in differences(a, b, f"{path}[{i}]", names)]
    return [] if theirs == ours else [f"{path}: {names[0]} {theirs!r}, {names[1]} {ours!r}"]


# What OCM's processes wrote on each hub kind run so far in this process (``make test`` keeps a
# file's tests on one worker), for the comparison of the two hubs.
_OCM_ON: dict[str, tuple[dict[str, Any], dict[str, dict[str, Any]]]] = {}


def _statuses(cma: dict[str, Any], mcas: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"cma.status": _comparable(cma), **{f"{c}/mca.status": _comparable(m) for c, m in sorted(mcas.items())}}


def test_ocm_and_our_addon_managers_give_the_same_status(tmp_path: Path, hub_kind: str) -> None:
    for name, _ in OCM_PROCESSES:
        require(name)
    (tmp_path / "ocm").mkdir()
    (tmp_path / "ours").mkdir()
    ocm_cma, ocm_mcas, errors = _roll_out(tmp_path / "ocm", hub_kind, ocm=True)
    assert errors == [], "OCM's processes logged request errors:\n" + "\n".join(errors)
    our_cma, our_mcas, _ = _roll_out(tmp_path / "ours", hub_kind, ocm=False)
    assert sorted(ocm_mcas) == sorted(our_mcas)
    found = differences(_comparable(ocm_cma), _comparable(_as_ocm_v1_2(our_cma)), "cma.status")
    for cluster in sorted(ocm_mcas):
        found += differences(_comparable(ocm_mcas[cluster]), _comparable(our_mcas[cluster]), f"{cluster}/mca.status")
    assert found == [], "\n".join(found)

    # OCM's own statuses on this hub and on the other kind (when it ran before): what OCM's
    # controllers write must not depend on which API server answers them.
    _OCM_ON[hub_kind] = (ocm_cma, ocm_mcas)
    for other, (other_cma, other_mcas) in sorted(_OCM_ON.items()):
        if other != hub_kind:
            across = differences(_statuses(other_cma, other_mcas), _statuses(ocm_cma, ocm_mcas), "OCM", (other, hub_kind))
            assert across == [], f"OCM's statuses differ between {other} and {hub_kind}:\n" + "\n".join(across)
