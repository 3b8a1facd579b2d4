"""The queue's own bookkeeping on a queued pod.

``QueuedPod`` extends the public :class:`~scheduler_core.framework.QueuedPodInfo` with the
fields upstream keeps in ``framework.QueueingParams`` (``pkg/scheduler/framework/types.go``)
that only the queue reads: the counters that drive backoff, the cached backoff expiry, the
events of the gating PreEnqueue plugin and the "flushed from unschedulable" mark. Plugins
and the scheduler loop see it as a plain ``QueuedPodInfo``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler_core.framework import ClusterEvent, PodInfo, QueuedPodInfo


@dataclass(slots=True)
class QueuedPod(QueuedPodInfo):
    # Failed attempts rejected by plugins; drives backoff (upstream UnschedulableCount).
    unschedulable_count: int = 0
    # Attempts in a row that ended in an Error; when > 0 it drives backoff instead.
    consecutive_errors_count: int = 0
    # Cached result of the backoff computation; None until computed, reset on each failure.
    backoff_expiration: float | None = None
    gating_plugin_events: tuple[ClusterEvent, ...] = field(default_factory=tuple)
    was_flushed_from_unschedulable: bool = False

    @property
    def key(self) -> str:
        return pod_key(self.pod_info)

    def set_gating(self, plugin: str, events: tuple[ClusterEvent, ...]) -> None:
        self.gating_plugin = plugin
        self.gating_plugin_events = events
        self.gated = bool(plugin)

    def rejector_plugins(self) -> set[str]:
        return self.unschedulable_plugins | self.pending_plugins


def pod_key(pod: PodInfo) -> str:
    """The queue key of a pod, ``namespace/name`` (upstream ``podInfoKeyFunc``)."""
    return f"{pod.namespace}/{pod.name}"


def as_queued_pod(info: QueuedPodInfo) -> QueuedPod:
    """The queue's record for ``info``; a plain QueuedPodInfo from elsewhere is copied."""
    if isinstance(info, QueuedPod):
        return info
    return QueuedPod(
        pod_info=info.pod_info,
        timestamp=info.timestamp,
        initial_attempt_timestamp=info.initial_attempt_timestamp,
        attempts=info.attempts,
        unschedulable_plugins=set(info.unschedulable_plugins),
        pending_plugins=set(info.pending_plugins),
        gated=info.gated,
        gating_plugin=info.gating_plugin,
    )
