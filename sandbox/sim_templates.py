"""The simulation's AddOnTemplates (cluster-scoped ``addontemplates.addon.open-cluster-management.io``):
watched while the hub serves them, which discovery tells (``follow``). A hub without that API has
no templates (said once in the log); the watch starts when the API appears (a CRD created later)
and stops, forgetting every template, when it goes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Set

from ocm_rollout.client.kube import JSON, Kube, NotFound, Resource
from ocm_rollout.client.watchcache import ChangeCallback, WatchCache
from ocm_rollout.sandbox.agents import names
from ocm_rollout.sandbox.agents.addon_template import ADDON_TEMPLATES as TEMPLATES_PLURAL
from ocm_rollout.sandbox.agents.addon_template import TEMPLATE_GROUP_RESOURCE

log = logging.getLogger(__name__)

ADDON_TEMPLATES = Resource(names.ADDON_GROUP, "v1alpha1", TEMPLATES_PLURAL, "AddOnTemplate", namespaced=False)


class TemplateSource:
    """The AddOnTemplates of the hub, by name; see the module docstring."""

    def __init__(self, kube: Kube, on_change: ChangeCallback) -> None:
        self.kube = kube
        self.on_change = on_change
        self.cache: WatchCache | None = None
        self._task: asyncio.Task[None] | None = None
        self._said_unserved = False

    @property
    def served(self) -> bool:
        return self.cache is not None

    def follow(self, served: Set[tuple[str, str]], stop: asyncio.Event) -> list[str]:
        """Start or stop the watch as the hub's API comes or goes; the names of the templates
        forgotten when it goes (their add-ons are to be looked at again)."""
        if TEMPLATE_GROUP_RESOURCE in served:
            if self.cache is None:
                self.cache = WatchCache(self.kube, ADDON_TEMPLATES, on_change=self.on_change)
                self._task = asyncio.create_task(self.cache.run(stop), name="sim-informer-addontemplates")
                log.info("watching addontemplates")
            return []
        if not self._said_unserved:
            self._said_unserved = True
            log.info("the hub serves no addontemplates: template add-ons have no template until it does")
        if self.cache is None:
            return []
        gone = [str(obj["metadata"]["name"]) for obj in self.cache.items()]
        self.cache = None
        if self._task is not None:
            self._task.cancel()
            self._task = None
        return gone

    def get(self, name: str) -> JSON | None:
        return None if self.cache is None else self.cache.get(name)

    async def read(self, name: str) -> JSON | None:
        """The template as stored now (None: none, or no such API)."""
        if self.cache is None:
            return None
        try:
            obj = await self.kube.get_or_none(ADDON_TEMPLATES, name)
        except NotFound:  # the API went away meanwhile
            return None
        if obj is not None:
            self.cache.remember(obj)
        return obj

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
