"""Which events a pod update raises, and which pending pods an assigned pod may unblock.

Upstream: ``PodSchedulingPropertiesChange`` in ``pkg/scheduler/framework/events.go`` and
``getUnschedulablePodsWithCrossTopologyTerm`` in ``pkg/scheduler/backend/queue/scheduling_queue.go``
with the affinity-term matching of ``pkg/scheduler/framework/types.go`` (``AffinityTerm.Matches``,
``newAffinityTerm``, ``getNamespacesFromPodAffinityTerm``).

An update of a pod raises one event per changed property (labels, request scale-down,
scheduling gates all removed, tolerations added, generated resource claims), or a plain
update when none changed; the resource is the pod itself (``Pod``) while it is unscheduled
and ``AssignedPod`` once it has a node. In-place resize (status resources) is not
considered: requests come from the spec.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from scheduler_core.framework import ActionType, ClusterEvent, EventResource, PodInfo, pod_requests
from scheduler_core.framework.labels import EQUALS, IN
from scheduler_core.plugins.names import POD_TOPOLOGY_SPREAD

NamespaceLabels = Callable[[str], Mapping[str, str]]


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
    return [ClusterEvent(resource, action) for action in actions]


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


def may_unblock(
    pending: PodInfo, unschedulable_plugins: set[str], assigned: PodInfo, ns_labels: Mapping[str, str]
) -> bool:
    """Whether ``assigned`` (added to or updated on a node) may make ``pending`` schedulable:
    PodTopologySpread rejected it in the same namespace, or one of its required affinity
    terms (upstream ``PodInfo.RequiredAffinityTerms``, empty when they do not parse) matches
    ``assigned``."""
    if POD_TOPOLOGY_SPREAD in unschedulable_plugins and assigned.namespace == pending.namespace:
        return True
    return any(term.matches(assigned, ns_labels) for term in pending.affinity_terms.required_affinity)


# The keys :func:`unblock_keys` files a pending pod under, and :func:`assigned_keys` looks up.
ANY_ASSIGNED: Hashable = ("any",)


def unblock_keys(pending: PodInfo, unschedulable_plugins: set[str]) -> set[Hashable]:
    """Keys such that :func:`may_unblock` can be true for ``pending`` only if ``assigned`` has
    one of them among :func:`assigned_keys`: its namespace when PodTopologySpread rejected it;
    per required affinity term, one label (key, value) its selector requires, or
    :data:`ANY_ASSIGNED` when the selector requires no particular value. A term that selects
    nothing needs no key."""
    keys: set[Hashable] = set()
    if POD_TOPOLOGY_SPREAD in unschedulable_plugins:
        keys.add(("namespace", pending.namespace))
    for term in pending.affinity_terms.required_affinity:
        selector = term.selector
        if selector.nothing:
            continue
        required = next((r for r in selector.requirements if r.operator in (EQUALS, IN)), None)
        if required is None:
            keys.add(ANY_ASSIGNED)
        else:
            keys.update(("label", required.key, value) for value in required.values)
    return keys


def assigned_keys(assigned: PodInfo) -> list[Hashable]:
    """The keys under which :func:`unblock_keys` filed the pending pods ``assigned`` may unblock."""
    return [
        ANY_ASSIGNED,
        ("namespace", assigned.namespace),
        *(("label", key, value) for key, value in assigned.labels.items()),
    ]
