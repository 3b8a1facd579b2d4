"""Which events a pod update raises.

Upstream: ``PodSchedulingPropertiesChange`` in ``pkg/scheduler/framework/events.go``. Which
pending pods an event moves is the hints' decision alone (``MoveAllToActiveOrBackoffQueue``);
``getUnschedulablePodsWithCrossTopologyTerm``, the pre-filter of the gate-off path, is not
used: SchedulerQueueingHints is GA and locked on in v1.36.

An update of a pod raises one event per changed property (labels, request scale-down,
scheduling gates all removed, tolerations added, generated resource claims), or a plain
update when none changed; the resource is the pod itself (``Pod``) while it is unscheduled
and ``AssignedPod`` once it has a node. In-place resize (status resources) is not
considered: requests come from the spec.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scheduler_core.framework import ActionType, ClusterEvent, EventResource, PodInfo, pod_requests
from scheduler_core.framework.events import action_name


def pod_scheduling_properties_change(
    new: PodInfo, old: PodInfo, *, resource: EventResource | None = None
) -> list[ClusterEvent]:
    if resource is None:
        resource = EventResource.ASSIGNED_POD if new.node_name else EventResource.POD
    actions = [
        action
        for action in (
            _labels_change(new, old),
            _scale_down(new, old),
            _scheduling_gates_eliminated(new, old),
            _tolerations_change(new, old),
            _generated_resource_claim_change(new, old),
        )
        if action is not None
    ]
    if not actions:
        # Only plugins registering a general Pod/Update are interested.
        actions = [ActionType.UPDATE]
    # Labelled as upstream's are: the unscheduled pod's resource is "UnschedulablePod" there
    # (pkg/scheduler/framework/types.go), ours registers as "Pod".
    prefix = "AssignedPod" if resource is EventResource.ASSIGNED_POD else "UnschedulablePod"
    return [ClusterEvent(resource, action, prefix + action_name(action)) for action in actions]


def _labels_change(new: PodInfo, old: PodInfo) -> ActionType | None:
    return ActionType.UPDATE_POD_LABEL if dict(new.labels) != dict(old.labels) else None


def _scale_down(new: PodInfo, old: PodInfo) -> ActionType | None:
    new_requests = pod_requests(new.pod)
    for name, old_value in pod_requests(old.pod).items():
        new_value = new_requests.get(name)
        if new_value is None or math.ceil(old_value * 1000) > math.ceil(new_value * 1000):
            return ActionType.UPDATE_POD_SCALE_DOWN
    return None


def _scheduling_gates_eliminated(new: PodInfo, old: PodInfo) -> ActionType | None:
    if not new.scheduling_gates and old.scheduling_gates:
        return ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    return None


def _tolerations_change(new: PodInfo, old: PodInfo) -> ActionType | None:
    # The API only lets tolerations be added, so a length change is every change.
    return ActionType.UPDATE_POD_TOLERATIONS if len(new.tolerations) != len(old.tolerations) else None


def _generated_resource_claim_change(new: PodInfo, old: PodInfo) -> ActionType | None:
    new_status: Mapping[str, Any] = new.pod.get("status") or {}
    old_status: Mapping[str, Any] = old.pod.get("status") or {}
    for field in ("resourceClaimStatuses", "extendedResourceClaimStatus"):
        if (new_status.get(field) or None) != (old_status.get(field) or None):
            return ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM
    return None
