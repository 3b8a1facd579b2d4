"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's semantics.

Upstream: ``staging/src/k8s.io/client-go/tools/leaderelection/leaderelection.go``
(``tryAcquireOrRenew``, ``acquire``, ``renew``, ``release``) and ``resourcelock/leaselock.go``.

* A candidate reads the Lease; it creates it when absent. It takes a Lease held by another only
  when the holder is empty or the lease has expired: ``leaseDurationSeconds`` after the moment
  *this candidate* last saw the record change (its own clock, never the holder's ``renewTime``,
  so clock skew between replicas does not matter).
* Every write is an update at the resourceVersion read (optimistic concurrency): of two
  candidates racing for an expired lease, one gets 409 Conflict and stays a candidate.
* The leader renews every ``retry_period``; when no renewal succeeds within ``renew_deadline``
  of the start of the last one that did, it stops leading (the moment its
  :class:`~scheduler_operator.control.fence.Fence` closes). It also stops at once when it sees another
  holder in the record. ``lease_duration`` > ``renew_deadline`` leaves writes that started
  inside the fence time to land before anyone else may lead.
* Taking over increments ``leaseTransitions`` and sets ``acquireTime``; renewing keeps both.
  Release (on shutdown) writes an empty holder with ``leaseDurationSeconds: 1``, so a standby
  takes over at once instead of after the lease expires.

Defaults are kube-scheduler's: 15 s lease, 10 s renew deadline, 2 s retry period
(``k8s.io/component-base@v0.36.3/config/v1alpha1/defaults.go``,
``RecommendedDefaultLeaderElectionConfiguration``).

:class:`LeaseKeeper` runs all this on a thread of its own, with its own event loop and its
own :class:`~scheduler_operator.io.transport.Transport` (its own connections, no rate limiter),
so a renewal never waits behind the operator's loop, its reconciles, its scheduling cycles or
its writes (``docs/leader-election.md``). :class:`KubeLeaseLock` sends the Lease's requests
through that transport, as every other request of the operator goes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any, Protocol

from scheduler_core.framework import Manifest, manifest
from scheduler_operator.control.fence import Fence
from scheduler_operator.control.options import JITTER_FACTOR, ElectionConfig
from scheduler_operator.control.recorder import micro_time
from scheduler_operator.io.kube import ApiError, describe
from scheduler_operator.io.transport import Credentials, Transport

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeaseRecord:
    holder: str
    lease_duration_seconds: int
    acquire_time: str | None = None
    renew_time: str | None = None
    transitions: int = 0

    @classmethod
    def from_spec(cls, spec: Manifest) -> LeaseRecord:
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

    async def close(self) -> None:
        """Release the lock's connections (the keeper's thread ends)."""
        ...


def desired_record(
    identity: str, current: LeaseRecord | None, *, leading: bool, lease_seconds: int, now: str
) -> LeaseRecord:
    """What ``tryAcquireOrRenew`` writes: a renewal keeps acquireTime and transitions, a
    takeover counts one more transition. ``lease_seconds`` is ``ElectionConfig.lease_seconds``
    (whole seconds, as client-go writes them; its own timing keeps the exact duration)."""
    record = LeaseRecord(identity, lease_seconds, acquire_time=now, renew_time=now)
    if current is None:
        return record
    if leading:
        return replace(record, acquire_time=current.acquire_time, transitions=current.transitions)
    return replace(record, transitions=current.transitions + 1)


def held_by_other(identity: str, current: LeaseRecord, observed_at: float, now: float) -> bool:
    """A valid lease of another holder (expiry measured from when *we* saw it change)."""
    return bool(current.holder) and current.holder != identity and observed_at + current.lease_duration_seconds > now


class KubeLeaseLock:
    """A Lease over the API, written as plain JSON (MicroTime strings as the server keeps them).

    Its requests are not retried by the transport: the elector tries again every retry period,
    and a retry behind its back could outlive the renew deadline."""

    def __init__(self, transport: Transport, namespace: str, name: str) -> None:
        self._transport = transport
        self.namespace, self.name = namespace, name
        self._collection = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"

    @classmethod
    def connect(cls, credentials: Credentials, namespace: str, name: str, *, timeout: float) -> KubeLeaseLock:
        """On a transport of its own: no rate limiter, at most 2 connections, and ``timeout``
        seconds to connect and to read each answer. Build it on the loop that uses it."""
        transport = Transport(credentials, qps=0, burst=0, max_connections=2, request_timeout=(timeout, timeout))
        return cls(transport, namespace, name)

    async def get(self) -> tuple[LeaseRecord, str] | None:
        try:
            lease = await self._transport.request("GET", f"{self._collection}/{self.name}", retry=False)
        except ApiError as error:
            if error.status == HTTPStatus.NOT_FOUND:
                return None
            raise
        return LeaseRecord.from_spec(manifest.spec(lease)), lease["metadata"]["resourceVersion"]

    async def create(self, record: LeaseRecord) -> str:
        return await self._write("POST", self._collection, self._body(record, None))

    async def update(self, record: LeaseRecord, resource_version: str) -> str:
        return await self._write("PUT", f"{self._collection}/{self.name}", self._body(record, resource_version))

    def _body(self, record: LeaseRecord, resource_version: str | None) -> dict[str, Any]:
        metadata = {"name": self.name, "namespace": self.namespace}
        if resource_version is not None:
            metadata["resourceVersion"] = resource_version
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata, "spec": record.to_spec()}

    async def _write(self, method: str, path: str, body: dict[str, Any]) -> str:
        try:
            lease = await self._transport.request(method, path, body=body, retry=False)
        except ApiError as error:
            if error.status == HTTPStatus.CONFLICT:
                raise ConflictError(error.message) from None
            raise
        return str(lease["metadata"]["resourceVersion"])

    async def close(self) -> None:
        await self._transport.close()


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
        on_renewed: Callable[[float], None] = lambda _started: None,
        on_contact: Callable[[], None] = lambda: None,
    ) -> None:
        """``on_renewed(started)``: each successful acquisition or renewal, with the monotonic
        time its attempt started (what :meth:`Fence.renewed` takes). ``on_contact()``: each
        attempt whose read of the Lease got an answer, held by another or not (the API server
        answers: ``reflector.Wakeup``)."""
        self.lock = lock
        self.identity = identity
        self.config = config or ElectionConfig()
        self._clock = clock
        self._wall = wall
        self._rng = rng or random.Random()
        self._observed: LeaseRecord | None = None
        self._observed_at = 0.0
        self._on_renewed = on_renewed
        self._on_contact = on_contact
        self.renewed_at = -float("inf")  # start of the last successful attempt (monotonic)

    @property
    def is_leader(self) -> bool:
        return self._observed is not None and self._observed.holder == self.identity

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
        started = self._clock()
        now = micro_time(self._wall())
        try:
            current, version = await self.lock.get() or (None, None)
            self._on_contact()
            if current is not None:
                self._observe(current)
                if held_by_other(self.identity, current, self._observed_at, self._clock()):
                    return False
            leading = current is not None and current.holder == self.identity
            record = desired_record(
                self.identity, current, leading=leading, lease_seconds=self.config.lease_seconds, now=now
            )
            if version is None:  # no Lease yet
                await self.lock.create(record)
            else:
                await self.lock.update(record, version)
        except ConflictError:
            return False
        except Exception as error:  # the API is unreachable: not leading on this attempt
            log.warning("lease %s: %s", self.identity, describe(error))
            return False
        self._observe(record)
        self._renewed(started)
        return True

    def _renewed(self, started: float) -> None:
        self.renewed_at = started
        self._on_renewed(started)

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
        """Renew every retry period; return (stop leading) when no renewal succeeded within the
        renew deadline of the start of the last one that did, or another holder shows up.

        Upstream's ``renew`` gives up ``renewDeadline`` after the first failed attempt; this
        gives up ``renewDeadline`` after the last successful one, where the fence closes."""
        config = self.config
        while True:
            await asyncio.sleep(config.retry_period)
            deadline = self.renewed_at + config.renew_deadline
            while True:
                remaining = deadline - self._clock()
                if remaining <= 0:
                    log.warning("failed to renew the lease within %.1f s: stopped leading", config.renew_deadline)
                    return
                try:
                    renewed = await asyncio.wait_for(self.try_acquire_or_renew(), timeout=remaining)
                except TimeoutError:
                    renewed = False
                if renewed:
                    break
                if self._observed is not None and self._observed.holder not in ("", self.identity):
                    log.warning("lost the lease to %r", self._observed.holder)
                    return
                await asyncio.sleep(min(config.retry_period, max(deadline - self._clock(), 0.0)))

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
            log.warning("releasing the lease: %s", describe(error))
            return False
        self._observe(record)
        log.info("released the lease")
        return True


class LeaseKeeper:
    """The elector on a thread of its own: its own event loop and its own Lease transport, so
    that renewing never waits behind the operator's event loop, its API calls or a long
    scheduling cycle (the GIL is released to this thread every switch interval).

    ``make_lock`` builds the :class:`LeaseLock` on the keeper's thread (its connections belong
    to the keeper's event loop). Each successful renewal opens ``fence`` until its renew deadline. When leadership is
    lost, the keeper closes the fence and calls ``on_lost`` on its thread; the operator exits
    there, as kube-scheduler does. :meth:`stop` ends the thread, first releasing the lease when
    asked to (after the caller has waited for the writes in flight: ``Fence.wait_idle``).
    """

    def __init__(
        self,
        make_lock: Callable[[], LeaseLock],
        identity: str,
        config: ElectionConfig,
        fence: Fence,
        on_lost: Callable[[], None],
        on_contact: Callable[[], None] = lambda: None,
    ) -> None:
        self._make_lock = make_lock
        self._on_contact = on_contact
        self.identity = identity
        self.config = config
        self.fence = fence
        self._on_lost = on_lost
        self.elector: LeaderElector | None = None
        self._acquired: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._main: asyncio.Task[None] | None = None
        self._ready = threading.Event()
        self._release = False
        self._thread = threading.Thread(target=self._run, name=f"lease-{identity}", daemon=True)

    @property
    def is_leader(self) -> bool:
        return self.elector is not None and self.elector.is_leader and self.fence.is_open

    def start(self) -> None:
        self._thread.start()
        self._ready.wait()

    async def acquired(self) -> None:
        """Wait (on the caller's loop) until this replica holds the lease."""
        await asyncio.wrap_future(self._acquired)

    def stop(self, *, release: bool, timeout: float) -> None:
        """End the thread (blocking, up to ``timeout``): no more renewals; release if asked."""
        self._release = release
        loop, main = self._loop, self._main
        if loop is not None and main is not None and not loop.is_closed():
            loop.call_soon_threadsafe(main.cancel)
        self._thread.join(timeout)

    def _run(self) -> None:
        asyncio.run(self._keep())

    async def _keep(self) -> None:
        self._loop = asyncio.get_running_loop()
        lock = self._make_lock()
        self.elector = LeaderElector(
            lock, self.identity, self.config, on_renewed=self.fence.renewed, on_contact=self._on_contact
        )
        self._main = asyncio.current_task()
        self._ready.set()
        lost = False
        try:
            await self.elector.acquire()
            with contextlib.suppress(concurrent.futures.InvalidStateError):  # the waiter gave up (shutdown)
                self._acquired.set_result(None)
            await self.elector.hold()
            lost = True
        except asyncio.CancelledError:
            pass
        finally:
            self.fence.close()
            if not lost and self._release:
                await self.elector.release()
            await lock.close()
        if lost:
            self._on_lost()
