"""What the hub serves, through its discovery API (as an add-on manager would learn it): the
(group, resource) pairs of ``/api/v1`` and of every ``/apis/<group>/<version>``, core kinds
included, subresources left out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ocm_rollout.client.kube import Kube, NotFound

GroupResource = tuple[str, str]


def resources_of(group: str, listing: Mapping[str, Any]) -> set[GroupResource]:
    """The resources of one APIResourceList (``pods``, not ``pods/status``)."""
    out: set[GroupResource] = set()
    for entry in listing.get("resources") or ():
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if isinstance(name, str) and name and "/" not in name:
            out.add((group, name))
    return out


def group_versions(groups: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(group, "group/version") of every version of every group of an APIGroupList."""
    out: list[tuple[str, str]] = []
    for group in groups.get("groups") or ():
        name = group.get("name") if isinstance(group, Mapping) else None
        if not isinstance(name, str) or not name:
            continue
        for version in group.get("versions") or ():
            group_version = version.get("groupVersion") if isinstance(version, Mapping) else None
            if isinstance(group_version, str) and group_version:
                out.append((name, group_version))
    return out


async def served_resources(kube: Kube) -> set[GroupResource]:
    """Every (group, resource) the hub serves now."""
    served = resources_of("", await kube.request("GET", "/api/v1"))
    for group, group_version in group_versions(await kube.request("GET", "/apis")):
        try:
            listing = await kube.request("GET", f"/apis/{group_version}")
        except NotFound:  # removed since the group list was read
            continue
        served |= resources_of(group, listing)
    return served
