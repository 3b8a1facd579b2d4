"""The unschedulable pool: pods tried and found unschedulable, and pods gated by PreEnqueue.

Upstream: ``pkg/scheduler/backend/queue/unschedulable_entities.go``. A plain map keyed by
``namespace/name``; pods leave it only when a cluster event's queueing hint says QUEUE, on
``activate``, or when they have stayed longer than ``max_in_unschedulable`` (the periodic
UnschedulableTimeout flush).

Gated pods are also indexed by their gating plugin and its events. A gated pod re-runs
PreEnqueue only on its gating plugin's events or a wildcard (``scheduling_queue.go``
``movePodsToActiveOrBackoffQueue``), so :meth:`candidates` leaves out, without looking at them
one by one, the gated pods an event cannot move: 10,000 gated pods cost nothing per binding
(scheduler_perf's ``SchedulingGatedPodsWithPodAffinityImpactForThroughput``), where scanning
them ran each one's affinity pre-check for every bound pod.
"""

from __future__ import annotations

from collections.abc import Iterator

from scheduler_core.framework import ClusterEvent
from scheduler_core.queue.hints import is_wildcard
from scheduler_core.queue.queued import QueuedPod

# A gating plugin and the events it registered: pods gated alike are moved alike.
_Gate = tuple[str, tuple[ClusterEvent, ...]]


class UnschedulablePods:
    __slots__ = ("_gate_of", "_gated", "_pods", "_tried")

    def __init__(self) -> None:
        self._pods: dict[str, QueuedPod] = {}
        self._tried: dict[str, QueuedPod] = {}  # the pods no PreEnqueue plugin gates
        self._gated: dict[_Gate, dict[str, QueuedPod]] = {}
        self._gate_of: dict[str, _Gate] = {}

    def add_or_update(self, qp: QueuedPod) -> None:
        key = qp.key
        self._unindex(key)
        self._pods[key] = qp
        if qp.gated:
            gate = (qp.gating_plugin, qp.gating_plugin_events)
            self._gated.setdefault(gate, {})[key] = qp
            self._gate_of[key] = gate
        else:
            self._tried[key] = qp

    def delete(self, key: str) -> QueuedPod | None:
        self._unindex(key)
        return self._pods.pop(key, None)

    def _unindex(self, key: str) -> None:
        if self._tried.pop(key, None) is None and (gate := self._gate_of.pop(key, None)) is not None:
            group = self._gated[gate]
            del group[key]
            if not group:
                del self._gated[gate]

    def candidates(self, event: ClusterEvent) -> list[QueuedPod]:
        """The pods ``event`` may move: every pod for a wildcard; otherwise the pods no plugin
        gates, and the gated ones whose gating plugin registered a matching event."""
        if is_wildcard(event):
            return list(self._pods.values())
        found = list(self._tried.values())
        for (_, events), group in self._gated.items():
            if any(e.matches(event) for e in events):
                found.extend(group.values())
        return found

    def gated_count(self) -> int:
        return len(self._gate_of)

    def get(self, key: str) -> QueuedPod | None:
        return self._pods.get(key)

    def __contains__(self, key: str) -> bool:
        return key in self._pods

    def __iter__(self) -> Iterator[QueuedPod]:
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)
