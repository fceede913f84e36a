"""The clients of every registered plugin, for one event loop: what a controller holds.

``loaded(name)`` is the ``PluginLoaded`` condition for a ManifestWorkReplicaSet naming ``name``:
"not registered" without a registry entry; else Initialize is called once and an ``Available``
answer is kept (a failed one is tried again on the next call, so a plugin that starts late is
picked up by a later pass). ``client(name)`` gives the client for the rollout calls.
"""

from __future__ import annotations

from collections.abc import Callable

from ocm_rollout.controllers.rollout.plugin.client import PluginClient
from ocm_rollout.controllers.rollout.plugin.conditions import REASON_AVAILABLE, ConditionValue, not_registered
from ocm_rollout.controllers.rollout.plugin.config import PluginConfig, PluginRegistry


class PluginClients:
    def __init__(
        self, registry: PluginRegistry, make_client: Callable[[PluginConfig], PluginClient] = PluginClient
    ) -> None:
        self.registry = registry
        self._make_client = make_client
        self._clients: dict[str, PluginClient] = {}
        self._available: dict[str, ConditionValue] = {}

    def client(self, name: str) -> PluginClient | None:
        """The client of plugin ``name`` (made on first use), or None if it is not registered."""
        found = self._clients.get(name)
        if found is None:
            config = self.registry.get(name)
            if config is None:
                return None
            found = self._clients[name] = self._make_client(config)
        return found

    async def loaded(self, name: str) -> ConditionValue:
        if name in self._available:
            return self._available[name]
        client = self.client(name)
        if client is None:
            return not_registered(name, self.registry.source)
        value = await client.load()
        if value.reason == REASON_AVAILABLE:
            self._available[name] = value
        return value

    async def close(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        self._available.clear()
        for client in clients:
            await client.close()
