"""Builders for the add-on configuration tests: CMAs, MCAs, Placements and decisions as the API
server stores them (v1alpha1), a hash lookup, and a tiny simulation of the rest of the system
(writing the plan back, the add-on agent reporting Progressing) to drive docs/behaviour/addons.md 13 step by step.
No tests here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from ocm_rollout.api.constants import (
    ADDON_DEPLOYMENT_CONFIG_RESOURCE,
    ADDON_GROUP,
    ANNOTATION_ROLLOUT_ABORTED,
    LABEL_DECISION_GROUP_INDEX,
    LABEL_DECISION_GROUP_NAME,
    LABEL_PLACEMENT,
)
from ocm_rollout.controllers.addon.abort import render as render_aborts
from ocm_rollout.controllers.addon.configrollout import (
    ConfigRolloutPlan,
    Judge,
    judge_direct,
    plan_config_rollout,
    set_condition,
)
from ocm_rollout.controllers.addon.configs import HashOf, cma_status_references
from ocm_rollout.controllers.addon.inputs import PlacementInput
from ocm_rollout.controllers.common.wire import format_time
from ocm_rollout.controllers.rollout.reservations import EMPTY, Reservations

JSON = dict[str, Any]
ADC = (ADDON_GROUP, ADDON_DEPLOYMENT_CONFIG_RESOURCE)
BASE = datetime(2024, 5, 1, 10, 0, 0, tzinfo=UTC)
NS = "default"


def at(seconds: float) -> datetime:
    return BASE + timedelta(seconds=seconds)


def ts(seconds: float) -> str:
    return format_time(at(seconds))


def H(value: str) -> str:
    """The stand-in spec hash of an ADC with variable ``value`` (13: H(x))."""
    return f"hash-{value}"


def hashes(objects: Mapping[tuple[str, str], str], *, supported: Iterable[tuple[str, str]] = (ADC,)) -> HashOf:
    """A HashOf over ``{(namespace, name): hash}`` of ADCs; other types are not hashed (None)."""
    kinds = set(supported)

    def hash_of(group: str, resource: str, namespace: str, name: str) -> str | None:
        if (group, resource) not in kinds:
            return None
        return objects.get((namespace, name), "")

    return hash_of


def cfg(name: str, namespace: str = NS, group: str = ADDON_GROUP, resource: str = ADDON_DEPLOYMENT_CONFIG_RESOURCE) -> JSON:
    """An AddOnConfig (placement configs, MCA spec.configs)."""
    out: JSON = {"group": group, "resource": resource, "name": name}
    if namespace:
        out["namespace"] = namespace
    return out


def supported(name: str | None = None, namespace: str = NS, group: str = ADDON_GROUP, resource: str = ADDON_DEPLOYMENT_CONFIG_RESOURCE) -> JSON:
    """A v1alpha1 spec.supportedConfigs item, with a defaultConfig when ``name`` is given."""
    out: JSON = {"group": group, "resource": resource}
    if name is not None:
        out["defaultConfig"] = {"namespace": namespace, "name": name} if namespace else {"name": name}
    return out


def strategy_all(deadline: str | None = None) -> JSON:
    return {"type": "All", "all": {"progressDeadline": deadline}} if deadline else {"type": "All"}


def progressive(**body: Any) -> JSON:
    return {"type": "Progressive", "progressive": body}


def per_group(**body: Any) -> JSON:
    return {"type": "ProgressivePerGroup", "progressivePerGroup": body}


def pstrategy(name: str, *, configs: list[JSON] | None = None, rollout: JSON | None = None, namespace: str = NS) -> JSON:
    out: JSON = {"namespace": namespace, "name": name}
    if configs is not None:
        out["configs"] = configs
    out["rolloutStrategy"] = rollout if rollout is not None else {"type": "All"}
    return out


def cma(
    *,
    name: str = "test",
    defaults: list[JSON] | None = None,
    placements: list[JSON] | None = None,
    type_: str | None = None,
    lifecycle: str | None = None,
    status: JSON | None = None,
) -> JSON:
    install: JSON = {"type": type_ if type_ is not None else ("Placements" if placements else "Manual")}
    if placements:
        install["placements"] = placements
    obj: JSON = {
        "apiVersion": f"{ADDON_GROUP}/v1alpha1",
        "kind": "ClusterManagementAddOn",
        "metadata": {"name": name, "resourceVersion": "1", "uid": "cma-uid"},
        "spec": {"supportedConfigs": defaults if defaults is not None else [supported("default-config")],
                 "installStrategy": install},
    }
    if lifecycle is not None:
        obj["metadata"]["annotations"] = {"addon.open-cluster-management.io/lifecycle": lifecycle}
    if status is not None:
        obj["status"] = status
    return obj


def ref(
    name: str,
    spec_hash: str,
    *,
    applied: str | None = None,
    namespace: str = NS,
    group: str = ADDON_GROUP,
    resource: str = ADDON_DEPLOYMENT_CONFIG_RESOURCE,
    og: int = 1,
) -> JSON:
    """An MCA status.configReferences item (v1alpha1) desiring ``name`` with ``spec_hash``, having
    applied ``applied`` (a hash of the same object) or nothing."""
    desired: JSON = {"name": name, "specHash": spec_hash}
    item: JSON = {"group": group, "resource": resource, "name": name, "lastObservedGeneration": og}
    if namespace:
        desired = {"namespace": namespace, **desired}
        item["namespace"] = namespace
    item["desiredConfig"] = desired
    if applied is not None:
        item["lastAppliedConfig"] = {**desired, "specHash": applied}
    return item


def cond(type_: str, status: str, reason: str, ltt: float = 0, message: str = "") -> JSON:
    return {"type": type_, "status": status, "reason": reason, "message": message or reason, "lastTransitionTime": ts(ltt)}


def mca(
    cluster: str,
    *,
    refs: list[JSON] | None = None,
    conditions: list[JSON] | None = None,
    configs: list[JSON] | None = None,
    name: str = "test",
) -> JSON:
    status: JSON = {}
    if conditions:
        status["conditions"] = conditions
    if refs is not None:
        status["configReferences"] = refs
    spec: JSON = {"installNamespace": "open-cluster-management-agent-addon"}
    if configs is not None:
        spec["configs"] = configs
    return {
        "apiVersion": f"{ADDON_GROUP}/v1alpha1",
        "kind": "ManagedClusterAddOn",
        "metadata": {"name": name, "namespace": cluster, "resourceVersion": "1"},
        "spec": spec,
        "status": status,
    }


def done(cluster: str, config: str, spec_hash: str, ltt: float = -3600, **kw: Any) -> JSON:
    """An MCA that applied ``config`` (Progressing False/Completed since ``ltt``, Configured True)."""
    return mca(
        cluster,
        refs=[ref(config, spec_hash, applied=spec_hash)],
        conditions=[
            cond("Progressing", "False", "Completed", ltt, "completed with no errors."),
            cond("Configured", "True", "ConfigurationsConfigured", ltt, "Configurations configured"),
        ],
        **kw,
    )


def placement(name: str, *, namespace: str = NS, selected: int = 0, per_group: Any = None, generation: int = 1) -> JSON:
    spec: JSON = {}
    if per_group is not None:
        spec["decisionStrategy"] = {"groupStrategy": {"clustersPerDecisionGroup": per_group}}
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "Placement",
        "metadata": {"name": name, "namespace": namespace, "generation": generation},
        "spec": spec,
        "status": {"numberOfSelectedClusters": selected},
    }


def decision(placement_name: str, clusters: list[str], *, index: int | str = 0, group: str = "", page: int = 1, namespace: str = NS) -> JSON:
    labels = {LABEL_PLACEMENT: placement_name, LABEL_DECISION_GROUP_INDEX: str(index)}
    if group:
        labels[LABEL_DECISION_GROUP_NAME] = group
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "PlacementDecision",
        "metadata": {"name": f"{placement_name}-decision-{page}", "namespace": namespace, "labels": labels},
        "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]},
    }


def inputs(*specs: tuple[Any, ...]) -> dict[tuple[str, str], PlacementInput]:
    """``("p1", [["c0", "c1"], ["c2"]])`` -> p1 with decision groups 0 and 1 (one page each); a
    third item replaces the Placement object."""
    out: dict[tuple[str, str], PlacementInput] = {}
    for spec in specs:
        name, groups = spec[0], spec[1]
        obj = spec[2] if len(spec) > 2 else placement(name)
        pages = [decision(name, clusters, index=i, page=i + 1) for i, clusters in enumerate(groups)]
        out[(NS, name)] = PlacementInput(obj, pages)
    return out


class Hub:
    """A CMA, its MCAs and placements, passed through the pure core one pass at a time; the
    plan's writes are applied back (as the operator would), and helpers play the add-on agent."""

    def __init__(
        self,
        the_cma: JSON,
        mcas: dict[str, JSON],
        placements: dict[tuple[str, str], PlacementInput],
        objects: dict[tuple[str, str], str] | None = None,
        judge: Judge = judge_direct,
    ) -> None:
        self.cma = the_cma
        self.judge = judge
        self.mcas = mcas
        self.placements = placements
        self.objects = dict(objects or {})
        self.reserved: Reservations = EMPTY
        self.last: ConfigRolloutPlan | None = None

    def plan(self, now: float) -> ConfigRolloutPlan:
        status = cma_status_references(self.cma, hashes(self.objects))
        return plan_config_rollout(
            cma={**self.cma, "status": status}, mcas=self.mcas, placements=self.placements,
            reserved=self.reserved, now=at(now), hash_of=hashes(self.objects), judge=self.judge,
        )

    def annotate(self, key: str, value: str | None) -> None:
        """Set (or, with None, remove) an annotation of the CMA."""
        metadata = dict(self.cma.get("metadata") or {})
        annotations = {k: v for k, v in (metadata.get("annotations") or {}).items() if k != key}
        if value is not None:
            annotations[key] = value
        metadata["annotations"] = annotations
        self.cma = {**self.cma, "metadata": metadata}

    def step(self, now: float) -> ConfigRolloutPlan:
        plan = self.plan(now)
        self.reserved = plan.reservations
        if plan.aborts_changed:
            self.annotate(ANNOTATION_ROLLOUT_ABORTED, render_aborts(plan.aborts))
        for cluster, status in plan.mca_status.items():
            self.mcas[cluster] = {**self.mcas[cluster], "status": status}
        self.cma = {**self.cma, "status": plan.cma_status}
        self.last = plan
        return plan

    def agent(self, clusters: Iterable[str], now: float, *, ready: bool) -> None:
        """The add-on agent on ``clusters`` (docs/behaviour/addons.md 9, simplified): works ready -> Progressing
        False/Completed and lastApplied := desired; not ready -> Progressing True."""
        for cluster in clusters:
            obj = self.mcas[cluster]
            status = dict(obj.get("status") or {})
            refs = [dict(r) for r in status.get("configReferences") or []]
            if ready:
                for item in refs:
                    item["lastAppliedConfig"] = dict(item["desiredConfig"])
                conditions = set_condition(status.get("conditions"), "Progressing", "False", "Completed",
                                           "completed with no errors.", ts(now))
            else:
                conditions = set_condition(status.get("conditions"), "Progressing", "True", "Progressing",
                                           "progressing... work is not ready", ts(now))
            status["configReferences"] = refs
            if conditions is not None:
                status["conditions"] = conditions
            self.mcas[cluster] = {**obj, "status": status}

    def fail(self, clusters: Iterable[str], now: float, message: str = "work apply failed") -> None:
        for cluster in clusters:
            obj = self.mcas[cluster]
            status = dict(obj.get("status") or {})
            conditions = set_condition(status.get("conditions"), "Progressing", "False", "Failed", message, ts(now))
            if conditions is not None:
                status["conditions"] = conditions
            self.mcas[cluster] = {**obj, "status": status}

    # -- reading ----------------------------------------------------------------------------------
    def desired_hash(self, cluster: str) -> list[str]:
        refs = (self.mcas[cluster].get("status") or {}).get("configReferences") or []
        return [r["desiredConfig"]["specHash"] for r in refs]

    def applied_hash(self, cluster: str) -> list[str | None]:
        refs = (self.mcas[cluster].get("status") or {}).get("configReferences") or []
        return [(r.get("lastAppliedConfig") or {}).get("specHash") for r in refs]

    def mca_condition(self, cluster: str, type_: str) -> JSON | None:
        for c in (self.mcas[cluster].get("status") or {}).get("conditions") or []:
            if c.get("type") == type_:
                return dict(c)
        return None

    def progression(self, name: str = "p1") -> JSON:
        for entry in (self.cma.get("status") or {}).get("installProgressions") or []:
            if entry["name"] == name:
                return dict(entry)
        raise KeyError(name)

    def cma_message(self, name: str = "p1") -> str:
        return str(self.progression(name)["conditions"][0]["message"])

    def cma_condition(self, name: str = "p1") -> JSON:
        return dict(self.progression(name)["conditions"][0])


def one_placement(
    clusters: list[str],
    rollout: JSON,
    *,
    config: str = "new-config",
    mcas: dict[str, JSON] | None = None,
    objects: dict[tuple[str, str], str] | None = None,
    groups: list[list[str]] | None = None,
) -> Hub:
    """A CMA installed by placement p1 (``groups``, or one group of ``clusters``) under ``rollout``
    with placement config ``config`` (hash H(new)); every MCA (``mcas``, or one per cluster) is
    done with ``old-config`` (hash H(old))."""
    the_cma = cma(placements=[pstrategy("p1", configs=[cfg(config)], rollout=rollout)])
    if mcas is None:
        mcas = {c: done(c, "old-config", H("old")) for c in clusters}
    objects = objects if objects is not None else {(NS, config): H("new"), (NS, "old-config"): H("old")}
    return Hub(the_cma, mcas, inputs(("p1", groups or [clusters])), objects)
