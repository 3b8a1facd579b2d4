"""NodeResourcesFit's queueing hints: which events may make a pod it rejected fit.

Upstream ``noderesources/fit.go`` (k8s.io/kubernetes v1.36.3) ``EventsToRegister``,
``isSchedulableAfterPodEvent``, ``isSchedulableAfterPodScaleDown``,
``isSchedulableAfterNodeChange`` and ``haveAnyRequestedResourcesIncreased``, with v1.36's
default feature gates: InPlacePodVerticalScaling and SchedulerQueueingHints are GA and locked
on, so pod scale-downs are registered and node events are only Add and allocatable updates.

Simplifications, documented: upstream's ``Pod`` event resource covers assigned and unscheduled
pods, so both are registered here; scale-downs compare spec requests (upstream also reads
resized amounts from the pod status). With DRAExtendedResource (beta, on), DeviceClass
adds and updates are registered too (``isSchedulableAfterDeviceClassEvent``), and a node that
does not advertise a DRA-backed resource counts as fitting it. Hints take either parsed objects
(:class:`PodInfo` / :class:`NodeInfo`) or raw manifests; any other object raises, which the
queue treats as Queue (upstream returns Queue with an error).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from scheduler_core.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventObject,
    EventResource,
    NodeInfo,
    PodInfo,
    QueueingHint,
    Resource,
    manifest,
)
from scheduler_core.framework.extended_resources import (
    DEVICE_CLASS_PREFIX,
    DeviceClassResolver,
    extended_resource_name,
)
from scheduler_core.plugins.noderesources.requests import compute_fit_request, insufficient_resources

Classes = Callable[[], DeviceClassResolver]

POD_ACTIONS = ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN
NODE_ACTIONS = ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE


def is_schedulable_after_pod_event(pod: PodInfo, old: EventObject, new: EventObject) -> QueueingHint:
    """A pod was deleted or scaled down: Queue when that can free resources for ``pod``."""
    original, modified = PodInfo.of_optional(old), PodInfo.of_optional(new)
    if modified is None:
        if original is None:
            raise TypeError("pod event without a pod")
        if not original.node_name and not original.nominated_node_name:
            return QueueingHint.SKIP  # an unscheduled, unnominated pod held nothing
        return QueueingHint.QUEUE
    if original is None:
        raise TypeError("pod update without the old pod")
    return QueueingHint.QUEUE if _scaled_down_for(pod, original, modified) else QueueingHint.SKIP


def _scaled_down_for(target: PodInfo, original: PodInfo, modified: PodInfo) -> bool:
    if modified.uid == target.uid:
        return True  # the pod itself got smaller
    if not modified.node_name:
        return False  # an unscheduled pod held nothing
    before, after, wanted = original.requests, modified.requests, target.requests
    if wanted.milli_cpu and before.milli_cpu > after.milli_cpu:
        return True
    if wanted.memory and before.memory > after.memory:
        return True
    if wanted.ephemeral_storage and before.ephemeral_storage > after.ephemeral_storage:
        return True
    return any(
        quantity and before.scalar_resources.get(name, 0) > after.scalar_resources.get(name, 0)
        for name, quantity in wanted.scalar_resources.items()
    )


def _allocatable(obj: object) -> Resource | None:
    node = NodeInfo.of_optional(obj)
    return None if node is None else node.allocatable


def is_schedulable_after_node_change(
    pod: PodInfo, old: EventObject, new: EventObject, classes: Classes | None = None
) -> QueueingHint:
    """A node was added or its allocatable changed: Queue when ``pod`` may now fit on it."""
    original, modified = _allocatable(old), _allocatable(new)
    request = compute_fit_request(pod.requests, classes=classes)
    # isFit: an empty NodeInfo of the new node, checked without ignored resources (upstream Fits).
    if modified is None or insufficient_resources(request, modified, Resource(), 0):
        return QueueingHint.SKIP
    if original is None:
        return QueueingHint.QUEUE
    increased = _requested_resources_increased(pod.requests, original, modified, request.dra_backed)
    return QueueingHint.QUEUE if increased else QueueingHint.SKIP


def is_schedulable_after_device_class_event(pod: PodInfo, old: EventObject, new: EventObject) -> QueueingHint:
    """``isSchedulableAfterDeviceClassEvent``: Queue when the added or changed class now maps a
    resource ``pod`` requests."""
    if not isinstance(new, Mapping):
        raise TypeError("device class event without a DeviceClass")
    wanted = pod.requests.scalar_resources
    if isinstance(old, Mapping):
        if extended_resource_name(old) == extended_resource_name(new):
            return QueueingHint.SKIP
    elif wanted.get(DEVICE_CLASS_PREFIX + manifest.name_of(new)) is not None:
        return QueueingHint.QUEUE  # the implicit name: only on add, a class's name never changes
    name = extended_resource_name(new)
    return QueueingHint.QUEUE if name is not None and name in wanted else QueueingHint.SKIP


def _requested_resources_increased(
    wanted: Resource, before: Resource, after: Resource, dra_backed: frozenset[str] = frozenset()
) -> bool:
    if after.allowed_pod_number > before.allowed_pod_number:
        return True
    if (
        (wanted.milli_cpu > 0 and after.milli_cpu > before.milli_cpu)
        or (wanted.memory > 0 and after.memory > before.memory)
        or (wanted.ephemeral_storage > 0 and after.ephemeral_storage > before.ephemeral_storage)
    ):
        return True
    return any(
        quantity
        and (
            after.scalar_resources.get(name, 0) > before.scalar_resources.get(name, 0)
            or (name in dra_backed and after.scalar_resources.get(name, 0) <= 0)  # shouldDelegateResourceToDRA
        )
        for name, quantity in wanted.scalar_resources.items()
    )


def fit_events(classes: Classes | None = None) -> list[ClusterEventWithHint]:
    """Fit's events; with ``classes`` (the scheduler's DeviceClasses), DRAExtendedResource's too."""

    events = [
        ClusterEventWithHint(ClusterEvent(EventResource.ASSIGNED_POD, POD_ACTIONS), is_schedulable_after_pod_event),
        ClusterEventWithHint(ClusterEvent(EventResource.POD, POD_ACTIONS), is_schedulable_after_pod_event),
        ClusterEventWithHint(ClusterEvent(EventResource.NODE, NODE_ACTIONS), is_schedulable_after_node_change),
    ]
    if classes is not None:

        def after_node_change(pod: PodInfo, old: EventObject, new: EventObject) -> QueueingHint:
            return is_schedulable_after_node_change(pod, old, new, classes)

        events[2] = ClusterEventWithHint(ClusterEvent(EventResource.NODE, NODE_ACTIONS), after_node_change)
        device_class = ClusterEvent(EventResource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE)
        events.append(ClusterEventWithHint(device_class, is_schedulable_after_device_class_event))
    return events
