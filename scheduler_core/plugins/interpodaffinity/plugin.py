"""InterPodAffinity: required and preferred pod affinity and anti-affinity.

Upstream (k8s.io/kubernetes v1.36.3): ``pkg/scheduler/framework/plugins/interpodaffinity/``
``plugin.go`` (args, events and queueing hints), ``filtering.go`` (PreFilter, AddPod/RemovePod,
Filter: see :mod:`.filtering`) and ``scoring.go`` (PreScore, Score, NormalizeScore: see
:mod:`.scoring`); terms as ``pkg/scheduler/framework/types.go`` parses them (:mod:`scheduler_core.framework.affinity`).

Cost: PreFilter skips at once for a pod without required terms when no existing pod has
required anti-affinity; PreScore skips for a pod without preferred terms when no existing pod
has (anti-)affinity. Namespace labels (``handle.objects("Namespace")``) are read only past
those checks. Past them, the sums come from a :class:`~.index.PodIndex` kept between cycles
instead of a walk over every pod, and Filter and Score have batch forms over the snapshot's
label columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import field_validator

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
    NodeScore,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Status,
    field,
)
from scheduler_core.framework import affinity as terms
from scheduler_core.framework.args import PluginArgs
from scheduler_core.plugins import names
from scheduler_core.plugins.interpodaffinity import filtering, scoring
from scheduler_core.plugins.interpodaffinity.filtering import PreFilterState
from scheduler_core.plugins.interpodaffinity.index import PodIndex
from scheduler_core.plugins.interpodaffinity.scoring import PreScoreState

NAME = names.INTER_POD_AFFINITY
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

# Pod: Add (a pod matching the affinity appears), UpdatePodLabel, Delete (a repelling pod
# leaves). Node: Add | UpdateNodeLabel (with queueing hints there is no preCheck, so
# UpdateNodeTaint is not needed).
POD_ACTIONS = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
NODE_ACTIONS = ActionType.ADD | ActionType.UPDATE_NODE_LABEL

_MIN_HARD_POD_AFFINITY_WEIGHT = 0
_MAX_HARD_POD_AFFINITY_WEIGHT = 100


class InterPodAffinityArgs(PluginArgs):
    """``InterPodAffinityArgs`` (k8s.io/kube-scheduler/config/v1); defaults from
    ``SetDefaults_InterPodAffinityArgs``, validation from ``ValidateInterPodAffinityArgs``."""

    NULL_IS_DEFAULT = True

    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False

    @field_validator("hard_pod_affinity_weight")
    @classmethod
    def _weight_in_range(cls, value: int) -> int:
        if not _MIN_HARD_POD_AFFINITY_WEIGHT <= value <= _MAX_HARD_POD_AFFINITY_WEIGHT:
            detail = f"not in valid range [{_MIN_HARD_POD_AFFINITY_WEIGHT}, {_MAX_HARD_POD_AFFINITY_WEIGHT}]"
            raise ValueError(str(field.invalid("hardPodAffinityWeight", value, detail)))
        return value


def _node_labels(obj: object) -> Mapping[str, str] | None:
    node = NodeInfo.of_optional(obj)
    return None if node is None else node.labels


def _unscheduled(pod: PodInfo | None) -> bool:
    return pod is not None and not pod.node_name and not pod.nominated_node_name


class InterPodAffinity:
    name = NAME
    args_model = InterPodAffinityArgs

    def __init__(self, args: InterPodAffinityArgs | None, handle: Handle) -> None:
        self._args = args or InterPodAffinityArgs()
        self._handle = handle
        self._index = PodIndex()
        self._pod_event: tuple[EventObject, EventObject, PodInfo | None, PodInfo | None, bool] | None = None

    # -- EnqueueExtensions ----------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Upstream's Pod resource covers assigned and unscheduled pods: both are registered.
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.ASSIGNED_POD, POD_ACTIONS), self.is_schedulable_after_pod_change
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.POD, POD_ACTIONS), self.is_schedulable_after_pod_change),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, NODE_ACTIONS), self.is_schedulable_after_node_change),
        ]

    def is_schedulable_after_pod_change(self, pod: PodInfo, old: EventObject, new: EventObject) -> QueueingHint:
        """``isSchedulableAfterPodChange``; an unparsable term raises (the queue then queues)."""
        seen = self._pod_event
        if seen is not None and seen[0] is old and seen[1] is new:
            _, _, original, modified, unscheduled = seen
        else:
            # Asked for every pending pod on the same event: what the event alone decides is
            # worked out once (the memo holds old and new, so identity cannot be reused).
            original, modified = PodInfo.of_optional(old), PodInfo.of_optional(new)
            unscheduled = _unscheduled(modified) or _unscheduled(original)
            self._pod_event = (old, new, original, modified, unscheduled)
        if modified is not None and original is not None and pod.uid == modified.uid:
            return QueueingHint.QUEUE  # the pod's own labels changed
        # A change of nodeName or nominatedNodeName comes as Add/Delete.
        if unscheduled:
            return QueueingHint.SKIP
        parsed = terms.pod_terms(pod)
        affinity = parsed.checked_required_affinity()
        anti = parsed.checked_required_anti_affinity()
        # One existing pod must match all the affinity terms, so check them together.
        if modified is not None and original is not None:
            if not terms.matches_all(affinity, original) and terms.matches_all(affinity, modified):
                return QueueingHint.QUEUE
            if terms.matches_all(anti, original) and not terms.matches_all(anti, modified):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        if modified is not None:
            return QueueingHint.QUEUE if terms.matches_all(affinity, modified) else QueueingHint.SKIP
        if original is None:
            raise TypeError("pod event without a pod")
        if terms.matches_all(anti, original):
            return QueueingHint.QUEUE
        if terms.matches_all(terms.pod_terms(original).checked_required_anti_affinity(), pod):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_node_change(self, pod: PodInfo, old: EventObject, new: EventObject) -> QueueingHint:
        """``isSchedulableAfterNodeChange``: a node joins or changes a topology of the pod's terms."""
        original, modified = _node_labels(old), _node_labels(new)
        if modified is None:
            raise TypeError("node event without the new node")
        parsed = terms.pod_terms(pod)
        for term in parsed.checked_required_affinity():
            key = term.topology_key
            if original is None:
                if key in modified:
                    return QueueingHint.QUEUE
                continue
            if key not in original and key in modified:
                return QueueingHint.QUEUE
            if key in original and key in modified and original[key] != modified[key]:
                return QueueingHint.QUEUE
        for term in parsed.checked_required_anti_affinity():
            if original is None:
                # A node without the key always accepts the pod; one with it may join a free domain.
                return QueueingHint.QUEUE
            key = term.topology_key
            if key in original and key not in modified:
                return QueueingHint.QUEUE
            if key in original and key in modified and original[key] != modified[key]:
                return QueueingHint.QUEUE
        return QueueingHint.SKIP

    # -- PreFilter / AddPod / RemovePod / Filter --------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        parsed = terms.pod_terms(pod)
        error = parsed.error()
        if error is not None:
            return None, Status.unresolvable(f"parsing pod: {error}")
        snapshot = self._handle.snapshot()
        with_anti = snapshot.any_pods_with_required_anti_affinity()
        required = parsed.required_affinity
        required_anti = parsed.required_anti_affinity
        if not with_anti and not required and not required_anti:
            return None, Status.skip()  # no count can be non-zero: nothing to filter
        if terms.needs_namespaces(required) or terms.needs_namespaces(required_anti):
            namespaces = list(self._handle.objects("Namespace"))
            required = terms.merged_terms(required, namespaces)
            required_anti = terms.merged_terms(required_anti, namespaces)
        ns_labels = self._namespace_labels(pod)
        all_nodes = snapshot.list()
        index = self._index
        index.refresh(all_nodes)
        existing = index.existing_anti_affinity_counts(pod, ns_labels) if with_anti else {}
        if not existing and not required and not required_anti:
            return None, Status.skip()
        if nodes is all_nodes:
            affinity, anti = index.incoming_affinity_counts(required, required_anti)
        else:  # upstream counts over the nodes given to PreFilter
            affinity, anti = filtering.incoming_affinity_counts(required, required_anti, nodes)
        data = PreFilterState(
            existing, affinity, anti, pod, required, required_anti, ns_labels, terms.matches_all(required, pod)
        )
        state.write(PRE_FILTER_STATE_KEY, data)
        return None, None

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status | None:
        data = _pre_filter_state(state)
        if data is None:
            return _not_found("error reading", PRE_FILTER_STATE_KEY)
        data.update_with_pod(pod_to_add, node.labels, 1)
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status | None:
        data = _pre_filter_state(state)
        if data is None:
            return _not_found("error reading", PRE_FILTER_STATE_KEY)
        data.update_with_pod(pod_to_remove, node.labels, -1)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        data = _pre_filter_state(state)
        if data is None:
            return _not_found("error reading", PRE_FILTER_STATE_KEY)
        labels = node.labels
        if not filtering.satisfies_pod_affinity(data, labels):
            return Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
        if not filtering.satisfies_pod_anti_affinity(data, labels):
            return Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
        if not filtering.satisfies_existing_pods_anti_affinity(data, labels):
            return Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
        return None

    def filter_batch(self, state: CycleState, pod: PodInfo, columns: NodeColumns) -> BoolArray | None:
        data = _pre_filter_state(state)
        if data is None:
            return None  # the per-node form reports the missing state
        return filtering.filter_mask(data, columns)

    # -- PreScore / Score / NormalizeScore ------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        pod_affinity = pod.affinity.get("podAffinity") or {}
        pod_anti = pod.affinity.get("podAntiAffinity") or {}
        has_constraints = bool(pod_affinity.get(terms.PREFERRED)) or bool(pod_anti.get(terms.PREFERRED))
        if self._args.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return Status.skip()
        parsed = terms.pod_terms(pod)
        error = parsed.error()
        if error is not None:
            return Status.as_error(f"failed to parse pod: {error}")
        snapshot = self._handle.snapshot()
        # Unless the pod has preferred terms, only pods with affinity can contribute.
        if not (snapshot.list() if has_constraints else snapshot.any_pods_with_affinity()):
            return Status.skip()  # no node to visit (upstream: index == -1)
        preferred = parsed.preferred_affinity
        preferred_anti = parsed.preferred_anti_affinity
        if terms.needs_namespaces(w.term for w in (*preferred, *preferred_anti)):
            namespaces = list(self._handle.objects("Namespace"))
            preferred = terms.merged_weighted_terms(preferred, namespaces)
            preferred_anti = terms.merged_weighted_terms(preferred_anti, namespaces)
        ns_labels = self._namespace_labels(pod)
        self._index.refresh(snapshot.list())
        sink = scoring.ScoreSink()
        self._index.incoming_terms_scores(preferred, preferred_anti, sink)
        self._index.existing_terms_scores(pod, ns_labels, self._args.hard_pod_affinity_weight, sink)
        if not sink.hit:
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(sink.parts, pod, ns_labels))
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        data = _pre_score_state(state)
        if data is None:
            return 0, _not_found("failed to read", PRE_SCORE_STATE_KEY)
        return scoring.score(data, node.labels), None

    def score_batch(self, state: CycleState, pod: PodInfo, columns: NodeColumns, rows: IntArray) -> IntArray | None:
        data = _pre_score_state(state)
        if data is None:
            return None
        return scoring.score_rows(data, columns, rows)

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        data = _pre_score_state(state)
        if data is None:
            return _not_found("failed to read", PRE_SCORE_STATE_KEY)
        if not data.parts:
            return None
        for node_score, value in zip(scores, scoring.normalize([s.score for s in scores]), strict=True):
            node_score.score = value
        return None

    def normalize_score_batch(self, state: CycleState, pod: PodInfo, scores: IntArray) -> Status | None:
        data = _pre_score_state(state)
        if data is None:
            return _not_found("failed to read", PRE_SCORE_STATE_KEY)
        if data.parts:
            scoring.normalize_array(scores)
        return None

    # -- helpers --------------------------------------------------------------------------

    def _namespace_labels(self, pod: PodInfo) -> Mapping[str, str]:
        return dict(terms.namespace_labels(self._handle.objects("Namespace"), pod.namespace))


def _not_found(verb: str, key: str) -> Status:
    """Upstream's ``fmt.Errorf("%s %q from cycleState: %w", ..., fwk.ErrNotFound)``."""
    return Status.as_error(f'{verb} "{key}" from cycleState: not found')


def _pre_filter_state(state: CycleState) -> PreFilterState | None:
    return state.read_optional(PRE_FILTER_STATE_KEY, PreFilterState)


def _pre_score_state(state: CycleState) -> PreScoreState | None:
    return state.read_optional(PRE_SCORE_STATE_KEY, PreScoreState)
