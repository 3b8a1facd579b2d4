"""The operator's own I/O counters, beside the scheduler's in the one registry ``/metrics`` renders.

* ``crd_scheduler_fenced_writes_total{verb,resource}``: writes this replica refused to send
  because it could not be sure it still held the Lease (``scheduler_operator.control.fence``); ``verb``
  is the HTTP method, ``resource`` the API resource and subresource (``pods/binding``,
  ``events``, ``schedulerprofiles/status``). A leader that stays healthy never counts one; a
  count means a renewal failed or came too late while work was under way
  (``docs/leader-election.md``).
* ``crd_scheduler_failed_writes_total{write}``: writes that still failed after the transport's
  retries (``scheduler_operator.io.transport``), by what they were: ``bind``, ``pod condition``,
  ``event``, ``status``, or the verb and resource of a plugin's write (``delete pods``,
  ``patch pods/status``...; ``docs/operator-io.md``).

Both are counters fed by callbacks of the fence and the transport: the fence calls under its own
lock (refusals happen on the event loop and on the threads of the generated client), the
transport on the event loop.
"""

from __future__ import annotations

from scheduler_core.metrics.registry import Counter, Registry
from scheduler_operator.control.fence import Fence
from scheduler_operator.io.transport import Transport

FENCED_WRITES = "crd_scheduler_fenced_writes_total"
FAILED_WRITES = "crd_scheduler_failed_writes_total"


class IOMetrics:
    def __init__(self, registry: Registry) -> None:
        self.fenced: Counter = registry.counter(
            FENCED_WRITES,
            "Writes refused before they were sent, this replica not being sure to hold the Lease, "
            "by HTTP verb and API resource.",
            ("verb", "resource"),
        )
        self.failed: Counter = registry.counter(
            FAILED_WRITES, "Writes that still failed after the retries, by what they were.", ("write",)
        )

    def watch(self, fence: Fence, transport: Transport) -> None:
        fence.on_refused = lambda verb, resource: self.fenced.labels(verb, resource).inc()
        transport.on_failed_write = lambda what: self.failed.labels(what).inc()
