"""The rollout fence: reservations recorded on the rollout's owner before a cluster goes in flight.

A rollout widens only through writes that put a cluster in flight (a ManifestWork created or
given a new spec; an add-on's desired config changed). Two controller instances that overlap (a
leader that lost its Lease with a write in flight, two replicas without leader election, a
restart) must not together exceed the strategy's bound. The rule that makes this hold by
construction, whatever the timing:

1. Before writing anything that puts clusters in flight, a pass records them as *reservations*
   on the owner object (``rollout.ocm-rollout.io/reservations``), in one write carrying the
   owner's ``resourceVersion`` as read at the start of the pass. Of two overlapping writers one
   gets 409 Conflict and plans again from the API.
2. A reserved cluster counts as in flight for every planner that reads the record, until the
   write it stands for is observed (then the object itself carries its rollout status).
3. Whoever finds a reservation not yet carried out carries it out, with the same object name
   (``target_name``), so any number of instances writing it produce one object: a late create by
   a stale instance gets AlreadyExists, or lands as the very object every planner counted.
4. A pass lists the owner's objects from the API after reading the record and before its own
   reservation write, so a reservation cleared by another instance (its object observed) is
   replaced in that pass's view by the object itself.

The record is small: only clusters whose write is not yet observed (at most the rollout's
concurrency; one pass adds at most ``MAX_NEW_BYTES_PER_PASS`` bytes of names, and at most
``MAX_NEW_PER_PASS`` names, and none that would take the whole record past ``MAX_RECORD_BYTES``:
``Budget.for_record``). Reservations whose writes are never observed (the API server refuses
them) therefore hold up the rest of the rollout instead of growing the record pass after pass
until the API server refuses the owner's write itself (256 KiB for all its annotations).

Pure: parsing, rendering and the arithmetic of the record; the owner's write lives with each
controller (``ocm_rollout.client.fencing``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ocm_rollout.api.constants import ANNOTATION_ROLLOUT_RESERVATIONS

ANNOTATION = ANNOTATION_ROLLOUT_RESERVATIONS
# New reservations one pass may add: at most this many names, and at most this many bytes of
# them in the record. The bytes keep the annotation far below the API server's 256 KiB limit for
# all annotations whatever the cluster names' length (about 1,000 names of 63 characters, 4,600
# of 11); a wider wave is reserved over a few passes. Counted in names alone (1,000), a
# 10,000-cluster All rollout of short names took 10 reserving passes, each planning over the
# whole fleet; in bytes, 3.
MAX_NEW_PER_PASS = 10_000
MAX_NEW_BYTES_PER_PASS = 64 * 1024
# The whole record: new names are reserved only as far as it stays within this many bytes, half
# the API server's limit for all of an object's annotations (the rest is left to the others, such
# as kubectl's last-applied-configuration).
MAX_RECORD_BYTES = 128 * 1024
# The alphabet and length the API server uses for generateName suffixes.
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_SUFFIX_LENGTH = 5


class ReservationRecordError(ValueError):
    """The annotation does not hold a reservation record."""


@dataclass(frozen=True)
class Reservations:
    """Reserved clusters per group (a placement name): what is in flight but not yet observed."""

    groups: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def of(self, group: str) -> frozenset[str]:
        return self.groups.get(group, frozenset())

    def __len__(self) -> int:
        return sum(len(clusters) for clusters in self.groups.values())

    def adds_to(self, recorded: Reservations) -> bool:
        """Does this record hold a cluster that ``recorded`` does not (a new reservation)?"""
        return any(clusters - recorded.of(group) for group, clusters in self.groups.items())

    def with_group(self, group: str, clusters: Iterable[str]) -> Reservations:
        merged = dict(self.groups)
        found = frozenset(clusters)
        if found:
            merged[group] = found
        else:
            merged.pop(group, None)
        return Reservations(merged)

    def render(self) -> str | None:
        """The annotation value (compact, sorted JSON), or None for an empty record."""
        data = {group: sorted(clusters) for group, clusters in sorted(self.groups.items()) if clusters}
        if not data:
            return None
        return json.dumps(data, separators=(",", ":"), sort_keys=True)


EMPTY = Reservations()


def record_bytes(record: Reservations) -> int:
    """The size of the record's annotation value (0 for an empty record)."""
    return len(record.render() or "")


def repass_now(deferred: int, before: Reservations, after: Reservations) -> bool:
    """Whether a pass that left ``deferred`` widening writes for later is followed by another at
    once. Yes when the per-pass bounds held them back (the next pass has fresh ones), or when the
    record changed: observed reservations left it (room now), or the pass reserved and wrote new
    ones (the next pass sees its own writes and clears them). No when the whole record's bound
    held them and the record stayed as it was: then only a change of an object in flight makes
    room, and that change brings the next pass (an immediate one would plan the same again)."""
    if not deferred:
        return False
    if MAX_RECORD_BYTES - record_bytes(before) >= MAX_NEW_BYTES_PER_PASS:
        return True
    return after != before


def name_bytes(cluster: str) -> int:
    """What one more name costs in the rendered record: the name as JSON (quoted, escaped) and a
    comma."""
    return len(json.dumps(cluster)) + 1


class Budget:
    """The new reservations one pass may still add: ``count`` names, ``size`` bytes of them. The
    first name refused ends the budget, so that a pass's new reservations stay a prefix of the
    rollout's order (a shorter name further on would otherwise overtake a longer one)."""

    __slots__ = ("count", "size")

    def __init__(self, count: int = MAX_NEW_PER_PASS, size: int = MAX_NEW_BYTES_PER_PASS) -> None:
        self.count = count
        self.size = size

    @classmethod
    def for_record(cls, record: Reservations, count: int = MAX_NEW_PER_PASS) -> Budget:
        """The budget of a pass that read ``record``: the per-pass bounds, and no more bytes than
        keep the whole record within ``MAX_RECORD_BYTES`` (its names count as they are, though
        the pass may clear some of them: the bound errs on the narrow side)."""
        room = MAX_RECORD_BYTES - record_bytes(record)
        return cls(count, max(0, min(MAX_NEW_BYTES_PER_PASS, room)))

    def allows(self, cluster: str) -> bool:
        if self.count > 0 and name_bytes(cluster) > self.size:
            self.count = 0
        return self.count > 0

    def take(self, cluster: str) -> bool:
        """Spend the budget on ``cluster`` if it allows it; whether it did."""
        if not self.allows(cluster):
            return False
        self.count -= 1
        self.size -= name_bytes(cluster)
        return True


def parse(text: str | None) -> Reservations:
    """The record held by the annotation value ``text`` (None or "" is an empty record).

    Raises ReservationRecordError for anything else than ``{"<group>": ["<cluster>", ...]}``.
    """
    if not text:
        return EMPTY
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ReservationRecordError(f"annotation {ANNOTATION} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ReservationRecordError(f"annotation {ANNOTATION} must be a JSON object of lists of cluster names")
    groups: dict[str, frozenset[str]] = {}
    for group, clusters in data.items():
        if not isinstance(clusters, list) or not all(isinstance(c, str) and c for c in clusters):
            raise ReservationRecordError(
                f"annotation {ANNOTATION}: group {group!r} must be a list of cluster names"
            )
        if clusters:
            groups[str(group)] = frozenset(clusters)
    return Reservations(groups)


def of_owner(owner: Mapping[str, object]) -> Reservations:
    """The record on an owner object (its ``metadata.annotations``)."""
    metadata = owner.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    text = annotations.get(ANNOTATION) if isinstance(annotations, Mapping) else None
    return parse(text if isinstance(text, str) else None)


def annotation_patch(record: Reservations) -> dict[str, str | None]:
    """The ``metadata.annotations`` part of a merge patch writing ``record`` (null removes it)."""
    return {ANNOTATION: record.render()}


def target_name(prefix: str, *, owner_uid: str, group: str, cluster: str) -> str:
    """The name of the object a reservation creates: ``prefix`` followed by five characters in the
    API server's generateName alphabet, derived from the owner's uid, the group and the cluster,
    so every instance that carries the reservation out writes the same object."""
    digest = hashlib.sha256(f"{owner_uid}\x00{group}\x00{cluster}".encode()).digest()
    number = int.from_bytes(digest[:8], "big")
    suffix = []
    for _ in range(_SUFFIX_LENGTH):
        number, index = divmod(number, len(_SUFFIX_ALPHABET))
        suffix.append(_SUFFIX_ALPHABET[index])
    return prefix + "".join(suffix)
