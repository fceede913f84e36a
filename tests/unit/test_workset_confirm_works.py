"""The ManifestWorkReplicaSet controller confirms its works with the API when its cache lags
(WorksetController._confirm_owned_works); what that listing returned must never put back into
its owner index a version older than the one the watch delivered meanwhile, or a finished work
stays "progressing" in the controller's eyes for good (a 10,000-cluster rollout stuck at 9,997)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes.client import ApiClient

from ocm_rollout.client.kube import Kube
from ocm_rollout.controllers.runtime import confirm as runtime_confirm
from ocm_rollout.controllers.runtime.cache import WatchSource
from ocm_rollout.controllers.runtime.registry import ControllerContext
from ocm_rollout.controllers.runtime.shell import Runtime
from ocm_rollout.controllers.workset.operator import WorksetController
from ocm_rollout.controllers.workset.workbuild import owner_for

OWNER = owner_for("default", "web")


def work(rv: str, progressing: str) -> dict[str, Any]:
    return {
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": {
            "name": "web", "namespace": "cluster7", "resourceVersion": rv, "generation": 1,
            "labels": {"work.open-cluster-management.io/manifestworkreplicaset": OWNER.label_value},
        },
        "status": {"conditions": [{"type": "Progressing", "status": progressing, "observedGeneration": 1}]},
    }


class Listing(Kube):
    """A client whose listing of works answers ``items`` (read before the watch moved on)."""

    def __init__(self, items: list[dict[str, Any]]) -> None:
        super().__init__(ApiClient())
        self.items = items

    async def list_objects(self, *_args: Any, **_kwargs: Any) -> list[dict[str, Any]]:
        return self.items


def controller(kube: Kube) -> WorksetController:
    return WorksetController(Runtime("workset", ControllerContext(kube=kube)))


def arrive(ctl: WorksetController, obj: dict[str, Any]) -> None:
    """The works watch delivers ``obj``."""
    source = ctl.works.source
    assert isinstance(source, WatchSource)
    watch = source.caches[None]
    previous = watch.get(obj["metadata"]["name"], obj["metadata"]["namespace"])
    watch.remember(obj)
    ctl.works.on_source("MODIFIED", obj, previous)


async def test_a_listing_older_than_the_watch_does_not_roll_the_index_back() -> None:
    ctl = controller(Listing([work("200", "True")]))
    planned_from = [work("100", "True")]
    arrive(ctl, work("100", "True"))
    arrive(ctl, work("300", "False"))  # the watch delivers the finished work while the list is read
    merged = await ctl._confirm_owned_works(OWNER, planned_from)
    assert merged is not None  # the listing knew more than the plan did
    owned = ctl.owned_works(OWNER)
    assert [w["metadata"]["resourceVersion"] for w in owned] == ["300"]


async def test_a_listing_newer_than_the_cache_teaches_the_index() -> None:
    ctl = controller(Listing([work("300", "False")]))
    arrive(ctl, work("100", "True"))
    await ctl._confirm_owned_works(OWNER, [work("100", "True")])
    assert [w["metadata"]["resourceVersion"] for w in ctl.owned_works(OWNER)] == ["300"]


class Recording(Kube):
    """A client that answers a list of metadata with only each object's metadata, as the API
    does, lists one namespace when asked (with a field selector on the name, the ``metadata.name``
    one the add-on manager always sends aside), and records each call as (metadata only, the
    namespace listed: None for all)."""

    def __init__(self, items: list[dict[str, Any]]) -> None:
        super().__init__(ApiClient())
        self.items = items
        self.calls: list[tuple[bool, str | None]] = []

    async def list_objects(
        self, _res: Any, namespace: str | None = None, *, metadata_only: bool = False, field_selector: str | None = None,
        **_kwargs: Any,
    ) -> list[dict[str, Any]]:
        self.calls.append((metadata_only, namespace))
        found = [o for o in self.items if namespace is None or o["metadata"]["namespace"] == namespace]
        if field_selector and namespace is not None:
            name = field_selector.removeprefix("metadata.name=")
            found = [o for o in found if o["metadata"]["name"] == name]
        if metadata_only:
            return [{"kind": "PartialObjectMetadata", "metadata": o["metadata"]} for o in found]
        return found


METADATA = (True, None)
FULL_LIST = (False, None)


def in_cluster(obj: dict[str, Any], index: int) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "namespace": f"cluster{index}"}}


async def test_a_cache_that_kept_up_is_confirmed_from_the_works_metadata_alone() -> None:
    kube = Recording([work("100", "True")])
    ctl = controller(kube)
    arrive(ctl, work("100", "True"))
    assert await ctl._confirm_owned_works(OWNER, [work("100", "True")]) is None
    assert kube.calls == [METADATA]  # one list of metadata, no full works


async def test_a_newer_version_in_the_metadata_reads_that_work_and_plans_from_it() -> None:
    kube = Recording([work("300", "False")])
    ctl = controller(kube)
    arrive(ctl, work("100", "True"))
    merged = await ctl._confirm_owned_works(OWNER, [work("100", "True")])
    assert kube.calls == [METADATA, (False, "cluster7")]  # the newer work alone
    assert merged is not None and merged[0]["status"]["conditions"][0]["status"] == "False"


async def test_a_work_the_cache_never_saw_is_read() -> None:
    kube = Recording([work("100", "True")])
    ctl = controller(kube)
    merged = await ctl._confirm_owned_works(OWNER, [])
    assert kube.calls == [METADATA, (False, "cluster7")]
    assert merged is not None and [w["metadata"]["resourceVersion"] for w in merged] == ["100"]


async def test_many_newer_works_are_read_in_one_list_of_them_all() -> None:
    """Past ``confirm.few`` newer objects, one list costs less than a read for each."""
    planned = [in_cluster(work("100", "True"), i) for i in range(40)]
    stored = [in_cluster(work("300" if i < 9 else "100", "False" if i < 9 else "True"), i) for i in range(40)]
    kube = Recording(stored)
    ctl = controller(kube)
    merged = await ctl._confirm_owned_works(OWNER, planned)
    assert kube.calls == [METADATA, FULL_LIST]
    assert merged is not None
    assert sorted(w["metadata"]["namespace"] for w in merged if w["metadata"]["resourceVersion"] == "300") == sorted(
        f"cluster{i}" for i in range(9)
    )
    kube.calls.clear()
    stored[8] = planned[8]  # eight newer of 40: each read alone
    merged = await ctl._confirm_owned_works(OWNER, planned)
    assert kube.calls == [METADATA] + [(False, f"cluster{i}") for i in range(8)]


def mca(rv: str) -> dict[str, Any]:
    return {
        "apiVersion": "addon.open-cluster-management.io/v1alpha1",
        "kind": "ManagedClusterAddOn",
        "metadata": {"name": "hello", "namespace": "cluster7", "resourceVersion": rv},
    }


async def test_the_addon_manager_keeps_the_newer_mca_too() -> None:
    from ocm_rollout.controllers.addon.operator import AddonController
    from ocm_rollout.controllers.runtime.shell import Runtime

    ctl = AddonController(Runtime("addon", ControllerContext(kube=Listing([mca("200")]))))
    (watch,) = ctl.mca_cache.source.caches.values()  # type: ignore[union-attr]
    for version in ("100", "300"):
        obj = mca(version)
        watch.objects[("cluster7", "hello")] = obj
        ctl.mca_cache.on_source("MODIFIED", obj, None)
    merged = await ctl._confirm_mcas("hello", {"cluster7": mca("100")})
    assert merged is not None
    assert ctl.mcas_by_name["hello"]["cluster7"]["metadata"]["resourceVersion"] == "300"


async def test_the_addon_manager_confirms_from_the_mcas_metadata_alone_when_its_cache_kept_up() -> None:
    from ocm_rollout.controllers.addon.operator import AddonController

    kube = Recording([mca("100")])
    ctl = AddonController(Runtime("addon", ControllerContext(kube=kube)))
    assert await ctl._confirm_mcas("hello", {"cluster7": mca("100")}) is None
    assert kube.calls == [METADATA]  # one list of metadata, no full MCAs


async def test_the_addon_manager_reads_the_mca_the_metadata_shows_newer() -> None:
    from ocm_rollout.controllers.addon.operator import AddonController

    newer = {**mca("300"), "status": {"namespace": "agents"}}
    kube = Recording([newer])
    ctl = AddonController(Runtime("addon", ControllerContext(kube=kube)))
    merged = await ctl._confirm_mcas("hello", {"cluster7": mca("100")})
    assert kube.calls == [METADATA, (False, "cluster7")]
    assert merged is not None and merged["cluster7"]["status"] == {"namespace": "agents"}
    # An MCA the cache never saw is news too.
    kube.calls.clear()
    merged = await ctl._confirm_mcas("hello", {})
    assert kube.calls == [METADATA, (False, "cluster7")] and merged is not None and list(merged) == ["cluster7"]


async def test_the_addon_manager_lists_the_full_mcas_when_many_are_newer() -> None:
    from ocm_rollout.controllers.addon.operator import AddonController

    planned = {f"cluster{i}": in_cluster(mca("100"), i) for i in range(40)}
    kube = Recording([in_cluster(mca("300"), i) for i in range(40)])
    ctl = AddonController(Runtime("addon", ControllerContext(kube=kube)))
    merged = await ctl._confirm_mcas("hello", planned)
    assert kube.calls == [METADATA, FULL_LIST]
    assert merged is not None and {m["metadata"]["resourceVersion"] for m in merged.values()} == {"300"}


# --- confirming from a cache whose watch caught up with the API ----------------------------------

VERSION = ("version", None)


class Versioned(Recording):
    """``Recording``, and the kind's resourceVersion as the API holds it now (``list_version``)."""

    def __init__(self, items: list[dict[str, Any]], version: str) -> None:
        super().__init__(items)
        self.version = version

    async def list_version(self, *_args: Any, **_kwargs: Any) -> str:
        self.calls.append(VERSION)  # type: ignore[arg-type]
        return self.version


def delivered(ctl: WorksetController, obj: dict[str, Any]) -> None:
    """The works watch delivers ``obj`` as an event (the cache's version moves to it)."""
    source = ctl.works.source
    assert isinstance(source, WatchSource)
    source.caches[None]._apply({"type": "MODIFIED", "object": obj})


async def test_a_cache_whose_watch_reached_the_api_is_the_answer_without_a_list() -> None:
    kube = Versioned([work("300", "False")], version="300")
    ctl = controller(kube)
    delivered(ctl, work("300", "False"))
    merged = await ctl._confirm_owned_works(OWNER, [work("100", "True")])
    assert kube.calls == [VERSION]  # one page of at most one object, no list of the fleet
    assert merged is not None and [w["metadata"]["resourceVersion"] for w in merged] == ["300"]
    kube.calls.clear()
    assert await ctl._confirm_owned_works(OWNER, [work("300", "False")]) is None  # nothing newer than the plan
    assert kube.calls == [VERSION]


async def test_a_cache_the_api_is_ahead_of_waits_for_its_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime_confirm, "CATCH_UP_SECONDS", 5.0)
    kube = Versioned([], version="300")
    ctl = controller(kube)
    delivered(ctl, work("100", "True"))
    confirming = asyncio.create_task(ctl._confirm_owned_works(OWNER, [work("100", "True")]))
    await asyncio.sleep(0.05)
    assert not confirming.done()
    delivered(ctl, work("300", "False"))
    ctl.works.source.caches[None]._progressed()  # type: ignore[union-attr]  # as the watch does after each batch
    merged = await confirming
    assert kube.calls == [VERSION]
    assert merged is not None and merged[0]["status"]["conditions"][0]["status"] == "False"


async def test_a_watch_that_does_not_get_there_in_time_falls_back_to_the_metadata_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A quiet kind may never reach the API's resourceVersion (other kinds moved it): the
    metadata list answers, as for a kopf-fed cache."""
    monkeypatch.setattr(runtime_confirm, "CATCH_UP_SECONDS", 0.01)
    kube = Versioned([work("300", "False")], version="400")
    ctl = controller(kube)
    delivered(ctl, work("100", "True"))
    merged = await ctl._confirm_owned_works(OWNER, [work("100", "True")])
    assert kube.calls == [VERSION, METADATA, (False, "cluster7")]
    assert merged is not None and merged[0]["metadata"]["resourceVersion"] == "300"


async def test_the_addon_manager_confirms_from_its_cache_when_its_watch_reached_the_api() -> None:
    from ocm_rollout.controllers.addon.operator import AddonController

    kube = Versioned([mca("300")], version="300")
    ctl = AddonController(Runtime("addon", ControllerContext(kube=kube)))
    (watch,) = ctl.mca_cache.source.caches.values()  # type: ignore[union-attr]
    watch._apply({"type": "MODIFIED", "object": mca("300")})
    merged = await ctl._confirm_mcas("hello", {"cluster7": mca("100")})
    assert kube.calls == [VERSION]
    assert merged is not None and merged["cluster7"]["metadata"]["resourceVersion"] == "300"
    kube.calls.clear()
    assert await ctl._confirm_mcas("hello", {"cluster7": mca("300")}) is None
    assert kube.calls == [VERSION]
