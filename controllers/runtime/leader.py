"""Lease-based leader election (coordination.k8s.io/v1), with client-go's semantics.

Only the process holding the Lease runs the controllers. The rules, as in client-go's
``leaderelection`` package:

- A Lease that does not exist is created naming us (``leaseTransitions`` 0).
- A Lease naming another holder is respected while it is *valid*: until
  ``leaseDurationSeconds`` after the moment **we** first saw its current content. Our own clock
  measures that, never the holder's ``renewTime``, so clock skew between replicas does not matter.
- A Lease that names nobody (released) or that has not changed for ``leaseDurationSeconds`` is
  taken over: ``acquireTime`` and ``renewTime`` become now and ``leaseTransitions`` goes up by one.
- The holder renews it every ``retry_period``; ``acquireTime`` and ``leaseTransitions`` stay.
- A holder that has not renewed successfully for ``renew_deadline`` is no longer the leader and
  must stop acting at once. Because ``renew_deadline < lease_duration``, it stops before anyone
  else may take over.
- Every write carries the ``resourceVersion`` that was read, so two candidates racing for the
  same Lease cannot both win: the loser gets 409 Conflict and waits.
- On a graceful exit the holder releases the Lease (empty holder, ``leaseDurationSeconds`` 1),
  so a standby takes over at its next retry instead of waiting for expiry.

``decide`` is the pure decision (no I/O, ``now`` passed in); ``LeaderElector`` is the I/O loop
around it, talking to the API server through the official ``kubernetes`` client in a worker
thread: the same code path for a real cluster and for the local hub.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import random
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, Final, Protocol
from urllib.parse import quote

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from ocm_rollout.api.times import format_micro_time
from ocm_rollout.api.times import parse_time as parse_rfc3339
from ocm_rollout.client.fencing import WriteFence
from ocm_rollout.client.kube import send

log = logging.getLogger(__name__)

JITTER_FACTOR: Final = 1.2  # client-go's JitterFactor: a standby waits retry_period * [1, 2.2)


class LeaderElectionConfigError(ValueError):
    """Timings or names that cannot work; the message names the flag."""


@dataclass(frozen=True)
class LeaseTimings:
    """Seconds. Defaults are client-go's (15 s / 10 s / 2 s)."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def validate(self) -> None:
        for name in ("lease_duration", "renew_deadline", "retry_period"):
            value = getattr(self, name)
            if not math.isfinite(value) or value <= 0:
                flag = "--" + name.replace("_", "-")
                raise LeaderElectionConfigError(f"{flag} must be a positive number of seconds, got {value!r}")
        if self.lease_duration <= self.renew_deadline:
            raise LeaderElectionConfigError(
                f"--lease-duration ({self.lease_duration:g}s) must be greater than "
                f"--renew-deadline ({self.renew_deadline:g}s)"
            )
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise LeaderElectionConfigError(
                f"--renew-deadline ({self.renew_deadline:g}s) must be greater than "
                f"{JITTER_FACTOR:g} x --retry-period ({self.retry_period:g}s)"
            )

    @property
    def lease_duration_seconds(self) -> int:
        """What we write into ``spec.leaseDurationSeconds`` (whole seconds, at least 1)."""
        return max(1, math.ceil(self.lease_duration))


@dataclass(frozen=True)
class LeaseRecord:
    """The election fields of a Lease's spec."""

    holder_identity: str = ""
    lease_duration_seconds: int | None = None
    acquire_time: datetime | None = None
    renew_time: datetime | None = None
    lease_transitions: int = 0


class _Unreadable:
    """The Lease could not be read (API unreachable, timeout, 5xx, forbidden)."""

    def __repr__(self) -> str:
        return "UNREADABLE"


UNREADABLE: Final = _Unreadable()


@dataclass(frozen=True)
class Observation:
    """A Lease's content and the moment (our clock) we first saw it with that content."""

    record: LeaseRecord
    observed_at: datetime


@dataclass(frozen=True)
class ElectorState:
    observed: Observation | None = None
    # The time of our last successful create/acquire/renew while we lead; None while we do not.
    last_renew: datetime | None = None

    @property
    def leading(self) -> bool:
        return self.last_renew is not None


class Action(StrEnum):
    CREATE = "create"  # no Lease: create one naming us
    ACQUIRE = "acquire"  # free or expired Lease: take it over
    RENEW = "renew"  # we hold it: refresh renewTime
    WAIT = "wait"  # someone else holds a valid Lease, or we could not read it
    LOST = "lost"  # we were leading and no longer may


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: str
    # The election record to write (CREATE, ACQUIRE, RENEW), else None.
    record: LeaseRecord | None = None
    # The observation to keep for the next decision.
    observed: Observation | None = None


def lease_expires_at(observation: Observation, timings: LeaseTimings) -> datetime:
    """When a Lease we observed becomes free for the taking, by our clock."""
    seconds = observation.record.lease_duration_seconds or timings.lease_duration
    return observation.observed_at + timedelta(seconds=seconds)


def decide(
    current: LeaseRecord | _Unreadable | None,
    *,
    identity: str,
    now: datetime,
    state: ElectorState,
    timings: LeaseTimings,
) -> Decision:
    """One step of the election, from the Lease as just read (``None``: it does not exist)."""
    if state.last_renew is not None and now >= state.last_renew + timedelta(seconds=timings.renew_deadline):
        return Decision(
            Action.LOST,
            f"not renewed for {timings.renew_deadline:g}s (renew deadline)",
            observed=state.observed,
        )
    if isinstance(current, _Unreadable):
        return Decision(Action.WAIT, "the Lease could not be read", observed=state.observed)
    if current is None:
        record = LeaseRecord(
            holder_identity=identity,
            lease_duration_seconds=timings.lease_duration_seconds,
            acquire_time=now,
            renew_time=now,
            lease_transitions=0,
        )
        return Decision(Action.CREATE, "no Lease yet", record=record, observed=state.observed)

    observed = state.observed
    if observed is None or observed.record != current:
        observed = Observation(current, now)

    holder = current.holder_identity
    if holder == identity:
        record = replace(
            current,
            lease_duration_seconds=timings.lease_duration_seconds,
            acquire_time=current.acquire_time or now,
            renew_time=now,
        )
        return Decision(Action.RENEW, "we hold the Lease", record=record, observed=observed)
    if state.leading:
        return Decision(Action.LOST, f"the Lease is now held by {holder or 'nobody'}", observed=observed)
    if holder and now < lease_expires_at(observed, timings):
        return Decision(Action.WAIT, f"the Lease is held by {holder}", observed=observed)
    record = LeaseRecord(
        holder_identity=identity,
        lease_duration_seconds=timings.lease_duration_seconds,
        acquire_time=now,
        renew_time=now,
        lease_transitions=current.lease_transitions + 1,
    )
    reason = f"the Lease of {holder} expired" if holder else "the Lease is free"
    return Decision(Action.ACQUIRE, reason, record=record, observed=observed)


def after_write(state: ElectorState, decision: Decision, *, written: bool, now: datetime) -> ElectorState:
    """The state after trying to write ``decision.record`` (``written``: the API accepted it)."""
    if decision.action is Action.LOST:
        return ElectorState(observed=decision.observed, last_renew=None)
    if decision.record is None or not written:
        return replace(state, observed=decision.observed)
    return ElectorState(observed=Observation(decision.record, now), last_renew=now)


def release_record(current: LeaseRecord, *, identity: str, now: datetime) -> LeaseRecord | None:
    """The record that gives the Lease up (client-go's release), or None if we do not hold it."""
    if current.holder_identity != identity:
        return None
    return LeaseRecord(
        holder_identity="",
        lease_duration_seconds=1,
        acquire_time=now,
        renew_time=now,
        lease_transitions=current.lease_transitions,
    )


def standby_wait(timings: LeaseTimings, rng: Callable[[], float] = random.random) -> float:
    """Seconds a standby waits between attempts (client-go's jittered retry period)."""
    return timings.retry_period * (1.0 + JITTER_FACTOR * rng())


def default_identity() -> str:
    """``<hostname>_<uuid>``: unique per process, readable in ``kubectl get lease``."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


# -- wire format ----------------------------------------------------------------------------


def parse_time(value: object) -> datetime | None:
    """A Lease time, or None when missing or not a time."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_rfc3339(value)
    except ValueError:
        return None


def record_from_lease(obj: dict[str, Any]) -> LeaseRecord:
    spec = obj.get("spec") or {}
    duration = spec.get("leaseDurationSeconds")
    transitions = spec.get("leaseTransitions")
    return LeaseRecord(
        holder_identity=str(spec.get("holderIdentity") or ""),
        lease_duration_seconds=int(duration) if isinstance(duration, int) and duration > 0 else None,
        acquire_time=parse_time(spec.get("acquireTime")),
        renew_time=parse_time(spec.get("renewTime")),
        lease_transitions=int(transitions) if isinstance(transitions, int) and transitions > 0 else 0,
    )


def lease_spec(record: LeaseRecord) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "holderIdentity": record.holder_identity,
        "leaseTransitions": record.lease_transitions,
    }
    if record.lease_duration_seconds is not None:
        spec["leaseDurationSeconds"] = record.lease_duration_seconds
    if record.acquire_time is not None:
        spec["acquireTime"] = format_micro_time(record.acquire_time)
    if record.renew_time is not None:
        spec["renewTime"] = format_micro_time(record.renew_time)
    return spec


# -- I/O ------------------------------------------------------------------------------------


class LeaseAPIError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}" if status else message)
        self.status = status


@dataclass
class StoredLease:
    record: LeaseRecord
    resource_version: str


class LeaseClient:
    """Reads and writes one Lease through the official client (sync calls run in a thread)."""

    def __init__(self, api_client: ApiClient, *, name: str, namespace: str, timeout: float = 10.0) -> None:
        self.api_client = api_client
        self.name = name
        self.namespace = namespace
        self.timeout = timeout

    @property
    def _collection(self) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{quote(self.namespace, safe='')}/leases"

    def _call(self, method: str, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
        try:
            response = send(self.api_client, method, path, body=body, timeout=self.timeout)
            data = response.read()
        except ApiException as exc:
            raise LeaseAPIError(int(exc.status or 0), _status_message(exc.body) or str(exc.reason)) from None
        except Exception as exc:  # connection refused, timeouts, TLS errors
            raise LeaseAPIError(0, f"{type(exc).__name__}: {exc}") from None
        if not 200 <= response.status <= 299:
            raise LeaseAPIError(response.status, _status_message(data) or str(response.reason))
        parsed = json.loads(data) if data else {}
        return parsed if isinstance(parsed, dict) else {}

    def get_sync(self) -> StoredLease | None:
        try:
            obj = self._call("GET", f"{self._collection}/{quote(self.name, safe='')}", None)
        except LeaseAPIError as exc:
            if exc.status == 404:
                return None
            raise
        return StoredLease(record_from_lease(obj), str((obj.get("metadata") or {}).get("resourceVersion") or ""))

    def create_sync(self, record: LeaseRecord) -> StoredLease:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": lease_spec(record),
        }
        obj = self._call("POST", self._collection, body)
        return StoredLease(record_from_lease(obj), str((obj.get("metadata") or {}).get("resourceVersion") or ""))

    def update_sync(self, record: LeaseRecord, resource_version: str) -> StoredLease:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace, "resourceVersion": resource_version},
            "spec": lease_spec(record),
        }
        obj = self._call("PUT", f"{self._collection}/{quote(self.name, safe='')}", body)
        return StoredLease(record_from_lease(obj), str((obj.get("metadata") or {}).get("resourceVersion") or ""))

    async def get(self) -> StoredLease | None:
        return await asyncio.to_thread(self.get_sync)

    async def create(self, record: LeaseRecord) -> StoredLease:
        return await asyncio.to_thread(self.create_sync, record)

    async def update(self, record: LeaseRecord, resource_version: str) -> StoredLease:
        return await asyncio.to_thread(self.update_sync, record, resource_version)


def _status_message(data: object) -> str:
    if isinstance(data, bytes):
        data = data.decode(errors="replace")
    if not isinstance(data, str) or not data:
        return ""
    try:
        parsed = json.loads(data)
    except ValueError:
        return data[:200]
    if isinstance(parsed, dict):
        return str(parsed.get("message") or parsed.get("reason") or "")
    return ""


class LeaseStore(Protocol):
    """What the elector needs from the API (``LeaseClient``; tests use an in-memory one)."""

    name: str
    namespace: str

    async def get(self) -> StoredLease | None: ...

    async def create(self, record: LeaseRecord) -> StoredLease: ...

    async def update(self, record: LeaseRecord, resource_version: str) -> StoredLease: ...


LeadershipCallback = Callable[[bool], None]


@dataclass
class LeaderElector:
    """The election loop for one Lease and one identity."""

    client: LeaseStore
    identity: str
    timings: LeaseTimings = field(default_factory=LeaseTimings)
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    on_change: LeadershipCallback | None = None
    # Called after every step (to publish the observed holder and API contact).
    on_step: Callable[[LeaderElector, Decision], None] | None = None
    # Admits the controllers' writes while we lead (fencing.py): granted at every successful
    # acquisition or renewal, revoked when leadership ends.
    fence: WriteFence | None = None
    state: ElectorState = field(default_factory=ElectorState)
    # Last time the Lease was read successfully (for /readyz of a standby).
    last_contact: datetime | None = None
    # The holder as last observed ("" when free or unknown).
    observed_holder: str = ""
    _resource_version: str = ""

    @property
    def is_leader(self) -> bool:
        return self.state.leading

    @property
    def lease_key(self) -> str:
        return f"{self.client.namespace}/{self.client.name}"

    def _deadline_budget(self) -> float:
        """Seconds an API call may take: never past the renew deadline while leading."""
        budget = self.timings.renew_deadline
        if self.state.last_renew is not None:
            left = (
                self.state.last_renew + timedelta(seconds=self.timings.renew_deadline) - self.clock()
            ).total_seconds()
            budget = min(budget, max(left, 0.0))
        return budget

    async def _bounded(self, coro: Any) -> Any:
        budget = self._deadline_budget()
        if budget <= 0:
            coro.close()
            raise TimeoutError("renew deadline reached")
        return await asyncio.wait_for(coro, timeout=budget)

    async def step(self) -> Decision:
        """Read the Lease, decide, write; returns the decision taken."""
        try:
            stored = await self._bounded(self.client.get())
        except (LeaseAPIError, TimeoutError) as exc:
            log.warning("lease read failed", extra={"lease": self.lease_key, "error": str(exc)})
            current: LeaseRecord | _Unreadable | None = UNREADABLE
        else:
            self.last_contact = self.clock()
            if stored is None:
                current = None
                self._resource_version = ""
            else:
                current = stored.record
                self._resource_version = stored.resource_version
            self.observed_holder = "" if stored is None else stored.record.holder_identity
        now = self.clock()
        decision = decide(current, identity=self.identity, now=now, state=self.state, timings=self.timings)
        written = False
        sent_at = self.fence.now() if self.fence is not None else 0.0
        if decision.record is not None:
            try:
                if decision.action is Action.CREATE:
                    result = await self._bounded(self.client.create(decision.record))
                else:
                    result = await self._bounded(self.client.update(decision.record, self._resource_version))
            except (LeaseAPIError, TimeoutError) as exc:
                level = logging.INFO if isinstance(exc, LeaseAPIError) and exc.status == 409 else logging.WARNING
                log.log(level, "lease write failed", extra={"lease": self.lease_key, "action": str(decision.action), "error": str(exc)})
            else:
                written = True
                self._resource_version = result.resource_version
                self.observed_holder = self.identity
        was_leading = self.state.leading
        self.state = after_write(self.state, decision, written=written, now=now)
        if self.fence is not None:
            if self.state.leading and written:
                self.fence.grant(
                    sent_at, renew_deadline=self.timings.renew_deadline, lease_duration=self.timings.lease_duration
                )
            elif not self.state.leading:
                self.fence.revoke()
        if self.state.leading != was_leading:
            if self.state.leading:
                log.info("became leader", extra={"lease": self.lease_key, "identity": self.identity, "reason": decision.reason})
            else:
                log.warning("lost leadership", extra={"lease": self.lease_key, "identity": self.identity, "reason": decision.reason})
            if self.on_change is not None:
                self.on_change(self.state.leading)
        if self.on_step is not None:
            self.on_step(self, decision)
        return decision

    async def acquire(self, stop: asyncio.Event) -> bool:
        """Try until we lead (True) or ``stop`` is set (False)."""
        while not stop.is_set():
            await self.step()
            if self.is_leader:
                return True
            if await _wait_or_stop(stop, standby_wait(self.timings)):
                return False
        return False

    async def hold(self, stop: asyncio.Event) -> None:
        """Renew every retry period; return as soon as leadership is lost or ``stop`` is set.

        The loop wakes at the renew deadline at the latest, so a leader whose renewals keep
        failing (or hang) notices the loss exactly when the deadline passes.
        """
        while self.is_leader and not stop.is_set():
            assert self.state.last_renew is not None
            deadline = self.state.last_renew + timedelta(seconds=self.timings.renew_deadline)
            wait = min(self.timings.retry_period, max((deadline - self.clock()).total_seconds(), 0.0))
            if await _wait_or_stop(stop, wait):
                return
            await self.step()

    async def release(self) -> bool:
        """Give the Lease up if we hold it; True when the API accepted the release."""
        was_leading = self.state.leading
        self.state = ElectorState(observed=self.state.observed, last_renew=None)
        if self.fence is not None:
            self.fence.revoke()
        if was_leading and self.on_change is not None:
            self.on_change(False)
        try:
            stored = await asyncio.wait_for(self.client.get(), timeout=self.timings.renew_deadline)
            if stored is None:
                return False
            record = release_record(stored.record, identity=self.identity, now=self.clock())
            if record is None:
                return False
            await asyncio.wait_for(
                self.client.update(record, stored.resource_version), timeout=self.timings.renew_deadline
            )
        except (LeaseAPIError, TimeoutError) as exc:
            log.warning("lease release failed", extra={"lease": self.lease_key, "error": str(exc)})
            return False
        log.info("lease released", extra={"lease": self.lease_key, "identity": self.identity})
        return True


async def _wait_or_stop(stop: asyncio.Event, seconds: float) -> bool:
    """Sleep ``seconds`` unless ``stop`` is set first; True when stopped."""
    if stop.is_set():
        return True
    try:
        await asyncio.wait_for(stop.wait(), timeout=max(seconds, 0.0))
    except TimeoutError:
        return False
    return True
