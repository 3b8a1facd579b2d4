"""The Lease as a fence: no write to the API starts unless this replica surely still leads.

A replica may write (bind, evict, nominate, patch a condition, write a status, post an event)
only while the lease it renewed is still its own *by its own clock*: until ``renew_deadline``
after the start of its last successful renewal. Another candidate may take over only
``lease_duration`` after it saw that renewal land, so every write that starts inside the fence
starts at least ``lease_duration - renew_deadline`` (5 s with upstream's defaults) before
anyone else can lead. The check reads the monotonic clock in the thread about to send the
request, so it holds even when the event loop was blocked (a long synchronous scheduling
cycle) and the renewal could not happen: a renewal that did not happen in time is a loss.

Upstream has no such check in the write path: kube-scheduler relies on exiting when the
renewal loop gives up (``cmd/kube-scheduler/app/server.go``, ``OnStoppedLeading`` →
``klog.FlushAndExit``). We do both (see ``docs/leader-election.md``): the fence covers the
moments between the deadline and the exit, and a loop that stalled past the deadline.

:meth:`Fence.guard` goes around every request the operator's HTTP layer is about to send
(``transport.Transport.guard``: binds, evictions, condition patches, events, statuses, each
retry attempt on its own); reads (lists, watches, gets) are not fenced.
:meth:`Fence.wait_idle` is what shutdown waits on before handing the lease over: writes in
flight have finished (or failed) and none can start. Shutdown uses :meth:`Fence.shut`, the first
thing the operator does on SIGTERM: unlike :meth:`Fence.close`, no later renewal opens it again
(the keeper renews until it releases the lease). Every refusal is counted, by HTTP verb and
API resource (``on_refused``: ``crd_scheduler_fenced_writes_total``, ``scheduler_operator.control.io_metrics``).

Writes that do not pass here, and why that is safe, are listed in ``docs/leader-election.md``
("Every write, and who may make it"): the Lease itself, and Kopf's own writes (none with this
operator's handlers and settings, but the admission webhook's configuration under
``--webhook-managed``, which every replica keeps alike).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

READS = frozenset({"GET", "HEAD", "OPTIONS"})


class FencedError(Exception):
    """A write refused: this replica cannot be sure it still holds the lease."""


class Fence:
    def __init__(self, renew_deadline: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.renew_deadline = renew_deadline
        self._clock = clock
        self._valid_until = -math.inf
        self._in_flight = 0
        self._shut = False
        self._changed = threading.Condition()
        self.refused = 0
        # Told (verb, resource) of each refusal, under the fence's lock: calls never overlap.
        self.on_refused: Callable[[str, str], None] = lambda _verb, _resource: None

    def renewed(self, attempt_started: float) -> None:
        """A renewal (or acquisition) that started at ``attempt_started`` (monotonic) succeeded."""
        with self._changed:
            if not self._shut:
                self._valid_until = max(self._valid_until, attempt_started + self.renew_deadline)

    def close(self) -> None:
        """No write starts from now on (lease lost), until a renewal opens the fence again."""
        with self._changed:
            self._valid_until = -math.inf

    def shut(self) -> None:
        """No write starts from now on, whatever renewal lands later: the replica is shutting
        down (SIGTERM) or gave up leading, and the keeper may still renew until it releases."""
        with self._changed:
            self._shut = True
            self._valid_until = -math.inf

    @property
    def is_shut(self) -> bool:
        return self._shut

    @property
    def is_open(self) -> bool:
        return self._clock() < self._valid_until

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @contextmanager
    def write(self, what: str, *, verb: str = "", resource: str = "") -> Iterator[None]:
        """Around one write request: refused when the fence is closed, counted while it runs."""
        with self._changed:
            if self._clock() >= self._valid_until:
                self.refused += 1
                self.on_refused(verb, resource)
                raise FencedError(f"{what}: refused, this replica is not sure to hold the lease")
            self._in_flight += 1
        try:
            yield
        finally:
            with self._changed:
                self._in_flight -= 1
                self._changed.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Block until no write is in flight (True), or ``timeout`` seconds passed (False)."""
        with self._changed:
            return self._changed.wait_for(lambda: self._in_flight == 0, timeout=timeout)

    def guard(self, method: str, url: str) -> AbstractContextManager[None]:
        """Around one request about to be sent: :meth:`write` for a write, nothing for a read."""
        verb = method.upper()
        if verb in READS:
            return nullcontext()
        path = urlsplit(url).path
        return self.write(f"{method} {path}", verb=verb, resource=api_resource(path))


def api_resource(path: str) -> str:
    """The resource (and subresource) an API path names: ``pods/binding``, ``events``,
    ``schedulerprofiles/status``, ``nodes``; "" for a path outside ``/api`` and ``/apis``."""
    parts = [part for part in path.split("/") if part]
    if parts[:1] == ["api"]:
        parts = parts[2:]  # api, v1
    elif parts[:1] == ["apis"]:
        parts = parts[3:]  # apis, group, version
    else:
        return ""
    if len(parts) >= 3 and parts[0] == "namespaces":
        parts = parts[2:]  # namespaces, <namespace>: a namespaced resource follows
    if not parts:
        return ""
    return f"{parts[0]}/{parts[2]}" if len(parts) > 2 else parts[0]
