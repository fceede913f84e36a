"""Building the protocol's request messages from plain data (the fields every request shares:
the MWRS, the placement, the cluster, the cluster count and the rollout status lists)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import Message

from ocm_rollout.controllers.rollout.plugin import proto


@dataclass(frozen=True)
class ClusterEntry:
    cluster_name: str
    rollout_status: str
    manifest_revision_name: str = ""


@dataclass(frozen=True)
class RolloutContext:
    mwrs_name: str
    mwrs_namespace: str
    placement_name: str
    total_cluster_count: int
    completed: Sequence[ClusterEntry] = field(default_factory=tuple)
    progressing: Sequence[ClusterEntry] = field(default_factory=tuple)
    timed_out: Sequence[ClusterEntry] = field(default_factory=tuple)
    removed: Sequence[ClusterEntry] = field(default_factory=tuple)


def _fill(message: Any, context: RolloutContext, cluster_name: str) -> Any:
    message.mwrs_name = context.mwrs_name
    message.mwrs_namespace = context.mwrs_namespace
    message.placement_name = context.placement_name
    message.cluster_name = cluster_name
    message.total_cluster_count = context.total_cluster_count
    status = message.rollout_status
    for entries, target in (
        (context.completed, status.completed_clusters),
        (context.progressing, status.progressing_clusters),
        (context.timed_out, status.timed_out_clusters),
        (context.removed, status.removed_clusters),
    ):
        for entry in entries:
            target.add(
                cluster_name=entry.cluster_name,
                rollout_status=entry.rollout_status,
                manifest_revision_name=entry.manifest_revision_name,
            )
    return message


def rollout_request(context: RolloutContext, cluster_name: str = "") -> Message:
    """BeginRollout (one cluster) and ProgressRollout (the placement: no cluster)."""
    return _fill(proto.RolloutPluginRequest(), context, cluster_name)


def validate_request(context: RolloutContext, cluster_name: str) -> Message:
    return _fill(proto.ValidateCompletionRequest(), context, cluster_name)


def mutate_request(context: RolloutContext, cluster_name: str) -> Message:
    """MutateManifestWork; ``PluginClient.mutate_manifest_work`` fills in the work."""
    return _fill(proto.MutateManifestWorkRequest(), context, cluster_name)
