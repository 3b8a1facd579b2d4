"""The unschedulable pool: pods tried and found unschedulable, and pods gated by PreEnqueue.

Upstream: ``pkg/scheduler/backend/queue/unschedulable_entities.go``. A plain map keyed by
``namespace/name``; pods leave it only when a cluster event's queueing hint says QUEUE, on
``activate``, or when they have stayed longer than ``max_in_unschedulable`` (the periodic
UnschedulableTimeout flush). The gated/unschedulable split only feeds metrics upstream,
which are not kept here.
"""

from __future__ import annotations

from collections.abc import Iterator

from scheduler_core.queue.queued import QueuedPod


class UnschedulablePods:
    __slots__ = ("_pods",)

    def __init__(self) -> None:
        self._pods: dict[str, QueuedPod] = {}

    def add_or_update(self, qp: QueuedPod) -> None:
        self._pods[qp.key] = qp

    def delete(self, key: str) -> QueuedPod | None:
        return self._pods.pop(key, None)

    def get(self, key: str) -> QueuedPod | None:
        return self._pods.get(key)

    def __contains__(self, key: str) -> bool:
        return key in self._pods

    def __iter__(self) -> Iterator[QueuedPod]:
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)
