"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's semantics.

Upstream: ``staging/src/k8s.io/client-go/tools/leaderelection/leaderelection.go``
(``tryAcquireOrRenew``, ``acquire``, ``renew``, ``release``) and ``resourcelock/leaselock.go``.

* A candidate reads the Lease; it creates it when absent. It takes a Lease held by another only
  when the holder is empty or the lease has expired: ``leaseDurationSeconds`` after the moment
  *this candidate* last saw the record change (its own clock, never the holder's ``renewTime``,
  so clock skew between replicas does not matter).
* Every write is an update at the resourceVersion read (optimistic concurrency): of two
  candidates racing for an expired lease, one gets 409 Conflict and stays a candidate.
* The leader renews every ``retry_period``; when no renewal succeeds for ``renew_deadline`` it
  stops leading. It also stops at once when it sees another holder in the record.
  ``lease_duration`` > ``renew_deadline`` leaves the old leader's in-flight bindings time to land
  before anyone else may lead.
* Taking over increments ``leaseTransitions`` and sets ``acquireTime``; renewing keeps both.
  Release (on shutdown) writes an empty holder with ``leaseDurationSeconds: 1``, so a standby
  takes over at once instead of after the lease expires.

Defaults are kube-scheduler's: 15 s lease, 10 s renew deadline, 2 s retry period.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any, Protocol

from kubernetes import client

from scheduler_operator import kube
from scheduler_operator.calls import Lane
from scheduler_operator.options import JITTER_FACTOR, ElectionConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeaseRecord:
    holder: str
    lease_duration_seconds: int
    acquire_time: str | None = None
    renew_time: str | None = None
    transitions: int = 0

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> LeaseRecord:
        return cls(
            holder=spec.get("holderIdentity") or "",
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_spec(self) -> dict[str, Any]:
        return {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.transitions,
        }


class ConflictError(Exception):
    """The Lease changed since it was read (or was created meanwhile)."""


class LeaseLock(Protocol):
    """Get/create/update of one Lease (upstream ``resourcelock.Interface``)."""

    async def get(self) -> tuple[LeaseRecord, str] | None:
        """The record and its resourceVersion; None when the Lease does not exist."""
        ...

    async def create(self, record: LeaseRecord) -> str: ...

    async def update(self, record: LeaseRecord, resource_version: str) -> str: ...


def micro_time(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def desired_record(
    identity: str, current: LeaseRecord | None, *, leading: bool, lease_duration: float, now: str
) -> LeaseRecord:
    """What ``tryAcquireOrRenew`` writes: a renewal keeps acquireTime and transitions, a
    takeover counts one more transition."""
    record = LeaseRecord(identity, int(lease_duration), acquire_time=now, renew_time=now)
    if current is None:
        return record
    if leading:
        return replace(record, acquire_time=current.acquire_time, transitions=current.transitions)
    return replace(record, transitions=current.transitions + 1)


def held_by_other(identity: str, current: LeaseRecord, observed_at: float, now: float) -> bool:
    """A valid lease of another holder (expiry measured from when *we* saw it change)."""
    return bool(current.holder) and current.holder != identity and observed_at + current.lease_duration_seconds > now


class KubeLeaseLock:
    """A Lease over the API, written as plain JSON (MicroTime strings as the server keeps them)."""

    def __init__(self, api_client: client.ApiClient, namespace: str, name: str, *, timeout: float) -> None:
        self._api = client.CoordinationV1Api(api_client)
        self.namespace, self.name = namespace, name
        self._lane = Lane("lease", 1)
        self._timeout = timeout

    async def get(self) -> tuple[LeaseRecord, str] | None:
        try:
            lease = await self._lane.call(
                kube.call_json, self._api.read_namespaced_lease, self.name, self.namespace,
                _request_timeout=self._timeout,
            )  # fmt: skip
        except client.ApiException as error:
            if error.status == HTTPStatus.NOT_FOUND:
                return None
            raise
        return LeaseRecord.from_spec(lease.get("spec") or {}), lease["metadata"]["resourceVersion"]

    async def create(self, record: LeaseRecord) -> str:
        body = {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace}, "spec": record.to_spec(),
        }  # fmt: skip
        return await self._write(self._api.create_namespaced_lease, self.namespace, body)

    async def update(self, record: LeaseRecord, resource_version: str) -> str:
        body = {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace, "resourceVersion": resource_version},
            "spec": record.to_spec(),
        }  # fmt: skip
        return await self._write(self._api.replace_namespaced_lease, self.name, self.namespace, body)

    async def _write(self, fn: Callable[..., Any], *args: Any) -> str:
        try:
            lease = await self._lane.call(kube.call_json, fn, *args, _request_timeout=self._timeout)
        except client.ApiException as error:
            if error.status == HTTPStatus.CONFLICT:
                raise ConflictError(str(error.reason)) from None
            raise
        return str(lease["metadata"]["resourceVersion"])

    def close(self) -> None:
        self._lane.shutdown()


class LeaderElector:
    def __init__(
        self,
        lock: LeaseLock,
        identity: str,
        config: ElectionConfig | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
        rng: random.Random | None = None,
    ) -> None:
        self.lock = lock
        self.identity = identity
        self.config = config or ElectionConfig()
        self._clock = clock
        self._wall = wall
        self._rng = rng or random.Random()
        self._observed: LeaseRecord | None = None
        self._observed_at = 0.0

    @property
    def is_leader(self) -> bool:
        return self._observed is not None and self._observed.holder == self.identity

    @property
    def observed(self) -> LeaseRecord | None:
        return self._observed

    @property
    def observed_at(self) -> float | None:
        """When this replica last saw the record change, on its clock (client-go's
        ``observedTime``, which ``LeaderElector.Check`` and ``/healthz`` read)."""
        return self._observed_at if self._observed is not None else None

    def _observe(self, record: LeaseRecord) -> None:
        if record != self._observed:
            self._observed = record
            self._observed_at = self._clock()

    async def try_acquire_or_renew(self) -> bool:
        """Upstream ``tryAcquireOrRenew``: True when we hold the lease after this call."""
        now = micro_time(self._wall())
        try:
            got = await self.lock.get()
            if got is None:
                record = desired_record(
                    self.identity, None, leading=False, lease_duration=self.config.lease_duration, now=now
                )
                await self.lock.create(record)
                self._observe(record)
                return True
            current, version = got
            self._observe(current)
            if held_by_other(self.identity, current, self._observed_at, self._clock()):
                return False
            leading = current.holder == self.identity
            record = desired_record(
                self.identity, current, leading=leading, lease_duration=self.config.lease_duration, now=now
            )
            await self.lock.update(record, version)
        except ConflictError:
            return False
        except Exception as error:  # the API is unreachable: not leading on this attempt
            log.warning("lease %s: %s", self.identity, _describe(error))
            return False
        self._observe(record)
        return True

    async def acquire(self) -> None:
        """Try every retry period (with jitter) until the lease is ours."""
        announced = False
        while not await self.try_acquire_or_renew():
            if not announced and self._observed is not None:
                log.info("waiting for the lease held by %r", self._observed.holder)
                announced = True
            period = self.config.retry_period
            await asyncio.sleep(period + self._rng.random() * JITTER_FACTOR * period)
        log.info("acquired the lease as %r", self.identity)

    async def hold(self) -> None:
        """Renew until no renewal succeeds for the renew deadline, or another holder shows up."""
        config = self.config
        while True:
            deadline = self._clock() + config.renew_deadline
            while True:
                remaining = deadline - self._clock()
                try:
                    renewed = await asyncio.wait_for(self.try_acquire_or_renew(), timeout=max(remaining, 0.001))
                except TimeoutError:
                    renewed = False
                if renewed:
                    break
                if self._observed is not None and self._observed.holder not in ("", self.identity):
                    log.warning("lost the lease to %r", self._observed.holder)
                    return
                if self._clock() >= deadline:
                    log.warning("failed to renew the lease within %.1f s: stopped leading", config.renew_deadline)
                    return
                await asyncio.sleep(min(config.retry_period, max(deadline - self._clock(), 0.0)))
            await asyncio.sleep(config.retry_period)

    async def release(self) -> bool:
        """Give the lease up (holder emptied, 1 s duration) so a standby takes over at once."""
        if not self.is_leader:
            return True
        now = micro_time(self._wall())
        try:
            got = await self.lock.get()
            if got is None or got[0].holder != self.identity:
                return True
            record = LeaseRecord("", 1, acquire_time=now, renew_time=now, transitions=got[0].transitions)
            await self.lock.update(record, got[1])
        except Exception as error:
            log.warning("releasing the lease: %s", _describe(error))
            return False
        self._observe(record)
        log.info("released the lease")
        return True


def _describe(error: BaseException) -> str:
    status = getattr(error, "status", None)
    return f"HTTP {status} {getattr(error, 'reason', '')}" if status is not None else f"{type(error).__name__}: {error}"
