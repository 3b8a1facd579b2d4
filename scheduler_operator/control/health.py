"""What ``/healthz`` and ``/readyz`` answer, from state the operator reports here (no I/O).

kube-scheduler's endpoints (v1.36.3 ``cmd/kube-scheduler/app/server.go``) check, for
``/healthz``, the leader-election watchdog (client-go ``LeaderElector.Check``: a replica that
believes it leads but has not seen its lease renewed for ``leaseDuration`` + 20 s is broken,
e.g. deadlocked), and for ``/readyz`` the watchdog, shutdown and "handlers synced". Ours
keep those and add what a Python loop can get wrong while the process looks alive:

``/healthz`` (liveness: failing it restarts the container)
  * ``lease``: as upstream's watchdog, from when the elector last saw the Lease record change
    (each renewal changes ``renewTime``);
  * ``scheduling-loop``: while leading, pods are waiting in activeQ/backoffQ and the loop has
    not turned for ``loop_stuck_after`` seconds (a cycle or an await that never returns); and,
    leading or not, once the loop ended while this replica led (``loop_ended``: the operator
    then releases the lease, and this check keeps failing until the container restarts). An
    extender call in flight does not hold the loop (docs/extenders.md), so a slow extender
    never fails it.

``/readyz`` (readiness: failing it takes the replica out of Service endpoints and holds a
rollout back)
  * ``caches``: the informers' stores hold what a consistent LIST holds;
  * ``api``: some API call succeeded in the last ``api_stale_after`` seconds (reported with
    :meth:`HealthState.api_contact`, or seen as a Lease record change: the leader renews every
    retry period, and every replica reads the Lease as often);
  * ``scheduling-loop`` and ``lease``, as above, for the leader;
  * ``leader``: always passes; says whether this replica leads or stands by.

The operator wires in small callables (:class:`HealthState`'s attributes), so the cache-sync
state of the informers, the elector's leadership and the loop's progress plug in without
this module knowing their classes. Time is a monotonic clock, injectable for tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

# client-go NewLeaderHealthzAdaptor(time.Second * 20) in cmd/kube-scheduler/app/options/options.go.
MAX_TOLERABLE_EXPIRED_LEASE = 20.0
DEFAULT_LOOP_STUCK_AFTER = 60.0
DEFAULT_API_STALE_AFTER = 30.0


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str = ""

    def line(self) -> str:
        """Upstream's verbose healthz line: ``[+]name ok`` or ``[-]name failed: why``."""
        if self.ok:
            return f"[+]{self.name} ok" + (f" ({self.detail})" if self.detail else "")
        return f"[-]{self.name} failed: {self.detail}"


def report(kind: str, checks: list[Check]) -> tuple[bool, str]:
    """Whether every check passed, and the body (as healthz's ``?verbose`` output)."""
    ok = all(c.ok for c in checks)
    lines = [c.line() for c in checks]
    lines.append(f"{kind} check {'passed' if ok else 'failed'}")
    return ok, "\n".join(lines) + "\n"


class HealthState:
    """The operator's health, read by the HTTP endpoints; the app sets the callables."""

    def __init__(
        self,
        *,
        lease_duration: float = 15.0,
        loop_stuck_after: float = DEFAULT_LOOP_STUCK_AFTER,
        api_stale_after: float = DEFAULT_API_STALE_AFTER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.lease_duration = lease_duration
        self.loop_stuck_after = loop_stuck_after
        self.api_stale_after = api_stale_after
        self.clock = clock
        self.synced: Callable[[], bool] = lambda: False  # the caches hold a consistent LIST
        self.leading: Callable[[], bool] = lambda: False  # this replica holds the Lease and schedules
        self.last_turn: Callable[[], float | None] = lambda: None  # the loop's last turn (same clock)
        self.waiting: Callable[[], int] = lambda: 0  # pods the loop could pop now (activeQ + backoffQ)
        self.lease_observed: Callable[[], float | None] = lambda: None  # the elector's observed_at
        self.loop_ended: str | None = None  # why the scheduling loop ended while leading, if it did
        self._api_contact: float | None = None
        self._waiting_seen: float | None = None  # first check that saw pods waiting, this stretch

    # -- what the operator reports -------------------------------------------------------------
    def api_contact(self) -> None:
        """An API call succeeded (a watch event, a LIST, a write)."""
        self._api_contact = self.clock()

    # -- the checks ----------------------------------------------------------------------------
    def lease_check(self) -> Check:
        if not self.leading():
            return Check("lease", True)
        renewed = self.lease_observed()
        limit = self.lease_duration + MAX_TOLERABLE_EXPIRED_LEASE
        if renewed is None or self.clock() - renewed > limit:
            return Check("lease", False, f"failed election to renew leadership (not renewed for over {limit:g} s)")
        return Check("lease", True)

    def loop_check(self) -> Check:
        """Stuck: pods wait to be popped and the loop has not turned for ``loop_stuck_after``
        seconds since this check first saw them waiting (so a pod that arrived a moment ago,
        before the loop could wake, does not count)."""
        if self.loop_ended is not None:
            return Check("scheduling-loop", False, f"the scheduling loop ended while leading: {self.loop_ended}")
        if not self.leading():
            return Check("scheduling-loop", True, "standby")
        now = self.clock()
        waiting = self.waiting()
        if not waiting:
            self._waiting_seen = None
            return Check("scheduling-loop", True)
        if self._waiting_seen is None:
            self._waiting_seen = now
        turn = self.last_turn()
        since = self._waiting_seen if turn is None else max(turn, self._waiting_seen)
        if now - since > self.loop_stuck_after:
            return Check(
                "scheduling-loop",
                False,
                f"{waiting} pod(s) waiting and no scheduling turn for {now - since:.0f} s",
            )
        return Check("scheduling-loop", True)

    def caches_check(self) -> Check:
        return Check("caches", True) if self.synced() else Check("caches", False, "caches not synced yet")

    def api_check(self) -> Check:
        contacts = [t for t in (self._api_contact, self.lease_observed()) if t is not None]
        contact = max(contacts, default=None)
        if contact is None:
            return Check("api", False, "no API call has succeeded yet")
        age = self.clock() - contact
        if age > self.api_stale_after:
            return Check("api", False, f"no API call has succeeded for {age:.0f} s")
        return Check("api", True)

    def leader_check(self) -> Check:
        return Check("leader", True, "leading" if self.leading() else "standby: not leading")

    def liveness(self) -> list[Check]:
        return [self.lease_check(), self.loop_check()]

    def readiness(self) -> list[Check]:
        return [self.caches_check(), self.api_check(), self.lease_check(), self.loop_check(), self.leader_check()]
