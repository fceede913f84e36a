"""The add-on manager hears its inputs in any order: an MCA whose event came before its CMA's
(a hand-made MCA created right after its CMA: the list-and-watch MCA cache is faster than kopf's
batched CMA events) must be looked at again once the CMA arrives, and so must the CMA once the
MCA arrives; a configuration event that came before its CMA's must not be needed afterwards.

Driven at the level of the controller's declarations: events are handed to its caches as the
sources would, passes are run by hand, and what each event queued is read from the queues."""

from __future__ import annotations

from typing import Any

from kubernetes.client import ApiClient

from ocm_rollout.client.kube import (
    ADDON_DEPLOYMENT_CONFIGS,
    CLUSTER_MANAGEMENT_ADDONS,
    MANAGED_CLUSTER_ADDONS,
    Conflict,
    Kube,
    Resource,
)
from ocm_rollout.client.watchcache import WatchCache
from ocm_rollout.controllers.addon.operator import AddonController
from ocm_rollout.controllers.runtime.cache import Cache, KopfSource, WatchSource
from ocm_rollout.controllers.runtime.outcome import CONFLICT, DONE
from ocm_rollout.controllers.runtime.registry import ControllerContext
from ocm_rollout.controllers.runtime.shell import Runtime

JSON = dict[str, Any]
ADC = {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs"}


def cma(name: str = "hello") -> JSON:
    return {
        "apiVersion": "addon.open-cluster-management.io/v1alpha1",
        "kind": "ClusterManagementAddOn",
        "metadata": {"name": name, "uid": "cma-uid", "resourceVersion": "10", "generation": 1},
        "spec": {
            "installStrategy": {"type": "Manual"},
            "supportedConfigs": [{**ADC, "defaultConfig": {"namespace": "default", "name": "deploy-config"}}],
        },
    }


def mca(name: str = "hello", cluster: str = "cluster1") -> JSON:
    return {
        "apiVersion": "addon.open-cluster-management.io/v1alpha1",
        "kind": "ManagedClusterAddOn",
        "metadata": {"name": name, "namespace": cluster, "uid": "mca-uid", "resourceVersion": "12"},
        "spec": {},
    }


class NoApi(Kube):
    def __init__(self) -> None:
        super().__init__(ApiClient())

    async def list_objects(self, *_args: Any, **_kwargs: Any) -> list[JSON]:
        return []


class OneCmaApi(NoApi):
    """The API as it is now: ``current`` is the CMA stored under its name (None: none), ``mcas``
    the MCAs. Patches are recorded; one naming another resourceVersion than the stored one is a
    409, the others are merged (one level deep) and answered at the next resourceVersion."""

    def __init__(self, current: JSON | None, mcas: list[JSON]) -> None:
        super().__init__()
        self.current = current
        self.stored = {(m["metadata"]["namespace"], m["metadata"]["name"]): m for m in mcas}
        self.patches: list[JSON] = []

    async def list_objects(self, res: Resource, *_args: Any, field_selector: str | None = None, **_kwargs: Any) -> list[JSON]:
        assert res == CLUSTER_MANAGEMENT_ADDONS and field_selector is not None
        name = field_selector.removeprefix("metadata.name=")
        return [self.current] if self.current is not None and self.current["metadata"]["name"] == name else []

    async def create(self, res: Resource, body: JSON, namespace: str | None = None) -> JSON:
        assert res.kind == "Event"  # the controller creates nothing else here
        return body

    async def patch(
        self, res: Resource, name: str, patch: JSON | list[JSON], namespace: str | None = None, *, subresource: str | None = None
    ) -> JSON:
        assert isinstance(patch, dict)
        if res == CLUSTER_MANAGEMENT_ADDONS:
            assert self.current is not None
            old = self.current
        else:
            self.patches.append(patch)
            old = self.stored[(namespace or "", name)]
        fence = patch.get("metadata", {}).get("resourceVersion")
        if fence is not None and fence != old["metadata"]["resourceVersion"]:
            raise Conflict(409, "Conflict", "the object has been modified")
        new = {**old, **{k: v for k, v in patch.items() if k != "metadata"}}
        new["metadata"] = {**old["metadata"], **patch.get("metadata", {})}
        new["metadata"]["resourceVersion"] = str(int(old["metadata"]["resourceVersion"]) + 1)
        if res == CLUSTER_MANAGEMENT_ADDONS:
            self.current = new
        else:
            self.stored[(namespace or "", name)] = new
        return new


def controller() -> AddonController:
    ctl = AddonController(Runtime("addon", ControllerContext(kube=NoApi())))
    ctl.configs._started = True  # no configuration watch in a unit test
    for cache in ctl.runtime.caches:
        if isinstance(cache.source, KopfSource):
            cache.source.bind({})
    return ctl


def controller_on(api: OneCmaApi) -> AddonController:
    """A controller whose writes (and MCA writer pool) go to ``api``, with cluster1 known."""
    ctl = AddonController(Runtime("addon", ControllerContext(kube=api)))
    ctl.configs._started = True
    for cache in ctl.runtime.caches:
        if isinstance(cache.source, KopfSource):
            cache.source.bind({})
    ctl.writer = api  # type: ignore[assignment]
    arrive(ctl.cluster_cache, {"metadata": {"name": "cluster1", "uid": "cluster-uid", "resourceVersion": "1"}})
    configs = WatchCache(api, ADDON_DEPLOYMENT_CONFIGS)  # listed, never watched
    configs.objects[("default", "deploy-config")] = {
        "metadata": {"name": "deploy-config", "namespace": "default", "uid": "adc-uid", "resourceVersion": "5", "generation": 1},
        "spec": {"agentInstallNamespace": "hello"},
    }
    configs.synced.set()
    ctl.configs.caches[(ADC["group"], ADC["resource"])] = configs
    return ctl


def arrive(cache: Cache, obj: JSON, event_type: str = "ADDED") -> None:
    """The source stores ``obj`` and tells the cache, as kopf or the watch would."""
    meta = obj["metadata"]
    key = (meta.get("namespace") or "", meta["name"])
    if isinstance(cache.source, KopfSource):
        index = cache.source._index
        assert isinstance(index, dict)
        index[key] = [obj]
    else:
        assert isinstance(cache.source, WatchSource)
        (watch,) = cache.source.caches.values()
        watch.objects[key] = obj
    cache.on_source(event_type, obj, None)


def drain(ctl: AddonController) -> tuple[set[str], set[str]]:
    """The CMA and MCA keys queued (now or later), emptying both queues."""
    found: list[set[str]] = []
    for queue in (ctl.cma_queue, ctl.mca_queue):
        keys = set(queue._ready_set) | set(queue._due)
        queue._ready.clear()
        queue._ready_set.clear()
        queue._due.clear()
        queue._delayed.clear()
        found.append(keys)
    return found[0], found[1]


async def test_an_mca_seen_before_its_cma_is_looked_at_again_when_the_cma_arrives() -> None:
    ctl = controller()
    arrive(ctl.mca_cache, mca())
    assert drain(ctl) == ({"hello"}, {"cluster1/hello"})
    assert await ctl.reconcile_mca("cluster1/hello") == DONE  # no CMA yet: nothing to do
    assert await ctl.reconcile_cma("hello") == DONE
    arrive(ctl.cma_cache, cma())
    cmas, mcas = drain(ctl)
    assert cmas == {"hello"}
    assert mcas == {"cluster1/hello"}, "the MCA whose pass found no CMA must be re-queued by the CMA's arrival"


async def test_a_cma_seen_before_its_mcas_is_looked_at_again_when_one_arrives() -> None:
    ctl = controller()
    arrive(ctl.cma_cache, cma())
    drain(ctl)
    arrive(ctl.mca_cache, mca())
    cmas, mcas = drain(ctl)
    assert cmas == {"hello"} and mcas == {"cluster1/hello"}
    assert ctl.mcas("hello") == {"cluster1": mca()}


async def test_a_default_configuration_seen_after_its_cma_re_queues_the_cma() -> None:
    ctl = controller()
    arrive(ctl.cma_cache, cma())
    drain(ctl)
    config = {"metadata": {"name": "deploy-config", "namespace": "default", "resourceVersion": "11"}}
    ctl.on_config(ADC["group"], ADC["resource"], config)
    assert drain(ctl)[0] == {"hello"}


async def test_a_hand_made_mca_is_not_adopted_by_a_deleted_cma_the_cache_still_shows() -> None:
    """A CMA deleted and created again under the same name (one example after another): the MCA
    made for the new one can arrive while kopf's CMA cache still shows the old one (the MCA's
    list-and-watch cache is faster, and kopf handles the old and the new CMA in separate workers).
    A controller owner reference to the old uid has the garbage collector delete the user's MCA."""
    old = cma()
    new = {**old, "metadata": {**old["metadata"], "uid": "cma-uid-2", "resourceVersion": "20"}}
    made = mca()
    api = OneCmaApi(current=new, mcas=[made])
    ctl = controller_on(api)
    arrive(ctl.cma_cache, old)
    arrive(ctl.mca_cache, made)
    drain(ctl)
    await ctl.reconcile_mca("cluster1/hello")
    owners = {ref["uid"] for patch in api.patches for ref in patch.get("metadata", {}).get("ownerReferences") or []}
    assert "cma-uid" not in owners, "the MCA was adopted by a CMA that no longer exists"
    arrive(ctl.cma_cache, new, "ADDED")
    assert "cluster1/hello" in drain(ctl)[1], "the new CMA's arrival looks at its MCA again"
    await ctl.reconcile_mca("cluster1/hello")
    owners = {ref["uid"] for patch in api.patches for ref in patch.get("metadata", {}).get("ownerReferences") or []}
    assert owners == {"cma-uid-2"}


def incarnations() -> tuple[JSON, JSON]:
    """A CMA as it was before it was deleted, and the CMA created again under its name."""
    old = cma()
    new = cma()
    new["metadata"] = {**old["metadata"], "uid": "cma-uid-2", "resourceVersion": "20"}
    new["spec"] = {"installStrategy": {"type": "Manual"}, "supportedConfigs": [{**ADC, "defaultConfig": {"namespace": "default", "name": "cfg-2"}}]}
    return old, new


async def test_the_cma_cache_shows_the_new_cma_while_kopf_still_holds_the_deleted_one() -> None:
    """kopf indexes each object (uid) in its own worker: the new CMA can be indexed before the
    old one's DELETED is. The cache must show the new CMA, not whichever kopf stored first."""
    ctl = controller()
    old, new = incarnations()
    index = ctl.cma_cache.source._index  # type: ignore[union-attr]
    assert isinstance(index, dict)
    index[("", "hello")] = [old, new]
    ctl.cma_cache.on_source("ADDED", new, None)
    shown = ctl.cma_cache.get("hello")
    assert shown is not None and shown["metadata"]["uid"] == "cma-uid-2"


async def test_a_late_deleted_of_the_old_cma_keeps_what_the_new_one_depends_on() -> None:
    """The old CMA's DELETED handled after the new CMA's ADDED (separate kopf workers) must not
    empty the index of the name: a change of the new CMA's default configuration must still
    re-queue it."""
    ctl = controller()
    old, new = incarnations()
    arrive(ctl.cma_cache, old)
    arrive(ctl.cma_cache, new, "ADDED")
    ctl.cma_cache.on_source("DELETED", old, None)
    drain(ctl)
    config = {"metadata": {"name": "cfg-2", "namespace": "default", "resourceVersion": "21"}}
    ctl.on_config(ADC["group"], ADC["resource"], config)
    assert drain(ctl)[0] == {"hello"}, "the new CMA was forgotten with the old one"


async def test_a_late_answer_to_an_own_write_does_not_hide_a_newer_mca_from_the_cma_pass() -> None:
    """The MCA pass adopts a hand-made MCA (12 -> 13); before its coroutine handles the answer,
    the watch brings 13 and then the add-on agent's status write made on it (14, no
    configReferences yet: the agent waits for them). The late answer (13) must not make the CMA
    pass plan from 13: its fenced status write would meet a 409, and with the agent's event
    already handled no event would come to re-queue it; the MCA would stay unconfigured."""
    made = mca()
    the_cma = cma()
    api = OneCmaApi(current=the_cma, mcas=[made])
    ctl = controller_on(api)
    arrive(ctl.cma_cache, the_cma)
    arrive(ctl.mca_cache, made)
    adopted = await api.patch(MANAGED_CLUSTER_ADDONS, "hello", {"metadata": {"ownerReferences": [], "resourceVersion": "12"}}, "cluster1")
    agent = await api.patch(
        MANAGED_CLUSTER_ADDONS, "hello", {"status": {"healthCheck": {"mode": "Customized"}}, "metadata": {"resourceVersion": "13"}},
        "cluster1", subresource="status",
    )
    arrive(ctl.mca_cache, adopted, "MODIFIED")
    arrive(ctl.mca_cache, agent, "MODIFIED")
    ctl.mca_cache.wrote(adopted)  # the adopt step's answer, handled late
    drain(ctl)
    for _ in range(3):  # the passes the CMA key gets within a second
        outcome = await ctl.reconcile_cma("hello")
        if outcome.kind not in ("conflict", "after") or outcome.seconds > 1.0:
            break
    stored = api.stored[("cluster1", "hello")]
    assert (stored.get("status") or {}).get("configReferences"), "the MCA was left without configReferences"
    assert (stored.get("status") or {}).get("healthCheck") == {"mode": "Customized"}


async def test_a_cma_pass_whose_mca_status_write_met_a_newer_mca_looks_again() -> None:
    """A 409 on an MCA status write means the pass planned from an older MCA than the API's; the
    event of the newer one may already have been handled (nothing else would re-queue the CMA),
    so the pass asks to look again shortly instead of waiting for an event."""
    made = mca()
    the_cma = cma()
    api = OneCmaApi(current=the_cma, mcas=[made])
    ctl = controller_on(api)
    arrive(ctl.cma_cache, the_cma)
    arrive(ctl.mca_cache, made)
    await api.patch(MANAGED_CLUSTER_ADDONS, "hello", {"status": {"healthCheck": {"mode": "Customized"}}}, "cluster1", subresource="status")
    drain(ctl)
    outcome = await ctl.reconcile_cma("hello")
    assert outcome == CONFLICT
