"""Framework: one per profile; runs the plugins of every extension point.

Upstream: ``pkg/scheduler/framework/runtime/framework.go``. Semantics kept exactly:
PreFilter Skip skips that plugin's Filter; an UnschedulableAndUnresolvable PreFilter stops
the cycle at once, an Unschedulable one lets the others run (preemption may help); Filter
stops at a node's first rejection; Score results are normalized, range-checked (0..100)
and weighted; Reserve runs in order and Unreserve in reverse; Permit approves, rejects or
holds the pod (the longest wait is 15 min); Bind plugins run until one does not Skip.

Filter and Score have a batch form over the snapshot's columns; plugins without it run per
node. Error messages are upstream's ("running PreFilter plugin %q: ...").

Every extension point's run is timed into ``scheduler_framework_extension_point_duration_seconds``
(the Filter pass by its caller, :mod:`scheduler_core.algorithm`, as upstream times it in
``findNodesThatPassFilters``); each plugin call is timed into
``scheduler_plugin_execution_duration_seconds`` only in the cycles sampled for it
(``CycleState.record_plugin_metrics``), as upstream's ``runXPlugin`` functions do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeGuard

import numpy as np

from scheduler_core.framework import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BatchFilterPlugin,
    BoolArray,
    ClusterEventWithHint,
    Code,
    CycleState,
    FilterPlugin,
    IntArray,
    NodeColumns,
    NodeInfo,
    NodeName,
    NodeScore,
    NodeToStatus,
    Plugin,
    PodInfo,
    PostFilterResult,
    PreBindPlugin,
    PreFilterResult,
    ScorePlugin,
    Status,
)
from scheduler_core.framework.events import ActionType, ClusterEvent, EventResource
from scheduler_core.framework.extension_points import ExtensionPointSets
from scheduler_core.framework.faults import raised_status
from scheduler_core.framework.field import go_quote
from scheduler_core.framework.interface import (
    BatchFilterRejection,
    BatchFilterStatuses,
    FilterRejectsChanged,
    PostFilterExtensions,
)
from scheduler_core.metrics import scheduler_metrics as sm
from scheduler_core.metrics.registry import HistogramChild
from scheduler_core.runtime.build import BuiltProfile, ProfileError
from scheduler_core.runtime.handle import FrameworkHandle
from scheduler_core.runtime.waiting_pods import MAX_PERMIT_TIMEOUT

# A plugin that does not say which events matter to it is woken by all of them.
_ALL_EVENTS = (ClusterEventWithHint(ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "*")),)


@dataclass(slots=True)
class PreFilterOutcome:
    result: PreFilterResult | None
    status: Status | None
    plugins_with_nodes: set[str] = field(default_factory=set)


@dataclass(slots=True)
class ScoreOutcome:
    """Weighted scores per plugin over the scored nodes, and their totals."""

    names: list[str]  # plugin names in order
    weighted: list[IntArray]  # one array per plugin, aligned with the scored nodes
    totals: IntArray


def _error(message: str, plugin: str = "") -> Status:
    return Status(Code.ERROR, message, plugin=plugin)


def _batch(plugin: FilterPlugin) -> TypeGuard[BatchFilterPlugin]:
    return callable(getattr(plugin, "filter_batch", None))


def _with_plugin(status: Status, plugin: str) -> Status:
    return Status(status.code, *status.reasons, plugin=plugin, error=status.error)


class Framework:
    def __init__(
        self,
        *,
        profile_name: str,
        scheduler_name: str,
        percentage_of_nodes_to_score: int | None,
        built: BuiltProfile,
        handle: FrameworkHandle,
        batch: bool = True,
        annotate: bool = False,
    ) -> None:
        """``batch=False`` runs every Filter and Score plugin per node, ignoring batch forms:
        slower, and the reference the batch forms are tested against."""
        self.profile_name = profile_name
        self.scheduler_name = scheduler_name
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.handle = handle
        handle.attach(self)
        self.metrics = handle.metrics
        self.timer = handle.metrics.timer
        self._ok_children: dict[str, HistogramChild] = {}
        self._point_children: dict[tuple[str, str], HistogramChild] = {}
        self._plugin_children: dict[tuple[str, str, str], HistogramChild] = {}
        self.plugins = built.plugins
        sets = ExtensionPointSets.of(built.points)
        self.pre_enqueue_plugins = sets.pre_enqueue
        self.queue_sort_plugin = sets.queue_sort[0]
        self.pre_filter_plugins = sets.pre_filter
        self.filter_plugins = sets.filter
        self.post_filter_plugins = sets.post_filter
        # The awaitable PostFilter forms, used only when the profile calls extenders (they are
        # what it awaits); a profile without extenders runs every ``post_filter`` as it is.
        self._post_filter_async = {
            p.name: p.post_filter_async
            for p in self.post_filter_plugins
            if handle.extenders and isinstance(p, PostFilterExtensions)
        }
        self.pre_score_plugins = sets.pre_score
        self.score_plugins = sets.score
        self.reserve_plugins = sets.reserve
        self.permit_plugins = sets.permit
        self.pre_bind_plugins = sets.pre_bind
        # Each PreBind plugin with its pre-flight (None: it has none, and counts as having work),
        # looked up once here rather than for every pod.
        self._pre_flights = [(p, getattr(p, "pre_bind_pre_flight", None)) for p in self.pre_bind_plugins]
        self.bind_plugins = sets.bind
        self.post_bind_plugins = sets.post_bind
        self.score_weights = built.score_weights
        self.batch = batch
        self.annotate = annotate  # explain: Annotate (scheduler_core.explanation)
        self.batch_filter_plugins: list[BatchFilterPlugin] = [p for p in self.filter_plugins if batch and _batch(p)]
        self.node_filter_plugins = [p for p in self.filter_plugins if not (batch and _batch(p))]
        self._batch_rejections = {
            p.name: p.filter_batch_rejection for p in self.batch_filter_plugins if isinstance(p, BatchFilterRejection)
        }
        self._batch_statuses = {
            p.name: p.filter_batch_statuses for p in self.batch_filter_plugins if isinstance(p, BatchFilterStatuses)
        }
        self._rejects_changed = [
            (p.name, p.filter_rejects_changed) for p in self.filter_plugins if isinstance(p, FilterRejectsChanged)
        ]
        self._weights = [self.score_weights[p.name] for p in self.score_plugins]
        # Events (with hints) per plugin that can reject pods, as upstream ``fillEnqueueExtensions``
        # (asked once, when the framework is built).
        self.enqueue_extensions = self._register_events()

    # -- queueing ------------------------------------------------------------------------
    def _register_events(self) -> dict[str, Sequence[ClusterEventWithHint]]:
        hints: dict[str, Sequence[ClusterEventWithHint]] = {}
        for plugin in self.plugins.values():
            register = getattr(plugin, "events_to_register", None)
            try:
                hints[plugin.name] = list(register()) if register is not None else _ALL_EVENTS
            except Exception as exc:
                # Refused when built, so a raising plugin never reaches a serving profile.
                reason = f"plugin {plugin.name!r}: {raised_status(exc, [plugin]).message()}"
                raise ProfileError([("spec.plugins", reason)]) from exc
        return hints

    # -- metrics ---------------------------------------------------------------------------
    # The label children this framework observes into, kept: an observation is then a dict
    # lookup, a bisect and two additions (this runs several times per cycle).
    def observe(self, point: str, status: Status | None, start: float) -> None:
        """One run of extension point ``point``, begun at ``start`` (on ``self.timer``)."""
        elapsed = self.timer() - start
        if status is None:  # the common case: keyed by the point alone
            child = self._ok_children.get(point)
            if child is None:
                child = self._ok_children[point] = self._point_child(point, "Success")
        else:
            code = status.code.upstream_name
            child = self._point_children.get((point, code))
            if child is None:
                child = self._point_children[(point, code)] = self._point_child(point, code)
        child.observe(elapsed)

    def _point_child(self, point: str, code: str) -> HistogramChild:
        return self.metrics.extension_point_duration.labels(point, code, self.profile_name)

    def _plugin_ran(self, plugin: str, point: str, status: Status | None, start: float) -> None:
        key = (plugin, point, "Success" if status is None else status.code.upstream_name)
        child = self._plugin_children.get(key)
        if child is None:
            child = self._plugin_children[key] = self.metrics.plugin_duration.labels(*key)
        child.observe(self.timer() - start)

    # -- PreFilter / Filter --------------------------------------------------------------
    def run_pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> PreFilterOutcome:
        start = self.timer()
        outcome = self._run_pre_filter(state, pod, nodes)
        self.observe(sm.PRE_FILTER, outcome.status, start)
        return outcome

    def _run_pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> PreFilterOutcome:
        result: PreFilterResult | None = None
        plugins_with_nodes: set[str] = set()
        rejection: Status | None = None
        sampled = state.record_plugin_metrics
        for plugin in self.pre_filter_plugins:
            begun = self.timer() if sampled else 0.0
            r, status = plugin.pre_filter(state, pod, nodes)
            if sampled:
                self._plugin_ran(plugin.name, sm.PRE_FILTER, status, begun)
            if status is not None and status.code is not Code.SUCCESS:
                if status.code is Code.SKIP:
                    state.skip_filter_plugins.add(plugin.name)
                    continue
                status = _with_plugin(status, plugin.name)
                if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return PreFilterOutcome(None, status)
                if status.code is Code.UNSCHEDULABLE:
                    rejection = status
                    continue
                return PreFilterOutcome(
                    None, _error(f"running PreFilter plugin {go_quote(plugin.name)}: {status.message()}", plugin.name)
                )
            if r is None or r.all_nodes():
                continue
            plugins_with_nodes.add(plugin.name)
            result = r if result is None else result.merge(r)
            if result.node_names is not None and not result.node_names:
                names = sorted(plugins_with_nodes)
                if len(names) == 1:
                    msg = f"node(s) didn't satisfy plugin {names[0]}"
                else:
                    msg = f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
                return PreFilterOutcome(result, Status.unresolvable(msg), plugins_with_nodes)
        return PreFilterOutcome(result, rejection, plugins_with_nodes)

    def run_filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        """All Filter plugins on one node, stopping at the first rejection."""
        skip = state.skip_filter_plugins
        sampled = state.record_plugin_metrics
        for plugin in self.filter_plugins:
            if skip and plugin.name in skip:
                continue
            begun = self.timer() if sampled else 0.0
            status = plugin.filter(state, pod, node)
            if sampled:
                self._plugin_ran(plugin.name, sm.FILTER, status, begun)
            if status is not None and status.code is not Code.SUCCESS:
                if not status.is_rejected():
                    return _error(f"running {go_quote(plugin.name)} filter plugin: {status.message()}", plugin.name)
                return _with_plugin(status, plugin.name)
        return None

    def run_filter_batch(self, state: CycleState, pod: PodInfo, columns: NodeColumns) -> np.ndarray | None:
        """AND of the batch masks of the batch-capable Filter plugins (None: all pass).

        Plugins that decline the batch (return None) are evaluated per node by the caller
        through :meth:`run_filter_per_node_only`."""
        mask: np.ndarray | None = None
        skip = state.skip_filter_plugins
        declined: list[FilterPlugin] = []
        masks: dict[str, BoolArray] = {}
        sampled = state.record_plugin_metrics
        for plugin in self.batch_filter_plugins:
            if skip and plugin.name in skip:
                continue
            begun = self.timer() if sampled else 0.0
            plugin_mask = plugin.filter_batch(state, pod, columns)
            if sampled:
                self._plugin_ran(plugin.name, sm.FILTER, None, begun)
            if plugin_mask is None:
                declined.append(plugin)
                continue
            masks[plugin.name] = plugin_mask
            mask = plugin_mask if mask is None else mask & plugin_mask
        state_declined: list[FilterPlugin] = [*declined]
        state_declined += [p for p in self.node_filter_plugins if not (skip and p.name in skip)]
        state.write(_DECLINED_KEY, _BatchPass(state_declined, masks))
        return mask

    def run_filter_rejected(
        self, state: CycleState, pod: PodInfo, columns: NodeColumns, rows: IntArray
    ) -> list[Status | None]:
        """What :meth:`run_filter` returns for each node at column ``rows``, after
        :meth:`run_filter_batch` on ``state`` and the same ``columns``: the statuses of the nodes
        a failed search rejected, which the diagnosis needs.

        The plugins run in order as in :meth:`run_filter`, but plugin by plugin over the rows
        still undecided, and a batch plugin only on the rows its mask rejected: where the mask
        passes a node, its ``filter`` would have passed it too (the batch contract). A batch
        plugin that names its one rejection (:class:`BatchFilterRejection`) or answers for the
        rows from the columns (:class:`BatchFilterStatuses`) is not called per node at all. The
        nodes a plugin rejects with the same code and reasons share one Status."""
        statuses: list[Status | None] = [None] * len(rows)
        if not len(rows):
            return statuses
        infos = columns.infos
        masks = state.read_as(_DECLINED_KEY, _BatchPass).masks
        skip = state.skip_filter_plugins
        sampled = state.record_plugin_metrics
        undecided = np.arange(len(rows), dtype=np.int64)
        for plugin in self.filter_plugins:
            name = plugin.name
            if skip and name in skip:
                continue
            mask = masks.get(name)
            if mask is None:
                candidates = undecided
            else:
                rejected = ~mask[rows[undecided]]
                if not rejected.any():
                    continue
                candidates = undecided[rejected]
                undecided = undecided[~rejected]
                named_rejection = self._batch_rejection(state, pod, name)
                if named_rejection is not None:
                    for index in candidates.tolist():
                        statuses[index] = named_rejection
                    if not len(undecided):
                        break
                    continue
            passed: list[int] = []
            shared: dict[tuple[Code, tuple[str, ...]], Status] = {}
            indices = candidates.tolist()
            answers = None
            if mask is not None and (from_columns := self._batch_statuses.get(name)) is not None:
                answers = from_columns(state, pod, columns, rows[candidates])
            if answers is None:
                answers = []
                for index in indices:
                    begun = self.timer() if sampled else 0.0
                    status = plugin.filter(state, pod, infos[int(rows[index])])
                    if sampled:
                        self._plugin_ran(name, sm.FILTER, status, begun)
                    answers.append(status)
            for index, status in zip(indices, answers, strict=True):
                if status is None or status.code is Code.SUCCESS:
                    passed.append(index)
                elif not status.is_rejected():
                    statuses[index] = _error(f"running {go_quote(name)} filter plugin: {status.message()}", name)
                elif status.error is not None:
                    statuses[index] = _with_plugin(status, name)
                else:
                    key = (status.code, status.reasons)
                    named = shared.get(key)
                    if named is None:
                        named = shared[key] = _with_plugin(status, name)
                    statuses[index] = named
            if mask is None:
                undecided = np.array(passed, np.int64)
            elif passed:  # the mask rejected a node its filter passes: the next plugins judge it
                undecided = np.concatenate((undecided, np.array(passed, np.int64)))
            if not len(undecided):
                break
        return statuses

    def _batch_rejection(self, state: CycleState, pod: PodInfo, plugin: str) -> Status | None:
        """Plugin ``plugin``'s one rejection of this cycle, named, if it gives one."""
        rejection = self._batch_rejections.get(plugin)
        if rejection is None:
            return None
        status = rejection(state, pod)
        if status is None:
            return None
        if not status.is_rejected():
            return _error(f"running {go_quote(plugin)} filter plugin: {status.message()}", plugin)
        return _with_plugin(status, plugin)

    def run_filter_per_node_only(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> bool:
        """Whether ``node`` passes the Filter plugins that the batch pass did not cover."""
        declined = state.read_as(_DECLINED_KEY, _BatchPass).plugins
        sampled = state.record_plugin_metrics
        for plugin in declined:
            begun = self.timer() if sampled else 0.0
            status = plugin.filter(state, pod, node)
            if sampled:
                self._plugin_ran(plugin.name, sm.FILTER, status, begun)
            if status is not None and status.code is not Code.SUCCESS:
                return False
        return True

    def has_per_node_filters(self, state: CycleState) -> bool:
        return bool(state.read_as(_DECLINED_KEY, _BatchPass).plugins)

    def filter_rejects_changed(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, removed: Sequence[PodInfo], added: Sequence[PodInfo]
    ) -> bool:
        """Whether a Filter plugin that runs in ``state`` (its PreFilter did not Skip) and can
        tell (:class:`FilterRejectsChanged`) rejects ``pod`` on ``node`` without ``removed`` and
        with ``added``."""
        skip = state.skip_filter_plugins
        for name, rejects in self._rejects_changed:
            if not (skip and name in skip) and rejects(state, pod, node, removed, added):
                return True
        return False

    def run_filter_with_nominated_pods(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, nominated: Sequence[PodInfo]
    ) -> Status | None:
        """Upstream ``RunFilterPluginsWithNominatedPods``: filters pass with the node's
        higher-or-equal priority nominated pods added, and again without them."""
        ghosts = [p for p in nominated if p.priority >= pod.priority and p.uid != pod.uid]
        if not ghosts:
            return self.run_filter(state, pod, node)
        node_with = node.clone()
        state_with = state.clone()
        for ghost in ghosts:
            node_with.add_pod(ghost)
            status = self.run_pre_filter_extension_add_pod(state_with, pod, ghost, node_with)
            if status is not None and status.code is not Code.SUCCESS:
                return status
        status = self.run_filter(state_with, pod, node_with)
        if status is not None:
            return status
        return self.run_filter(state, pod, node)

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo
    ) -> Status | None:
        return self._run_pre_filter_extension("add_pod", "AddPod", state, pod, to_add, node)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        return self._run_pre_filter_extension("remove_pod", "RemovePod", state, pod, to_remove, node)

    def _run_pre_filter_extension(
        self, method: str, label: str, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo
    ) -> Status | None:
        for plugin in self.pre_filter_plugins:
            extension = getattr(plugin, method, None)
            if extension is None or plugin.name in state.skip_filter_plugins:
                continue
            status = extension(state, pod, other, node)
            if status is not None and status.code is not Code.SUCCESS:
                return _error(
                    f"running {label} on PreFilter plugin {go_quote(plugin.name)}: {status.message()}", plugin.name
                )
        return None

    # -- PostFilter ----------------------------------------------------------------------
    async def run_post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """Upstream ``RunPostFilterPlugins``. A profile that calls extenders awaits a plugin's
        ``post_filter_async`` where it has one (DefaultPreemption consulting the extenders);
        otherwise nothing here suspends, and the scheduling cycle stays one step of the loop."""
        start = self.timer()
        outcome = _PostFilterOutcome()
        for plugin in self.post_filter_plugins:
            begun = self.timer()
            run_async = self._post_filter_async.get(plugin.name)
            if run_async is not None:
                result, status = await run_async(state, pod, statuses)
            else:
                result, status = plugin.post_filter(state, pod, statuses)
            if state.record_plugin_metrics:
                self._plugin_ran(plugin.name, sm.POST_FILTER, status, begun)
            if outcome.add(plugin.name, result, status):
                break
        self.observe(sm.POST_FILTER, outcome.status, start)
        return outcome.result, outcome.status

    # -- PreScore / Score ----------------------------------------------------------------
    def run_pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        start = self.timer()
        status = self._run_pre_score(state, pod, nodes)
        self.observe(sm.PRE_SCORE, status, start)
        return status

    def _run_pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        sampled = state.record_plugin_metrics
        for plugin in self.pre_score_plugins:
            begun = self.timer() if sampled else 0.0
            status = plugin.pre_score(state, pod, nodes)
            if sampled:
                self._plugin_ran(plugin.name, sm.PRE_SCORE, status, begun)
            if status is not None and status.code is not Code.SUCCESS:
                if status.code is Code.SKIP:
                    state.skip_score_plugins.add(plugin.name)
                    continue
                return _error(f"running PreScore plugin {go_quote(plugin.name)}: {status.message()}", plugin.name)
        return None

    def run_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], columns: NodeColumns, rows: IntArray
    ) -> tuple[ScoreOutcome | None, Status | None]:
        """Score, normalize, check and weight; ``rows`` are the nodes' column rows."""
        start = self.timer()
        outcome, status = self._run_score(state, pod, nodes, columns, rows)
        self.observe(sm.SCORE, status, start)
        return outcome, status

    def _run_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], columns: NodeColumns, rows: IntArray
    ) -> tuple[ScoreOutcome | None, Status | None]:
        names: list[str] = []
        weighted: list[IntArray] = []
        totals = np.zeros(len(nodes), np.int64)
        skip = state.skip_score_plugins
        for plugin, weight in zip(self.score_plugins, self._weights, strict=True):
            if skip and plugin.name in skip:
                continue
            scores = self._scores(state, pod, plugin, nodes, columns, rows)
            if isinstance(scores, Status):
                return None, scores
            if scores.size:
                low, high = int(scores.min()), int(scores.max())
                if high > MAX_NODE_SCORE or low < MIN_NODE_SCORE:
                    bad = high if high > MAX_NODE_SCORE else low
                    return None, _error(
                        f"applying score defaultWeights on Score plugins: plugin {go_quote(plugin.name)} returns an "
                        f"invalid score {bad}, it should in the range of "
                        f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                        plugin.name,
                    )
            if weight != 1:
                scores = scores * weight
            names.append(plugin.name)
            weighted.append(scores)
            totals += scores
        return ScoreOutcome(names, weighted, totals), None

    def _scores(
        self,
        state: CycleState,
        pod: PodInfo,
        plugin: ScorePlugin,
        nodes: Sequence[NodeInfo],
        columns: NodeColumns,
        rows: IntArray,
    ) -> IntArray | Status:
        sampled = state.record_plugin_metrics
        begun = self.timer() if sampled else 0.0
        batch = getattr(plugin, "score_batch", None) if self.batch else None
        scores = batch(state, pod, columns, rows) if batch is not None else None
        if scores is None:
            raw = np.empty(len(nodes), np.int64)
            for i, node in enumerate(nodes):
                score, status = plugin.score(state, pod, node)
                if status is not None and status.code is not Code.SUCCESS:
                    return _error(
                        f"running Score plugins: plugin {go_quote(plugin.name)} failed with: {status.message()}",
                        plugin.name,
                    )
                raw[i] = score
            scores = raw
        else:
            scores = np.array(scores, dtype=np.int64, copy=True)
        if sampled:
            self._plugin_ran(plugin.name, sm.SCORE, None, begun)
            begun = self.timer()
        normalize_batch = getattr(plugin, "normalize_score_batch", None) if self.batch else None
        if normalize_batch is not None:
            status = normalize_batch(state, pod, scores)
        elif hasattr(plugin, "normalize_score"):
            node_scores = [NodeScore(node.name, int(s)) for node, s in zip(nodes, scores, strict=True)]
            status = plugin.normalize_score(state, pod, node_scores)
            scores = np.fromiter((s.score for s in node_scores), np.int64, len(node_scores))
        else:
            status = None
        if sampled:
            self._plugin_ran(plugin.name, sm.SCORE_EXTENSION_NORMALIZE, status, begun)
        if status is not None and status.code is not Code.SUCCESS:
            return _error(
                f"running Normalize on Score plugins: plugin {go_quote(plugin.name)} failed with: {status.message()}",
                plugin.name,
            )
        return scores

    # -- Reserve / Permit ------------------------------------------------------------------
    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        start = self.timer()
        status = self._run_reserve(state, pod, node_name)
        self.observe(sm.RESERVE, status, start)
        return status

    def _run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        sampled = state.record_plugin_metrics
        for plugin in self.reserve_plugins:
            begun = self.timer() if sampled else 0.0
            status = plugin.reserve(state, pod, NodeName(node_name))
            if sampled:
                self._plugin_ran(plugin.name, sm.RESERVE, status, begun)
            if status is not None and status.code is not Code.SUCCESS:
                if status.is_rejected():
                    return _with_plugin(status, plugin.name)
                return _error(f"running Reserve plugin {go_quote(plugin.name)}: {status.message()}", plugin.name)
        return None

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        start = self.timer()
        for plugin in reversed(self.reserve_plugins):
            plugin.unreserve(state, pod, NodeName(node_name))
        self.observe(sm.UNRESERVE, None, start)

    def run_permit(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        start = self.timer()
        status = self._run_permit(state, pod, node_name)
        self.observe(sm.PERMIT, status, start)
        return status

    def _run_permit(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        waits: dict[str, float] = {}
        wait_status: Status | None = None
        sampled = state.record_plugin_metrics
        for plugin in self.permit_plugins:
            begun = self.timer() if sampled else 0.0
            status, timeout = plugin.permit(state, pod, NodeName(node_name))
            if sampled:
                self._plugin_ran(plugin.name, sm.PERMIT, status, begun)
            if status is None or status.code is Code.SUCCESS:
                continue
            if status.is_rejected():
                return _with_plugin(status, plugin.name)
            if status.code is Code.WAIT:
                waits[plugin.name] = min(float(timeout), MAX_PERMIT_TIMEOUT)
                wait_status = status
                continue
            return _error(f"running Permit plugin {go_quote(plugin.name)}: {status.message()}", plugin.name)
        if waits:
            self.handle.waiting_pods.wait(pod, waits)
            # The last waiting plugin's status with upstream's reason appended (RunPermitPlugins).
            reasons = wait_status.reasons if wait_status is not None else ()
            return Status.wait(*reasons, "one or more plugins asked to wait and no plugin rejected pod")
        return None

    async def wait_on_permit(self, pod: PodInfo) -> Status | None:
        waiting = self.handle.waiting_pods.get(pod.uid)
        if waiting is None:
            return None
        start = self.timer()
        try:
            status = await waiting.wait()
        finally:
            self.handle.waiting_pods.remove(pod.uid)
        # framework.go WaitOnPermit: the wait, by the code it ended with.
        self.metrics.permit_waited("Success" if status is None else status.code.upstream_name, self.timer() - start)
        if status is None or status.code is Code.SUCCESS:
            return None
        if status.is_rejected():
            return status
        return _error(f"waiting on permit for pod: {status.message()}", status.plugin)

    def will_wait_on_permit(self, pod: PodInfo) -> bool:
        """A Permit plugin holds ``pod`` (upstream ``WillWaitOnPermit``)."""
        return self.handle.waiting_pods.get(pod.uid) is not None

    # -- binding cycle ---------------------------------------------------------------------
    def run_pre_bind_pre_flights(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Upstream ``RunPreBindPreFlights`` (v1.36.3 ``framework/runtime/framework.go``): None
        (Success) when a PreBind plugin has work for the pod, ``Skip`` when none has, else an
        Error. Records in ``state`` the plugins that skip (their PreBind is not run) and those
        whose PreBind may run in parallel. A plugin without ``pre_bind_pre_flight`` counts as
        Success, not parallel (:class:`~scheduler_core.framework.PreBindPreFlight`)."""
        start = self.timer()
        result = self._run_pre_bind_pre_flights(state, pod, NodeName(node_name))
        self.observe(sm.PRE_BIND_PRE_FLIGHT, result, start)
        return result

    def _run_pre_bind_pre_flights(self, state: CycleState, pod: PodInfo, node_name: NodeName) -> Status | None:
        sampled = state.record_plugin_metrics
        skipped: set[str] = set()
        parallel: set[str] = set()
        result: Status | None = Status.skip()
        for plugin, pre_flight in self._pre_flights:
            if pre_flight is None:
                result = None
                continue
            begun = self.timer() if sampled else 0.0
            answer, status = pre_flight(state, pod, node_name)
            if sampled:
                self._plugin_ran(plugin.name, sm.PRE_BIND_PRE_FLIGHT, status, begun)
            if answer is not None and answer.allow_parallel:
                parallel.add(plugin.name)
            if status is None or status.code is Code.SUCCESS:
                result = None
            elif status.code is Code.SKIP:
                skipped.add(plugin.name)
            elif status.code is Code.ERROR:
                return _error(f"running PreBindPreFlight {go_quote(plugin.name)}: {status.message()}", plugin.name)
            else:
                return _error(
                    f"PreBindPreFlight {plugin.name} returned {go_quote(status.code.upstream_name)}, which is "
                    "unsupported. It is supposed to return Success, Skip, or Error status",
                    plugin.name,
                )
        state.skip_pre_bind_plugins = skipped
        state.parallel_pre_bind_plugins = parallel
        return result

    def pre_bind_groups(self, state: CycleState) -> list[list[PreBindPlugin]]:
        """Upstream ``getPreBindPluginGroups``: the PreBind plugins not skipped, in order, the
        neighbours that allow parallel runs grouped (a plugin that does not ends a group)."""
        groups: list[list[PreBindPlugin]] = []
        group: list[PreBindPlugin] = []
        skipped, parallel = state.skip_pre_bind_plugins, state.parallel_pre_bind_plugins
        for plugin in self.pre_bind_plugins:
            if plugin.name in parallel:
                if plugin.name not in skipped:
                    group.append(plugin)
                continue
            if group:
                groups.append(group)
                group = []
            if plugin.name not in skipped:
                groups.append([plugin])
        if group:
            groups.append(group)
        return groups

    async def run_pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Upstream ``RunPreBindPlugins``: each group in turn; a group's plugins at once, the
        first failure cancelling the others (awaited before it is returned)."""
        start = self.timer()
        result: Status | None = None
        name = NodeName(node_name)
        for group in self.pre_bind_groups(state):
            if len(group) == 1:
                result = await self._pre_bind(group[0], state, pod, name)
            else:
                result = await self._pre_bind_together(group, state, pod, name)
            if result is not None:
                break
        self.observe(sm.PRE_BIND, result, start)
        return result

    async def _pre_bind_together(
        self, group: list[PreBindPlugin], state: CycleState, pod: PodInfo, node_name: NodeName
    ) -> Status | None:
        tasks = [asyncio.ensure_future(self._pre_bind(plugin, state, pod, node_name)) for plugin in group]
        try:
            for finished in asyncio.as_completed(tasks):
                status = await finished
                if status is not None:
                    return status
            return None
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _pre_bind(
        self, plugin: PreBindPlugin, state: CycleState, pod: PodInfo, node_name: NodeName
    ) -> Status | None:
        sampled = state.record_plugin_metrics
        begun = self.timer() if sampled else 0.0
        status = await plugin.pre_bind(state, pod, node_name)
        if sampled:
            self._plugin_ran(plugin.name, sm.PRE_BIND, status, begun)
        if status is None or status.code is Code.SUCCESS:
            return None  # Skip is an error here, as upstream: a plugin skips through its pre-flight
        if status.is_rejected():
            return _with_plugin(status, plugin.name)
        return _error(f"running PreBind plugin {go_quote(plugin.name)}: {status.message()}", plugin.name)

    async def run_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        start = self.timer()
        result: Status | None = None
        sampled = state.record_plugin_metrics
        for plugin in self.bind_plugins:
            begun = self.timer() if sampled else 0.0
            status = await plugin.bind(state, pod, NodeName(node_name))
            if sampled:
                self._plugin_ran(plugin.name, sm.BIND, status, begun)
            if status is not None and status.code is Code.SKIP:
                continue
            if status is None or status.code is Code.SUCCESS:
                result = None
            elif status.is_rejected():
                result = _with_plugin(status, plugin.name)
            else:
                result = _error(f"running Bind plugin {go_quote(plugin.name)}: {status.message()}", plugin.name)
            break
        else:
            result = _error("no Bind plugin bound the pod: every one returned Skip")
        self.observe(sm.BIND, result, start)
        return result

    async def run_post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        start = self.timer()
        sampled = state.record_plugin_metrics
        for plugin in self.post_bind_plugins:
            begun = self.timer() if sampled else 0.0
            await plugin.post_bind(state, pod, NodeName(node_name))
            if sampled:
                self._plugin_ran(plugin.name, sm.POST_BIND, None, begun)
        self.observe(sm.POST_BIND, None, start)

    def describe(self) -> dict[str, list[dict[str, object]]]:
        """The resolved plugins per extension point, with weights for Score (for status)."""
        points: dict[str, Sequence[Plugin]] = {
            "preEnqueue": self.pre_enqueue_plugins,
            "queueSort": [self.queue_sort_plugin],
            "preFilter": self.pre_filter_plugins,
            "filter": self.filter_plugins,
            "postFilter": self.post_filter_plugins,
            "preScore": self.pre_score_plugins,
            "score": self.score_plugins,
            "reserve": self.reserve_plugins,
            "permit": self.permit_plugins,
            "preBind": self.pre_bind_plugins,
            "bind": self.bind_plugins,
            "postBind": self.post_bind_plugins,
        }
        described: dict[str, list[dict[str, object]]] = {}
        for point, plugins in points.items():
            if plugins:
                described[point] = [
                    {"name": p.name, "weight": self.score_weights[p.name]} if point == "score" else {"name": p.name}
                    for p in plugins
                ]
        return described


class _PostFilterOutcome:
    """Upstream ``RunPostFilterPlugins``: the first success or unresolvable ends the run; an
    error is reported as such; rejections' reasons accumulate."""

    def __init__(self) -> None:
        self.result: PostFilterResult | None = None
        self.status = Status(Code.UNSCHEDULABLE)
        self._reasons: list[str] = []

    def add(self, plugin: str, result: PostFilterResult | None, status: Status | None) -> bool:
        """Record one plugin's outcome; True when the run ends with it."""
        if status is None or status.code is Code.SUCCESS:
            self.result, self.status = result, Status(Code.SUCCESS, *(status.reasons if status else ()), plugin=plugin)
            return True
        if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            self.result, self.status = result, _with_plugin(status, plugin)
            return True
        if not status.is_rejected():
            self.result = None
            # fwk.AsStatus(s.AsError()): the plugin's own message, no prefix (v1.36.3 framework.go).
            self.status = _error(status.message(), plugin)
            return True
        self._reasons.extend(status.reasons)
        if result is not None:
            self.result = result
        self.status = Status(Code.UNSCHEDULABLE, *self._reasons)
        return False


_DECLINED_KEY = "crd-scheduler/per-node-filters"


@dataclass(slots=True)
class _BatchPass:
    """What :meth:`Framework.run_filter_batch` left for the per-node work of the cycle: the
    Filter plugins to run per node, and each batch plugin's mask by name."""

    plugins: list[FilterPlugin]
    masks: dict[str, BoolArray]

    def clone(self) -> _BatchPass:
        return self
