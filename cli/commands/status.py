"""``ocm-rollout status [-n NS] [--kind all|mwrs|addon] [NAME]``: the rollout progress of
ManifestWorkReplicaSets and of add-on configurations (ClusterManagementAddOns).

Per placement and decision group: clusters succeeded / applied / failed / progressing /
waiting with progress bars, and why the failing clusters fail; for an add-on, its
ManagedClusterAddOns configured / succeeded / progressing / failed / timed out against the
desired configuration. Reads through a kubeconfig
(``--kubeconfig``, else $KUBECONFIG, else ./.ocm-rollout/kubeconfig, the one `ocm-rollout up`
writes) and computes the same per-cluster rollout statuses as the controller.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from datetime import UTC, datetime

from ocm_rollout.api.constants import LABEL_MANIFESTWORK_REPLICASET, LABEL_PLACEMENT
from ocm_rollout.client.kube import (
    CLUSTER_MANAGEMENT_ADDONS,
    JSON,
    MANAGED_CLUSTER_ADDONS,
    MANIFEST_WORK_REPLICA_SETS,
    MANIFEST_WORKS,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
    Kube,
    KubeError,
)
from ocm_rollout.client.kubeconfig import KubeconfigError, load_client
from ocm_rollout.controllers.addon.inputs import PlacementInput
from ocm_rollout.controllers.addon.report import build_addon_report, render_addon_report
from ocm_rollout.controllers.workset.report import build_report, render_report
from ocm_rollout.controllers.workset.workbuild import belongs_to, owner_for

DEFAULT_KUBECONFIG = os.path.join(".ocm-rollout", "kubeconfig")
CLEAR_SCREEN = "\x1b[H\x1b[2J"


class StatusError(Exception):
    """A problem to report in one line (exit code 1)."""


def default_kubeconfig() -> str:
    from_env = os.environ.get("KUBECONFIG", "")
    first = from_env.split(os.pathsep)[0] if from_env else ""
    return first or DEFAULT_KUBECONFIG


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    parser = sub.add_parser(
        "status",
        help="show the rollout progress of ManifestWorkReplicaSets and add-on configurations",
        description=(
            "Show, per placement and decision group, how many clusters have succeeded, are applied, "
            "failed, are progressing or still wait for the rollout, with the failing clusters' reasons: "
            "for ManifestWorkReplicaSets (their ManifestWorks) and for ClusterManagementAddOns (their "
            "ManagedClusterAddOns against the desired configuration)."
        ),
    )
    parser.add_argument(
        "name", nargs="?", metavar="NAME", help="one ManifestWorkReplicaSet or ClusterManagementAddOn (default: all)"
    )
    parser.add_argument(
        "--kind",
        choices=("all", "mwrs", "addon"),
        default="all",
        help="ManifestWorkReplicaSets (mwrs), add-ons (addon) or both (default: all)",
    )
    parser.add_argument(
        "-n", "--namespace", default=None, metavar="NS", help="only this namespace (default: every namespace)"
    )
    parser.add_argument(
        "--kubeconfig",
        default=None,
        metavar="PATH",
        help=f"kubeconfig to read through (default: $KUBECONFIG, else {DEFAULT_KUBECONFIG})",
    )
    parser.add_argument(
        "-w", "--watch", action="store_true", help="redraw every --interval seconds until interrupted"
    )
    parser.add_argument(
        "--interval", type=float, default=2.0, metavar="SECONDS", help="refresh period of --watch (default: 2)"
    )
    parser.set_defaults(func=main)


async def _gather(kube: Kube, namespace: str | None, name: str | None, kind: str = "mwrs") -> list[str]:
    if kind == "addon":
        return await _gather_addons(kube, name)
    if kind == "all" and namespace is None:
        # ClusterManagementAddOns are cluster-scoped: -n NS shows ManifestWorkReplicaSets only.
        works = await _gather_mwrs(kube, namespace, name, missing_ok=True)
        addons = await _gather_addons(kube, name, missing_ok=True)
        found = [t for t in works + addons if not t.startswith("No ")]
        if found:
            return found
        if name is not None:
            raise StatusError(f'no ManifestWorkReplicaSet or ClusterManagementAddOn named "{name}"')
        return ["No ManifestWorkReplicaSets or ClusterManagementAddOns."]
    return await _gather_mwrs(kube, namespace, name)


async def _gather_addons(kube: Kube, name: str | None, *, missing_ok: bool = False) -> list[str]:
    if name is not None:
        cma = await kube.get_or_none(CLUSTER_MANAGEMENT_ADDONS, name)
        if cma is None:
            if missing_ok:
                return []
            raise StatusError(f'ClusterManagementAddOn "{name}" not found')
        found = [cma]
    else:
        found = await kube.list_objects(CLUSTER_MANAGEMENT_ADDONS)
    if not found:
        return [] if missing_ok else ["No ClusterManagementAddOns."]
    found.sort(key=lambda c: str(c["metadata"].get("name", "")))
    now = datetime.now(UTC)
    return [await _one_addon(kube, cma, now) for cma in found]


async def _one_addon(kube: Kube, cma: JSON, now: datetime) -> str:
    name = str(cma["metadata"].get("name", ""))
    mcas = {
        str(m["metadata"].get("namespace", "")): m
        for m in await kube.list_objects(MANAGED_CLUSTER_ADDONS, None, field_selector=f"metadata.name={name}")
    }
    placements: dict[tuple[str, str], PlacementInput] = {}
    for entry in ((cma.get("spec") or {}).get("installStrategy") or {}).get("placements") or []:
        ns, ref = str(entry.get("namespace") or ""), str(entry.get("name") or "")
        if not ns or not ref:
            continue
        placements[(ns, ref)] = PlacementInput(
            placement=await kube.get_or_none(PLACEMENTS, ref, ns),
            decisions=await kube.list_objects(PLACEMENT_DECISIONS, ns, label_selector=f"{LABEL_PLACEMENT}={ref}"),
        )
    report = build_addon_report(cma=cma, mcas=dict(sorted(mcas.items())), placements=placements, now=now)
    return render_addon_report(report)


async def _gather_mwrs(kube: Kube, namespace: str | None, name: str | None, *, missing_ok: bool = False) -> list[str]:
    if name is not None and namespace is not None:
        try:
            found = [await kube.get(MANIFEST_WORK_REPLICA_SETS, name, namespace)]
        except KubeError as exc:
            if exc.status == 404:
                if missing_ok:
                    return []
                raise StatusError(f'ManifestWorkReplicaSet "{name}" not found in namespace "{namespace}"') from None
            raise
    else:
        found = await kube.list_objects(MANIFEST_WORK_REPLICA_SETS, namespace)
        if name is not None:
            found = [m for m in found if (m.get("metadata") or {}).get("name") == name]
            if not found:
                if missing_ok:
                    return []
                raise StatusError(f'ManifestWorkReplicaSet "{name}" not found in any namespace')
    if not found:
        where = f'namespace "{namespace}"' if namespace else "any namespace"
        return [f"No ManifestWorkReplicaSets in {where}."]
    found.sort(key=lambda m: (m["metadata"].get("namespace", ""), m["metadata"].get("name", "")))
    now = datetime.now(UTC)
    out = []
    for mwrs in found:
        out.append(await _one(kube, mwrs, now))
    return out


async def _one(kube: Kube, mwrs: JSON, now: datetime) -> str:
    ns = mwrs["metadata"].get("namespace", "")
    owner = owner_for(ns, mwrs["metadata"].get("name", ""))
    works = await kube.list_objects(MANIFEST_WORKS, None, label_selector=f"{LABEL_MANIFESTWORK_REPLICASET}={owner.label_value}")
    works = [w for w in works if belongs_to(w, owner)]
    placements: dict[str, JSON | None] = {}
    decisions: dict[str, list[JSON]] = {}
    for ref in (mwrs.get("spec") or {}).get("placementRefs") or []:
        ref_name = str(ref.get("name") or "")
        placements[ref_name] = await kube.get_or_none(PLACEMENTS, ref_name, ns)
        decisions[ref_name] = await kube.list_objects(
            PLACEMENT_DECISIONS, ns, label_selector=f"{LABEL_PLACEMENT}={ref_name}"
        )
    report = build_report(mwrs=mwrs, works=works, placements=placements, decisions=decisions, now=now)
    return render_report(report)


def _render(kube: Kube, args: argparse.Namespace) -> str:
    return "\n\n".join(asyncio.run(_gather(kube, args.namespace, args.name, args.kind)))


def main(args: argparse.Namespace) -> int:
    path = args.kubeconfig or default_kubeconfig()
    if not os.path.exists(os.path.expanduser(path)):
        hint = " (start a local hub with `ocm-rollout up`, or pass --kubeconfig)" if args.kubeconfig is None else ""
        print(f"error: kubeconfig {path} does not exist{hint}", file=sys.stderr)
        return 1
    if args.interval <= 0:
        print("error: --interval must be a positive number of seconds", file=sys.stderr)
        return 2
    try:
        kube = Kube(load_client(path))
    except KubeconfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    while True:
        try:
            text = _render(kube, args)
        except StatusError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except KubeError as exc:
            print(f"error: the API server answered {exc.status} {exc.reason}: {exc.message}", file=sys.stderr)
            return 1
        except OSError as exc:
            print(f"error: cannot reach the API server of {path}: {exc}", file=sys.stderr)
            return 1
        except Exception as exc:  # urllib3 wraps connection failures in its own types
            if type(exc).__module__.startswith("urllib3"):
                print(f"error: cannot reach the API server of {path}: {_one_line(exc)}", file=sys.stderr)
                return 1
            raise
        if not args.watch:
            print(text)
            return 0
        sys.stdout.write(CLEAR_SCREEN + text + "\n")
        sys.stdout.flush()
        time.sleep(args.interval)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())

