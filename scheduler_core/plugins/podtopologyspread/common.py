"""Spread constraints as the plugin uses them.

Upstream (k8s.io/kubernetes v1.36.3) ``pkg/scheduler/framework/plugins/podtopologyspread/common.go``,
with v1.36's feature gates: NodeInclusionPolicyInPodTopologySpread is GA
(``nodeAffinityPolicy``/``nodeTaintsPolicy`` always apply: Honor and Ignore when unset) and
MatchLabelKeysInPodTopologySpread is on (the pod's values of ``matchLabelKeys`` are added to
the selector, as the scheduler does even when the API server already merged them).

A pod's own constraints are parsed once and memoised on the pod; default constraints depend
on the Services and controllers selecting the pod (:mod:`.defaults`), so they are built per
cycle. Counting matching pods lives in :mod:`.counting`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from scheduler_core.framework import (
    Manifest,
    NodeInfo,
    PodInfo,
    manifest,
    node_selector,
)
from scheduler_core.framework import labels as labelselector
from scheduler_core.framework.labels import Selector
from scheduler_core.framework.types import find_untolerated_taint

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"

# plugin.go systemDefaultConstraints, in upstream's order (scores add up in this order).
SYSTEM_DEFAULT_CONSTRAINTS: tuple[Manifest, ...] = (
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)


@dataclass(frozen=True, slots=True)
class Constraint:
    """``topologySpreadConstraint``: a ``v1.TopologySpreadConstraint`` with its selector parsed."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    def with_selector(self, selector: Selector) -> Constraint:
        return Constraint(
            self.max_skew,
            self.topology_key,
            selector,
            self.min_domains,
            self.node_affinity_policy,
            self.node_taints_policy,
        )

    def match_node_inclusion_policies(
        self, pod: PodInfo, info: NodeInfo, required: node_selector.RequiredNodeAffinity
    ) -> bool:
        """``matchNodeInclusionPolicies``: Honor means the node must pass the pod's required
        node affinity (parse errors are no match) / tolerate its NoSchedule/NoExecute taints."""
        if self.node_affinity_policy == HONOR and not required.match(info.labels, info.name):
            return False
        return not (
            self.node_taints_policy == HONOR and find_untolerated_taint(info.taints, pod.tolerations) is not None
        )


def pod_constraints_raw(pod: PodInfo) -> Sequence[Manifest]:
    return manifest.spec(pod.pod).get("topologySpreadConstraints") or ()


def filter_constraints(raw: Iterable[Manifest], pod_labels: Mapping[str, str], action: str) -> list[Constraint]:
    """``filterTopologySpreadConstraints``: the constraints with ``whenUnsatisfiable ==
    action``; raises :class:`~scheduler_core.framework.labels.SelectorError`."""
    result: list[Constraint] = []
    for c in raw:
        if c.get("whenUnsatisfiable") != action:
            continue
        selector = labelselector.parse(c.get("labelSelector"))
        keys = c.get("matchLabelKeys") or ()
        match_labels = {key: pod_labels[key] for key in keys if key in pod_labels}
        if match_labels and not selector.nothing:
            # mergeLabelSetWithSelector: Nothing has no requirements to merge and stays Nothing.
            selector = labelselector.from_set(match_labels).add(selector.requirements)
        min_domains = c.get("minDomains")
        affinity_policy = c.get("nodeAffinityPolicy")
        taints_policy = c.get("nodeTaintsPolicy")
        result.append(
            Constraint(
                max_skew=int(c.get("maxSkew") or 0),
                topology_key=str(c.get("topologyKey") or ""),
                selector=selector,
                min_domains=1 if min_domains is None else int(min_domains),
                # Unset policies are Honor (affinity) and Ignore (taints); a set one is taken as is.
                node_affinity_policy=HONOR if affinity_policy is None else str(affinity_policy),
                node_taints_policy=IGNORE if taints_policy is None else str(taints_policy),
            )
        )
    return result


def own_constraints(pod: PodInfo, action: str) -> list[Constraint]:
    """The pod's own constraints for ``action``, memoised on the pod (errors too)."""
    memos = pod.spread_constraints
    if memos is None:
        memos = pod.spread_constraints = {}
    memo = memos.get(action)
    if memo is None:
        try:
            memo = tuple(filter_constraints(pod_constraints_raw(pod), pod.labels, action))
        except labelselector.SelectorError as error:
            memo = error
        memos[action] = memo
    if isinstance(memo, labelselector.SelectorError):
        raise memo
    return cast(list[Constraint], list(memo))


def node_labels_match(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    """``nodeLabelsMatchSpreadConstraints``: the node has every topology key."""
    for c in constraints:  # noqa: SIM110 - a hot path: no generator
        if c.topology_key not in labels:
            return False
    return True


def pod_labels_match(constraints: Sequence[Constraint], labels: Mapping[str, str]) -> bool:
    """``podLabelsMatchSpreadConstraints``: any constraint's selector matches."""
    return any(c.selector.matches(labels) for c in constraints)
