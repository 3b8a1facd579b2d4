"""Cluster events in: the scheduler's cache and queue kept in step with the cluster.

Upstream ``pkg/scheduler/eventhandlers.go`` (``addNodeToCache``, ``updatePodInSchedulingQueue``,
``addAllEventHandlers``...). A backend (the in-memory simulator, or the operator's informer
stores) hands every watch event to the :class:`~scheduler_core.scheduler.Scheduler`, which
hands it to the :class:`EventHandlers` it owns: nodes and pods through
``on_node_*``/``on_pod_*``, every other kind through ``on_object_*(kind, ...)``,
which turns a change of a kind plugins register events for (the storage kinds) into a cluster
event for the queue, and ignores the kinds plugins only read (``Handle.objects``). No backend
talks to the queue or the cache directly: a pod deleted while no watch ran goes to
``on_pod_vanished``, which asks the cache where it was counted, and a backend that keeps
something per pod (the operator's reporting state) lets go of it when ``pod_gone`` tells it the
pod was deleted or bound.

A pending pod whose namespace has a profile that does not serve is *held*: out of the queue,
told why once (``PodScheduled=False``, reason ``ProfileNotServing``), re-sorted whenever a
profile changes (``scheduler_core.profiles``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from scheduler_core.cache import Cache, CacheError
from scheduler_core.framework import Manifest, PodInfo, manifest
from scheduler_core.framework import events as ev
from scheduler_core.metrics.scheduler_metrics import SchedulerMetrics
from scheduler_core.profiles import ProfileSet
from scheduler_core.queue import SchedulingQueue
from scheduler_core.reporting import REASON_PROFILE_NOT_SERVING, truncate_message

if TYPE_CHECKING:
    from scheduler_core.scheduler import Backend

log = logging.getLogger(__name__)

# Kinds whose changes are cluster events (upstream: the informers eventhandlers.go registers
# for the GVKs plugins declare), by the kind name the stores use: PersistentVolumeClaim,
# StorageClass, CSINode... The two PodGroup APIs share a kind name, so they keep their group
# (``scheduling.x-k8s.io/PodGroup``, as ``Handle.objects`` names them).
_SHARED_KIND_NAMES = (ev.EventResource.POD_GROUP, ev.EventResource.X_POD_GROUP)
STORAGE_EVENT_RESOURCES: Mapping[str, ev.EventResource] = {
    (resource.value if resource in _SHARED_KIND_NAMES else resource.value.rsplit("/", 1)[-1]): resource
    for resource in ev.EventResource
    if resource
    not in (ev.EventResource.POD, ev.EventResource.ASSIGNED_POD, ev.EventResource.NODE, ev.EventResource.WILDCARD)
}


class EventHandlers:
    """The cluster's events into the cache and the queue; owned by the
    :class:`~scheduler_core.scheduler.Scheduler`, whose ``on_*`` methods hand them here.

    ``unassigned`` is every pending pod, ours or not (by uid); ``held``, the reason each held
    pod was told (by uid). ``unscheduled_pod_add`` is set by the scheduler when a served
    profile's plugin registers Pod/Add (gangs)."""

    def __init__(
        self,
        *,
        backend: Backend,
        cache: Cache,
        queue: SchedulingQueue,
        profiles: ProfileSet,
        metrics: SchedulerMetrics,
        pod_gone: Callable[[str], None],
    ) -> None:
        """``pod_gone``: told the uid of each pod deleted or bound."""
        self.backend = backend
        self.cache = cache
        self.queue = queue
        self.profiles = profiles
        self.metrics = metrics
        self.unassigned: dict[str, PodInfo] = {}
        self.held: dict[str, str] = {}
        self.unscheduled_pod_add = False
        self._reporting = False  # only a scheduling replica (the leader) writes to pods
        self._pod_gone = pod_gone

    def report_held(self) -> None:
        """Start reporting: tell every held pod why it waits."""
        self._reporting = True
        for pod in list(self.unassigned.values()):
            if not self.profiles.handles(pod):
                self.sort_pending(pod)

    def stop_reporting(self) -> None:
        """No longer the leader: a new one (maybe this one again) tells the held pods afresh."""
        self._reporting = False
        self.held.clear()

    # -- any kind ------------------------------------------------------------------------------
    def on_object_add(self, kind: str, obj: Manifest) -> None:
        if kind == "Node":
            self.on_node_add(obj)
        elif kind == "Pod":
            self.on_pod_add(obj)
        else:
            self._object_event(kind, ev.ActionType.ADD, "Add", None, obj)

    def on_object_update(self, kind: str, old: Manifest, new: Manifest) -> None:
        if kind == "Node":
            self.on_node_update(old, new)
        elif kind == "Pod":
            self.on_pod_update(old, new)
        else:
            self._object_event(kind, ev.ActionType.UPDATE, "Update", old, new)

    def on_object_delete(self, kind: str, obj: Manifest) -> None:
        if kind == "Node":
            self.on_node_delete(obj)
        elif kind == "Pod":
            self.on_pod_delete(obj)
        else:
            self._object_event(kind, ev.ActionType.DELETE, "Delete", obj, None)

    def _object_event(
        self, kind: str, action: ev.ActionType, label: str, old: Manifest | None, new: Manifest | None
    ) -> None:
        resource = STORAGE_EVENT_RESOURCES.get(kind)
        if resource is None:
            return  # read by plugins through Handle.objects, never a cluster event
        event = ev.ClusterEvent(resource, action, f"{resource.value}{label}")
        start = self.metrics.timer()
        self.queue.move_all_to_active_or_backoff(event, old, new)
        self.metrics.event_handled(event.label, self.metrics.timer() - start)

    # -- pending pods whose profile does not serve -----------------------------------------
    def sort_pending(self, pod: PodInfo) -> None:
        """Queue a pending pod its profile serves; hold (and say why) one whose profile does not."""
        handled = self.profiles.handles(pod) and not _terminal(pod)
        queued = self.queue.contains(pod)
        if handled and not queued:
            self.queue.add(pod)
        elif not handled and queued:
            self.queue.delete(pod)
        reason = None if handled else self.profiles.held_reason(pod)
        if reason is None:
            self.held.pop(pod.uid, None)
        elif self._reporting and self.held.get(pod.uid) != reason:
            self.held[pod.uid] = reason
            self.backend.report_failure(pod, REASON_PROFILE_NOT_SERVING, truncate_message(reason), None)

    # -- nodes and pods ------------------------------------------------------------------------
    # Each handler is timed into scheduler_event_handling_duration_seconds by upstream's event
    # label (eventhandlers.go ``EventHandlingLatency``): a node update under each change it
    # makes (NodeAllocatableChange, NodeLabelChange...), a pod by whether it is bound.
    def on_node_add(self, node: Manifest) -> None:
        start = self.metrics.timer()
        self._cache_call(self.cache.add_node, node)
        self.queue.move_all_to_active_or_backoff(ev.NODE_ADD, None, node)
        self.metrics.event_handled(ev.NODE_ADD.label, self.metrics.timer() - start)

    def on_node_update(self, old: Manifest | None, new: Manifest) -> None:
        start = self.metrics.timer()
        self._cache_call(self.cache.update_node, old, new)
        events = node_change_events(old, new)
        for event in events:
            self.queue.move_all_to_active_or_backoff(event, old, new)
        seconds = self.metrics.timer() - start
        for event in events:
            self.metrics.event_handled(event.label, seconds)

    def on_node_delete(self, node: Manifest) -> None:
        start = self.metrics.timer()
        self._cache_call(self.cache.remove_node, manifest.meta(node).get("name", ""))
        self.queue.move_all_to_active_or_backoff(ev.NODE_DELETE, node, None)
        self.metrics.event_handled(ev.NODE_DELETE.label, self.metrics.timer() - start)

    def on_pod_add(self, pod: Manifest) -> None:
        start = self.metrics.timer()
        self._pod_add(pod)
        label = "AssignedPodAdd" if _bound(pod) else "UnschedulablePodAdd"
        self.metrics.event_handled(label, self.metrics.timer() - start)

    def on_pod_update(self, old: Manifest, new: Manifest) -> None:
        start = self.metrics.timer()
        self._pod_update(old, new)
        # A binding seen by the watch: upstream's assigned-pod informer sees an add.
        label = "AssignedPodUpdate" if _bound(old) else "AssignedPodAdd" if _bound(new) else "UnschedulablePodUpdate"
        self.metrics.event_handled(label, self.metrics.timer() - start)
        if label == "AssignedPodAdd":
            self._pod_gone(manifest.uid_of(new))

    def on_pod_delete(self, pod: Manifest) -> None:
        start = self.metrics.timer()
        self._pod_delete(pod)
        label = "AssignedPodDelete" if _bound(pod) else "UnschedulablePodDelete"
        self.metrics.event_handled(label, self.metrics.timer() - start)
        self._pod_gone(manifest.uid_of(pod))

    def on_pod_vanished(self, pod: Manifest) -> None:
        """Deleted while no watch ran (a re-list lacks it): the last body seen may predate the
        pod's binding (it was assumed, then bound and deleted in the gap). The cache's copy says
        which node still counts it, so the delete removes it there and frees that capacity."""
        if not _bound(pod):
            cached = self.cache.get_pod(PodInfo(pod))
            if cached is not None:
                pod = cached.pod
        self.on_pod_delete(pod)

    # Upstream logs cache inconsistencies (a delete for a pod already removed, an unknown
    # node) and goes on; an event handler must never take the scheduler down.
    def _cache_call(self, operation: Callable[..., Any], *args: Any) -> bool:
        try:
            operation(*args)
        except CacheError as exc:
            log.error("scheduler cache: %s", exc)
            return False
        return True

    def _pod_add(self, pod: Manifest) -> None:
        info = PodInfo(pod)
        if info.node_name:
            if not _terminal(info):
                self._cache_call(self.cache.add_pod, info)
                self.queue.assigned_pod_added(info)
            return
        self.unassigned[info.uid] = info
        if self.profiles.handles(info) and not _terminal(info):
            self.queue.add(info)
        elif not _terminal(info):
            self.sort_pending(info)
        if self.unscheduled_pod_add:
            self.queue.move_all_to_active_or_backoff(ev.UNSCHEDULED_POD_ADD, None, info)

    def _pod_update(self, old: Manifest, new: Manifest) -> None:
        uid = manifest.meta(old).get("uid")
        known = self.unassigned.get(uid) if uid else None
        old_info = known if known is not None and known.pod is old else PodInfo(old)
        new_info = PodInfo(new, like=old_info)
        if old_info.node_name:
            if _terminal(old_info):
                return  # the cache let go of it when it terminated
            if _terminal(new_info):
                self._cache_call(self.cache.remove_pod, old_info)
                self.queue.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, old_info, None)
            else:
                self._cache_call(self.cache.update_pod, old_info, new_info)
                self.queue.assigned_pod_updated(old_info, new_info)
            return
        if new_info.node_name:
            # Bound (by us or by someone else): out of the queue, into the cache.
            self.unassigned.pop(new_info.uid, None)
            self.held.pop(new_info.uid, None)
            self.queue.delete(old_info)
            if not _terminal(new_info):
                self._cache_call(self.cache.add_pod, new_info)
                self.queue.assigned_pod_added(new_info)
            return
        self.unassigned[new_info.uid] = new_info
        if self.cache.is_assumed_pod(new_info):
            return
        if self.profiles.handles(new_info) and not _terminal(new_info):
            self.queue.update(old_info, new_info)
        else:
            self.queue.delete(new_info)
            if not _terminal(new_info):
                self.sort_pending(new_info)

    def _pod_delete(self, pod: Manifest) -> None:
        info = PodInfo(pod)
        if info.node_name:
            if not _terminal(info):
                self._cache_call(self.cache.remove_pod, info)
                self.queue.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, info, None)
            return
        self.unassigned.pop(info.uid, None)
        self.held.pop(info.uid, None)
        self.queue.delete(info)
        for _, fwk in self.profiles:
            waiting = fwk.handle.waiting_pods.get(info.uid)
            if waiting is not None:
                waiting.reject("", "pod was deleted")


def _bound(pod: Manifest) -> bool:
    return bool(manifest.spec(pod).get("nodeName"))


def _terminal(pod: PodInfo) -> bool:
    return pod.phase in ("Succeeded", "Failed")


def node_change_events(old: Manifest | None, new: Manifest) -> list[ev.ClusterEvent]:
    """Upstream ``NodeSchedulingPropertiesChange`` (``pkg/scheduler/framework/events.go``):
    which node properties changed."""
    if old is None:
        return [ev.NODE_ADD]
    events: list[ev.ClusterEvent] = []
    o_spec, n_spec = manifest.spec(old), manifest.spec(new)
    o_status, n_status = manifest.status(old), manifest.status(new)
    o_meta, n_meta = manifest.meta(old), manifest.meta(new)
    node = ev.EventResource.NODE
    if bool(o_spec.get("unschedulable")) != bool(n_spec.get("unschedulable")):
        events.append(ev.ClusterEvent(node, ev.ActionType.UPDATE_NODE_TAINT, "NodeSpecUnschedulableChange"))
    if (o_status.get("allocatable") or o_status.get("capacity")) != (
        n_status.get("allocatable") or n_status.get("capacity")
    ):
        events.append(ev.ClusterEvent(node, ev.ActionType.UPDATE_NODE_ALLOCATABLE, "NodeAllocatableChange"))
    if (o_meta.get("labels") or {}) != (n_meta.get("labels") or {}):
        events.append(ev.ClusterEvent(node, ev.ActionType.UPDATE_NODE_LABEL, "NodeLabelChange"))
    if (o_spec.get("taints") or []) != (n_spec.get("taints") or []):
        events.append(ev.ClusterEvent(node, ev.ActionType.UPDATE_NODE_TAINT, "NodeTaintChange"))
    if (o_status.get("conditions") or []) != (n_status.get("conditions") or []):
        events.append(ev.ClusterEvent(node, ev.ActionType.UPDATE_NODE_CONDITION, "NodeConditionChange"))
    if (o_meta.get("annotations") or {}) != (n_meta.get("annotations") or {}):
        events.append(ev.ClusterEvent(node, ev.ActionType.UPDATE_NODE_ANNOTATION, "NodeAnnotationChange"))
    # extractNodeFeaturesChange (the NodeDeclaredFeatures gate is on by default in v1.36).
    if (o_status.get("declaredFeatures") or []) != (n_status.get("declaredFeatures") or []):
        events.append(ev.ClusterEvent(node, ev.ActionType.UPDATE_NODE_DECLARED_FEATURE, "NodeDeclaredFeatureChange"))
    return events
