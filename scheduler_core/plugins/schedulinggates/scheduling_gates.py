"""SchedulingGates: hold pods that carry ``spec.schedulingGates`` out of the active queue.

Upstream: ``pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go`` (v1.36).
PreEnqueue rejects a gated pod as UnschedulableAndUnresolvable with "waiting for scheduling
gates: [a b]" (Go's ``%v`` of the gate names). Gates can only be removed, so the one event that
may release the pod is its own update removing the last gate (the queue raises
UpdatePodSchedulingGatesEliminated then); the hint queues it only for that very pod.
"""

from __future__ import annotations

from scheduler_core.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventObject,
    EventResource,
    Handle,
    PodInfo,
    QueueingHint,
    Status,
)
from scheduler_core.plugins import names

NAME = names.SCHEDULING_GATES


class SchedulingGates:
    name = NAME
    args_model = None

    def __init__(self, args: object, handle: Handle | None) -> None:
        self._handle = handle

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                self._is_schedulable_after_scheduling_gates_eliminated,
            )
        ]

    def _is_schedulable_after_scheduling_gates_eliminated(
        self, pod: PodInfo, old: EventObject, new: EventObject
    ) -> QueueingHint:
        # util.As: a wrong object type is an error, and the queue then queues the pod.
        if old is not None:
            PodInfo.of(old)
        if new is None:
            return QueueingHint.QUEUE  # upstream dereferences nil here; queueing is the safe side
        modified = PodInfo.of(new)
        return QueueingHint.QUEUE if modified.uid == pod.uid else QueueingHint.SKIP

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if not pod.scheduling_gates:
            return None
        return Status.unresolvable(f"waiting for scheduling gates: [{' '.join(pod.scheduling_gates)}]")
