"""Spread constraints as the plugin uses them, and what Filter and Score share.

Upstream (k8s.io/kubernetes v1.36.3) ``pkg/scheduler/framework/plugins/podtopologyspread/common.go``
and ``plugins/helper/spread.go``, with v1.36's feature gates: NodeInclusionPolicyInPodTopologySpread
is GA (``nodeAffinityPolicy``/``nodeTaintsPolicy`` always apply: Honor and Ignore when unset)
and MatchLabelKeysInPodTopologySpread is on (the pod's values of ``matchLabelKeys`` are added
to the selector, as the scheduler does even when the API server already merged them).

A pod's own constraints are parsed once and memoised on the pod; default constraints depend
on the Services and controllers selecting the pod, so they are built per cycle. Counting the
pods a selector matches on a node is the costly part of PreFilter and PreScore; the
:class:`MatchCounter` remembers each node's count per (namespace, selector) until the node's
generation changes (every pod added to or removed from a node bumps it).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scheduler_core.framework import (
    NO_EXECUTE,
    NO_SCHEDULE,
    BoolArray,
    IntArray,
    NodeColumns,
    NodeInfo,
    PodInfo,
    Taint,
    Toleration,
    tolerations_tolerate_taint,
)
from scheduler_core.plugins import labelselector
from scheduler_core.plugins.labelselector import Selector
from scheduler_core.plugins.nodeaffinity import selector as node_selector

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"

# plugin.go systemDefaultConstraints, in upstream's order (scores add up in this order).
SYSTEM_DEFAULT_CONSTRAINTS: tuple[Mapping[str, Any], ...] = (
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)

_MEMO = "podtopologyspread.constraints."


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
        return not (self.node_taints_policy == HONOR and has_untolerated_taint(info.taints, pod.tolerations))


def has_untolerated_taint(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> bool:
    """``FindMatchingUntoleratedTaint`` with ``DoNotScheduleTaintsFilterFunc`` found one."""
    return any(
        taint.effect in (NO_SCHEDULE, NO_EXECUTE) and not tolerations_tolerate_taint(tolerations, taint)
        for taint in taints
    )


def pod_constraints_raw(pod: PodInfo) -> Sequence[Mapping[str, Any]]:
    return ((pod.pod.get("spec") or {}).get("topologySpreadConstraints")) or ()


def filter_constraints(
    raw: Iterable[Mapping[str, Any]], pod_labels: Mapping[str, str], action: str
) -> list[Constraint]:
    """``filterTopologySpreadConstraints``: the constraints with ``whenUnsatisfiable ==
    action``; raises :class:`~scheduler_core.plugins.labelselector.SelectorError`."""
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
        result.append(
            Constraint(
                max_skew=int(c.get("maxSkew") or 0),
                topology_key=str(c.get("topologyKey") or ""),
                selector=selector,
                min_domains=1 if min_domains is None else int(min_domains),
                node_affinity_policy=c.get("nodeAffinityPolicy") or HONOR,
                node_taints_policy=c.get("nodeTaintsPolicy") or IGNORE,
            )
        )
    return result


def own_constraints(pod: PodInfo, action: str) -> list[Constraint]:
    """The pod's own constraints for ``action``, memoised on the pod (errors too)."""
    key = _MEMO + action
    memo = pod.extra.get(key)
    if memo is None:
        try:
            memo = tuple(filter_constraints(pod_constraints_raw(pod), pod.labels, action))
        except labelselector.SelectorError as error:
            memo = error
        pod.extra[key] = memo
    if isinstance(memo, labelselector.SelectorError):
        raise memo
    return list(memo)


def node_labels_match(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    """``nodeLabelsMatchSpreadConstraints``: the node has every topology key."""
    for c in constraints:  # noqa: SIM110 - a hot path: no generator
        if c.topology_key not in labels:
            return False
    return True


def pod_labels_match(constraints: Sequence[Constraint], labels: Mapping[str, str]) -> bool:
    """``podLabelsMatchSpreadConstraints``: any constraint's selector matches."""
    return any(c.selector.matches(labels) for c in constraints)


def count_pods_match_selector(pods: Iterable[PodInfo], selector: Selector, namespace: str) -> int:
    """``countPodsMatchSelector``: pods of ``namespace``, not terminating, that the selector
    matches; an empty selector counts none."""
    if selector.empty():
        return 0
    count = 0
    for p in pods:
        if p.deletion_timestamp is None and p.namespace == namespace and selector.matches(p.labels):
            count += 1
    return count


class MatchCounter:
    """:func:`count_pods_match_selector` per node, memoised per node generation.

    A NodeInfo's generation changes whenever a pod is added to or removed from it (and a pod
    update is a remove and an add), so a memoised count is reused only for the same pods.
    The most recently used ``max_selectors`` (namespace, selector) pairs are kept.
    """

    def __init__(self, max_selectors: int = 64) -> None:
        self._max = max_selectors
        self._by_selector: OrderedDict[tuple[str, Selector], dict[str, tuple[int, int]]] = OrderedDict()

    def counts_for(self, selector: Selector, namespace: str) -> dict[str, tuple[int, int]]:
        key = (namespace, selector)
        memo = self._by_selector.get(key)
        if memo is None:
            memo = self._by_selector[key] = {}
            if len(self._by_selector) > self._max:
                self._by_selector.popitem(last=False)
        else:
            self._by_selector.move_to_end(key)
        return memo

    @staticmethod
    def count(memo: dict[str, tuple[int, int]], info: NodeInfo, selector: Selector, namespace: str) -> int:
        entry = memo.get(info.name)
        if entry is not None and entry[0] == info.generation:
            return entry[1]
        n = count_pods_match_selector(info.pods, selector, namespace)
        memo[info.name] = (info.generation, n)
        return n


def generations(columns: NodeColumns) -> IntArray:
    """The generation of each row's NodeInfo (changed by every pod added or removed)."""
    return np.fromiter((info.generation for info in columns.infos), dtype=np.int64, count=columns.size)


class RowCounter:
    """:func:`count_pods_match_selector` for every row of a snapshot's columns at once,
    memoised per (namespace, selector): only rows whose NodeInfo generation changed since
    the last call are counted again. The most recent ``max_selectors`` pairs are kept."""

    def __init__(self, max_selectors: int = 64) -> None:
        self._max = max_selectors
        self._memo: OrderedDict[tuple[str, Selector], tuple[weakref.ref[NodeColumns], IntArray, IntArray]] = (
            OrderedDict()
        )

    def counts(self, columns: NodeColumns, gens: IntArray, selector: Selector, namespace: str) -> IntArray:
        """Matching pods per row (read-only); ``gens`` is :func:`generations` of ``columns``."""
        if selector.empty():
            return np.zeros(columns.size, dtype=np.int64)
        key = (namespace, selector)
        infos = columns.infos
        entry = self._memo.get(key)
        if entry is None or entry[0]() is not columns or len(entry[1]) != columns.size:
            counts = np.fromiter(
                (count_pods_match_selector(info.pods, selector, namespace) for info in infos),
                dtype=np.int64,
                count=columns.size,
            )
            self._memo[key] = (weakref.ref(columns), gens.copy(), counts)
            if len(self._memo) > self._max:
                self._memo.popitem(last=False)
            return counts
        self._memo.move_to_end(key)
        _, seen, counts = entry
        for row in np.flatnonzero(seen != gens).tolist():
            counts[row] = count_pods_match_selector(infos[row].pods, selector, namespace)
            seen[row] = gens[row]
        return counts


class InclusionMasks:
    """Per-cycle masks over the columns for the node inclusion policies of one pod: the nodes
    passing its required node affinity, and those with a NoSchedule/NoExecute taint it does
    not tolerate. Built on first use."""

    def __init__(self, pod: PodInfo, columns: NodeColumns) -> None:
        self._pod = pod
        self._columns = columns
        self._affinity: BoolArray | None = None
        self._untolerated: BoolArray | None = None

    def eligible(self, constraint: Constraint, base: BoolArray) -> BoolArray:
        """``base`` narrowed to the rows passing ``constraint``'s inclusion policies."""
        mask = base
        if constraint.node_affinity_policy == HONOR:
            if self._affinity is None:
                self._affinity = node_selector.required_node_affinity(self._pod).mask(self._columns)
            mask = mask & self._affinity
        if constraint.node_taints_policy == HONOR:
            if self._untolerated is None:
                taints = self._columns.taints()
                bad = [
                    j
                    for j, taint in enumerate(taints.taints)
                    if taint.effect in (NO_SCHEDULE, NO_EXECUTE)
                    and not tolerations_tolerate_taint(self._pod.tolerations, taint)
                ]
                self._untolerated = taints.matrix[:, bad].any(axis=1) if bad else np.zeros(self._columns.size, np.bool_)
            mask = mask & ~self._untolerated
        return mask


def all_keys_present(columns: NodeColumns, constraints: Sequence[Constraint]) -> BoolArray:
    """:func:`node_labels_match` for every row."""
    mask = np.ones(columns.size, dtype=np.bool_)
    for c in constraints:
        mask &= columns.label(c.topology_key).present()
    return mask


def sum_by_value(columns: NodeColumns, key: str, rows: BoolArray, counts: IntArray) -> dict[str, int]:
    """``{label value: sum of counts}`` over the ``rows`` having ``key`` (all of them must)."""
    column = columns.label(key)
    codes = column.codes[rows]
    size = len(column.vocab)
    present = np.bincount(codes, minlength=size) > 0
    # Exact: counts are far below 2**53.
    sums = np.bincount(codes, weights=counts[rows].astype(np.float64), minlength=size)
    values = list(column.vocab)  # codes are given in insertion order
    return {values[code]: int(sums[code]) for code in np.flatnonzero(present).tolist()}


# -- default constraints (plugins/helper/spread.go) -------------------------------------

_RC = ("", "v1", "ReplicationController")
_RS = ("apps", "v1", "ReplicaSet")
_SS = ("apps", "v1", "StatefulSet")


def _namespace_of(obj: Mapping[str, Any]) -> str:
    return (obj.get("metadata") or {}).get("namespace") or "default"


def _name_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _parse_group_version(api_version: str) -> tuple[str, str] | None:
    """``schema.ParseGroupVersion``: "" is the empty version, "v1" the core group, "g/v" a
    group; more slashes are an error (``None``)."""
    if not api_version:
        return "", ""
    parts = api_version.split("/")
    if len(parts) == 1:
        return "", api_version
    if len(parts) == 2:
        return parts[0], parts[1]
    return None


def controller_of(pod: PodInfo) -> Mapping[str, Any] | None:
    """``metav1.GetControllerOfNoCopy``: the owner reference with ``controller: true``."""
    for ref in (pod.pod.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def default_selector(pod: PodInfo, objects: Any) -> Selector:
    """``helper.DefaultSelector``: the selectors of the Services selecting the pod, and of the
    ReplicationController, ReplicaSet or StatefulSet controlling it, ANDed. ``objects`` is
    ``Handle.objects``."""
    label_set: dict[str, str] = {}
    for service in objects("Service"):
        if _namespace_of(service) != pod.namespace:
            continue
        selector = (service.get("spec") or {}).get("selector")
        # Services with a nil selector match nothing, not everything.
        if selector is not None and labelselector.set_matches(selector, pod.labels):
            label_set.update(selector)
    result = labelselector.from_set(label_set)
    owner = controller_of(pod)
    if owner is None:
        return result
    group_version = _parse_group_version(str(owner.get("apiVersion") or ""))
    if group_version is None:
        return result
    kind = (*group_version, str(owner.get("kind") or ""))
    name = str(owner.get("name") or "")
    if kind == _RC:
        rc = _find(objects("ReplicationController"), pod.namespace, name)
        if rc is not None:
            label_set.update((rc.get("spec") or {}).get("selector") or {})
            result = labelselector.from_set(label_set)
    elif kind in (_RS, _SS):
        controller = _find(objects(kind[2]), pod.namespace, name)
        if controller is not None:
            try:
                other = labelselector.parse((controller.get("spec") or {}).get("selector"))
            except labelselector.SelectorError:
                return result
            # Nothing has no requirements to add (Requirements() is not ok).
            result = result.add(other.requirements)
    return result


def _find(objects: Iterable[Mapping[str, Any]], namespace: str, name: str) -> Mapping[str, Any] | None:
    for obj in objects:
        if _namespace_of(obj) == namespace and _name_of(obj) == name:
            return obj
    return None
