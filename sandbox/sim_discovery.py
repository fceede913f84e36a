"""What the hub serves, through its discovery API (as an add-on manager would learn it): the
(group, resource) pairs of ``/api/v1`` and of every ``/apis/<group>/<version>``, core kinds
included, subresources left out; with, for each, the REST resource to read it through (its
group's preferred version first, as a client's discovery picks it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ocm_rollout.client.kube import Kube, NotFound, Resource

GroupResource = tuple[str, str]


def resources_of(group: str, listing: Mapping[str, Any]) -> set[GroupResource]:
    """The resources of one APIResourceList (``pods``, not ``pods/status``)."""
    return set(resource_details(group, listing))


def resource_details(group: str, listing: Mapping[str, Any]) -> dict[GroupResource, Resource]:
    """The resources of one APIResourceList as REST resources of its group/version."""
    group_version = listing.get("groupVersion")
    version = group_version.rsplit("/", 1)[-1] if isinstance(group_version, str) and group_version else "v1"
    out: dict[GroupResource, Resource] = {}
    for entry in listing.get("resources") or ():
        if not isinstance(entry, Mapping):
            continue
        name = entry.get("name")
        if isinstance(name, str) and name and "/" not in name:
            kind = entry.get("kind")
            out[(group, name)] = Resource(
                group, version, name, kind if isinstance(kind, str) else "", namespaced=bool(entry.get("namespaced"))
            )
    return out


def group_versions(groups: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(group, "group/version") of every version of every group of an APIGroupList, each group's
    preferred version first."""
    out: list[tuple[str, str]] = []
    for group in groups.get("groups") or ():
        name = group.get("name") if isinstance(group, Mapping) else None
        if not isinstance(name, str) or not name:
            continue
        preferred = (group.get("preferredVersion") or {}).get("groupVersion")
        found: list[tuple[str, str]] = []
        for version in group.get("versions") or ():
            group_version = version.get("groupVersion") if isinstance(version, Mapping) else None
            if isinstance(group_version, str) and group_version:
                found.append((name, group_version))
        found.sort(key=lambda item: item[1] != preferred)
        out.extend(found)
    return out


async def served_resource_map(kube: Kube) -> dict[GroupResource, Resource]:
    """Every (group, resource) the hub serves now, with the REST resource to read it through."""
    served = resource_details("", await kube.request("GET", "/api/v1"))
    for group, group_version in group_versions(await kube.request("GET", "/apis")):
        try:
            listing = await kube.request("GET", f"/apis/{group_version}")
        except NotFound:  # removed since the group list was read
            continue
        for pair, resource in resource_details(group, listing).items():
            served.setdefault(pair, resource)
    return served


async def served_resources(kube: Kube) -> set[GroupResource]:
    """Every (group, resource) the hub serves now."""
    return set(await served_resource_map(kube))
