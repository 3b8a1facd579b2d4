"""PrioritySort: the activeQ order, higher priority first, then first come first served.

Upstream: ``pkg/scheduler/framework/plugins/queuesort/priority_sort.go``. The priority is
``spec.priority`` (0 when unset, as ``corev1helpers.PodPriority``); ties go to the pod
queued earlier (``QueuedPodInfo.timestamp``). One QueueSort plugin serves the scheduler.
"""

from __future__ import annotations

from scheduler_core.framework import Handle, QueuedPodInfo
from scheduler_core.plugins import names

NAME = names.PRIORITY_SORT


class PrioritySort:
    name = NAME
    args_model = None

    def __init__(self, args: object, handle: Handle | None) -> None:
        self._handle = handle

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        p1 = a.pod_info.priority
        p2 = b.pod_info.priority
        return p1 > p2 or (p1 == p2 and a.timestamp < b.timestamp)
