"""The scheduling queue (upstream ``pkg/scheduler/backend/queue``).

:class:`SchedulingQueue` holds pending pods in activeQ, backoffQ and the unschedulable
pool, decides with queueing hints when a cluster event may make a rejected pod schedulable,
and owns the :class:`Nominator`. Modules: ``scheduling_queue`` (the moves between the
sub-queues), ``active`` (activeQ and the in-flight record), ``backoff``, ``unschedulable``,
``hints`` (queueing-hint evaluation), ``pod_events`` (events raised by pod updates),
``nominator``, ``heap`` and ``queued`` (the queue's bookkeeping on a pod).
"""

from scheduler_core.queue.backoff import calculate_backoff_duration
from scheduler_core.queue.hints import QueueingStrategy
from scheduler_core.queue.nominator import Nominator
from scheduler_core.queue.queued import QueuedPod
from scheduler_core.queue.scheduling_queue import (
    DEFAULT_INITIAL_BACKOFF,
    DEFAULT_MAX_BACKOFF,
    DEFAULT_MAX_IN_UNSCHEDULABLE,
    SchedulingQueue,
)

__all__ = [
    "DEFAULT_INITIAL_BACKOFF",
    "DEFAULT_MAX_BACKOFF",
    "DEFAULT_MAX_IN_UNSCHEDULABLE",
    "Nominator",
    "QueuedPod",
    "QueueingStrategy",
    "SchedulingQueue",
    "calculate_backoff_duration",
]
