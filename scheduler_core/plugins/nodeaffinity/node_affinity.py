"""NodeAffinity: a pod's ``nodeSelector`` and node affinity, plus scheduler-enforced affinity.

Upstream: ``pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go``. PreFilter
parses the pod's required affinity once (Skip when the pod has none and no ``addedAffinity``
is configured) and narrows the cycle to the nodes named by ``metadata.name`` In-fields;
Filter rejects a node that fails the added affinity or the pod's own, as
UnschedulableAndUnresolvable (preemption cannot change labels). PreScore/Score sum the
weights of the matching preferred terms (the pod's and the added ones); NormalizeScore
scales them to 0..100. The matching itself lives in :mod:`.selector`, shared with
PodTopologySpread.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scheduler_core.framework import (
    ActionType,
    BoolArray,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    EventObject,
    EventResource,
    Handle,
    IntArray,
    NodeColumns,
    NodeInfo,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Status,
    manifest,
)
from scheduler_core.framework import node_selector as selector
from scheduler_core.framework.args import PluginArgs
from scheduler_core.framework.helpers import DefaultNormalizeScore
from scheduler_core.plugins import names

NAME = names.NODE_AFFINITY
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"


# -- args (k8s.io/kube-scheduler/config/v1 NodeAffinityArgs; addedAffinity is a v1.NodeAffinity) --


class NodeSelectorRequirement(PluginArgs):
    key: str
    operator: str
    values: list[str] | None = None


class NodeSelectorTerm(PluginArgs):
    match_expressions: list[NodeSelectorRequirement] | None = None
    match_fields: list[NodeSelectorRequirement] | None = None


class NodeSelectorSpec(PluginArgs):
    node_selector_terms: list[NodeSelectorTerm] = []


class PreferredSchedulingTerm(PluginArgs):
    weight: int
    preference: NodeSelectorTerm


class NodeAffinitySpec(PluginArgs):
    required_during_scheduling_ignored_during_execution: NodeSelectorSpec | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = None


class NodeAffinityArgs(PluginArgs):
    """``addedAffinity`` is applied to every pod the profile schedules."""

    added_affinity: NodeAffinitySpec | None = None

    def validation_errors(self) -> list[str]:
        """``ValidateNodeAffinityArgs`` (pkg/scheduler/apis/config/validation/validation_pluginargs.go)."""
        return _parse_added(self)[2]


def _parse_added(
    args: NodeAffinityArgs,
) -> tuple[selector.NodeSelector | None, selector.PreferredTerms | None, list[str]]:
    added = args.added_affinity
    if added is None:
        return None, None, []
    raw: dict[str, Any] = added.model_dump(by_alias=True, exclude_none=True)
    errors: list[str] = []
    required = None
    preferred = None
    if "requiredDuringSchedulingIgnoredDuringExecution" in raw:
        path = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        required = selector.parse_node_selector(raw["requiredDuringSchedulingIgnoredDuringExecution"], path)
        errors.extend(str(error) for error in required.errors)
    terms = raw.get("preferredDuringSchedulingIgnoredDuringExecution")
    if terms:
        path = "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution"
        try:
            preferred = selector.parse_preferred_terms(terms, path)
        except selector.SelectorError as error:
            errors.append(str(error))
    return required, preferred, errors


# -- cycle state ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    required: selector.RequiredNodeAffinity

    def clone(self) -> _PreFilterState:
        return self  # not affected by pod additions or removals


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    preferred: selector.PreferredTerms | None

    def clone(self) -> _PreScoreState:
        return self


class NodeAffinity(DefaultNormalizeScore):
    name = NAME
    args_model = NodeAffinityArgs

    def __init__(self, args: NodeAffinityArgs | None, handle: Handle | None) -> None:
        self._handle = handle
        self._added_selector, self._added_preferred, _ = _parse_added(args or NodeAffinityArgs())
        self._added_mask_cache: tuple[weakref.ref[NodeColumns], int, BoolArray] | None = None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # With queueing hints there is no preCheck, so Add | UpdateNodeLabel is enough.
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self._is_schedulable_after_node_change,
            )
        ]

    def _is_schedulable_after_node_change(self, pod: PodInfo, old: EventObject, new: EventObject) -> QueueingHint:
        modified = NodeInfo.of(new)
        original = NodeInfo.of_optional(old)
        if self._added_selector is not None and not self._added_selector.match(modified.labels, modified.name):
            return QueueingHint.SKIP
        required = selector.required_node_affinity(pod)
        try:
            if not required.match_or_error(modified.labels, modified.name):
                return QueueingHint.SKIP
            if original is None:
                return QueueingHint.QUEUE
            # An update queues the pod only when it turns the node from unmatched to matched.
            was_matched = required.match_or_error(original.labels, original.name)
        except selector.SelectorError:
            return QueueingHint.QUEUE  # upstream: (Queue, err)
        return QueueingHint.SKIP if was_matched else QueueingHint.QUEUE

    # -- PreFilter / Filter ----------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        node_affinity = pod.affinity.get("nodeAffinity") or {}
        required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        has_node_selector = manifest.spec(pod.pod).get("nodeSelector") is not None
        if required is None and self._added_selector is None and not has_node_selector:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(selector.required_node_affinity(pod)))
        terms = (required or {}).get("nodeSelectorTerms") or []
        if not terms:
            return None, None
        # Affinity to specific nodes by name narrows the cycle to them (terms are ORed,
        # metadata.name In-requirements within a term ANDed).
        node_names: set[str] | None = None
        for term in terms:
            term_names: set[str] | None = None
            for requirement in (term or {}).get("matchFields") or ():
                if requirement.get("key") == selector.NODE_NAME_FIELD and requirement.get("operator") == selector.IN:
                    values = {str(x) for x in requirement.get("values") or ()}
                    term_names = values if term_names is None else term_names & values
            if term_names is None:
                return None, None  # this term may match any node
            node_names = term_names if node_names is None else node_names | term_names
        if node_names is not None and not node_names:
            return None, Status.unresolvable(ERR_REASON_CONFLICT)
        if node_names:
            return PreFilterResult(frozenset(node_names)), None
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if self._added_selector is not None and not self._added_selector.match(node.labels, node.name):
            return Status.unresolvable(ERR_REASON_ENFORCED)
        if not self._required(state, pod).match(node.labels, node.name):
            return Status.unresolvable(ERR_REASON_POD)
        return None

    def filter_batch(self, state: CycleState, pod: PodInfo, columns: NodeColumns) -> BoolArray | None:
        mask = self._required(state, pod).mask(columns)
        added = self._added_mask(columns)
        if added is not None:
            mask &= added
        return mask

    def filter_batch_rejection(self, state: CycleState, pod: PodInfo) -> Status | None:
        # With an added selector, which of the two a node fails depends on the node.
        return Status.unresolvable(ERR_REASON_POD) if self._added_selector is None else None

    def _required(self, state: CycleState, pod: PodInfo) -> selector.RequiredNodeAffinity:
        data = _pre_filter_state(state)
        # Without PreFilter (disabled), compute it here, as upstream does.
        return data.required if data is not None else selector.required_node_affinity(pod)

    def _added_mask(self, columns: NodeColumns) -> BoolArray | None:
        """The added selector's mask, cached until the columns change."""
        if self._added_selector is None:
            return None
        cached = self._added_mask_cache
        if cached is not None and cached[0]() is columns and cached[1] == columns.version:
            return cached[2]
        mask = self._added_selector.mask(columns)
        self._added_mask_cache = (weakref.ref(columns), columns.version, mask)
        return mask

    # -- PreScore / Score ------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        try:
            preferred = selector.preferred_node_affinity(pod)
        except selector.SelectorError as error:
            return Status.as_error(error)
        if preferred is None and self._added_preferred is None:
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(preferred))
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        count = 0
        if self._added_preferred is not None:
            count += self._added_preferred.score(node.labels, node.name)
        try:
            preferred = self._preferred(state, pod)
        except selector.SelectorError as error:
            return 0, Status.as_error(error)
        if preferred is not None:
            count += preferred.score(node.labels, node.name)
        return count, None

    def score_batch(self, state: CycleState, pod: PodInfo, columns: NodeColumns, rows: IntArray) -> IntArray | None:
        try:
            preferred = self._preferred(state, pod)
        except selector.SelectorError:
            return None  # the per-node form reports the error
        total = np.zeros(len(rows), dtype=np.int64)
        if self._added_preferred is not None:
            total += self._added_preferred.scores(columns)[rows]
        if preferred is not None:
            total += preferred.scores(columns)[rows]
        return total

    def _preferred(self, state: CycleState, pod: PodInfo) -> selector.PreferredTerms | None:
        data = _pre_score_state(state)
        return data.preferred if data is not None else selector.preferred_node_affinity(pod)


def _pre_filter_state(state: CycleState) -> _PreFilterState | None:
    return state.read_optional(PRE_FILTER_STATE_KEY, _PreFilterState)


def _pre_score_state(state: CycleState) -> _PreScoreState | None:
    return state.read_optional(PRE_SCORE_STATE_KEY, _PreScoreState)
