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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler_core.framework import ActionType, ClusterEvent, EventResource, PodInfo, pod_requests
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


# Label selectors (k8s.io/apimachinery metav1.LabelSelectorAsSelector): None selects nothing.
@dataclass(frozen=True, slots=True)
class _Requirement:
    key: str
    operator: str
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        if self.operator == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == "Exists":
            return self.key in labels
        if self.operator == "DoesNotExist":
            return self.key not in labels
        return False


def _selector(raw: Mapping[str, Any] | None) -> tuple[_Requirement, ...] | None:
    if raw is None:
        return None
    reqs = [_Requirement(k, "In", frozenset({v})) for k, v in (raw.get("matchLabels") or {}).items()]
    reqs += [
        _Requirement(e["key"], e["operator"], frozenset(e.get("values") or ()))
        for e in raw.get("matchExpressions") or ()
    ]
    return tuple(reqs)


def _selects(selector: tuple[_Requirement, ...] | None, labels: Mapping[str, str]) -> bool:
    return selector is not None and all(r.matches(labels) for r in selector)


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    namespaces: frozenset[str]
    selector: tuple[_Requirement, ...] | None
    namespace_selector: tuple[_Requirement, ...] | None

    def matches(self, pod: PodInfo, ns_labels: Mapping[str, str]) -> bool:
        if pod.namespace in self.namespaces or _selects(self.namespace_selector, ns_labels):
            return _selects(self.selector, pod.labels)
        return False


def required_affinity_terms(pod: PodInfo) -> list[AffinityTerm]:
    """The pod's required pod-affinity terms (not anti-affinity), parsed as upstream."""
    affinity = pod.affinity.get("podAffinity") or {}
    terms: list[AffinityTerm] = []
    for raw in affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or ():
        # matchLabelKeys/mismatchLabelKeys are merged into labelSelector by the API server.
        selector = _selector(raw.get("labelSelector"))
        ns_raw = raw.get("namespaceSelector")
        namespaces = raw.get("namespaces") or ()
        if not namespaces and ns_raw is None:
            namespaces = (pod.namespace,)
        terms.append(AffinityTerm(frozenset(namespaces), selector, _selector(ns_raw)))
    return terms


_TERMS_KEY = "queue.required_affinity_terms"


def cached_required_affinity_terms(pod: PodInfo) -> list[AffinityTerm]:
    terms = pod.extra.get(_TERMS_KEY)
    if terms is None:
        terms = pod.extra[_TERMS_KEY] = required_affinity_terms(pod)
    return list(terms)


def may_unblock(
    pending: PodInfo, unschedulable_plugins: set[str], assigned: PodInfo, ns_labels: Mapping[str, str]
) -> bool:
    """Whether ``assigned`` (added to or updated on a node) may make ``pending`` schedulable:
    PodTopologySpread rejected it in the same namespace, or one of its required affinity
    terms matches ``assigned``."""
    if POD_TOPOLOGY_SPREAD in unschedulable_plugins and assigned.namespace == pending.namespace:
        return True
    return any(term.matches(assigned, ns_labels) for term in cached_required_affinity_terms(pending))
