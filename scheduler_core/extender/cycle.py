"""A scheduling cycle that calls HTTP extenders: the awaitable twin of ``Algorithm.schedule_pod``.

Upstream: ``pkg/scheduler/schedule_one.go`` (``findNodesThatFitPod`` then
``findNodesThatPassExtenders``; ``prioritizeNodes``; ``bind``/``extendersBinding``) and
``pkg/scheduler/framework/preemption/preemption.go`` (``callExtenders``), v1.36.3.

**Why an awaitable twin.** A scheduling cycle for a profile without extenders never suspends,
and the cache's NodeInfos serve as its snapshot (DESIGN.md). An extender is an HTTP call of up to
``httpTimeout`` (5 s by default): made synchronously it would stall the watch handlers, the
binding cycles and Lease renewal. So ``Scheduler.schedule_one`` takes this path only for pods
whose profile has extenders, on that profile's lane (``Scheduler.run``: one cycle at a time per
profile, the other profiles' pods go on meanwhile); for other profiles its extender steps are
skipped. The host chosen here is checked again on the current cache before it is assumed
(``Scheduler._still_fits``; docs/extenders.md).

While a call is awaited, events may change the cache. The cycle therefore holds node *names*
across every await and looks the nodes up again afterwards: a node deleted meanwhile drops out,
the others are scored on the current cache (which is what upstream's next snapshot would show).
The filter decision stands as upstream's does on its snapshot of the cycle's start.

Order, as upstream: the filter plugins find the feasible nodes (``percentageOfNodesToScore`` applies
to them, not to the extenders); each interested filter extender, in order (ignorable ones last),
narrows the list, its ``failedNodes`` becoming Unschedulable statuses and its
``failedAndUnresolvableNodes`` UnschedulableAndUnresolvable ones (which preemption skips); when the
extenders removed nodes, ``Extender`` joins the diagnosis' rejecting plugins, so any cluster event
requeues the pod. A pod nominated by an earlier preemption tries that node alone first
(``evaluateNominatedNode``): passed by the filter plugins and then by the filter extenders, it is
the only feasible node; otherwise the full search follows (PreFilter again, on the current cache, as
the extenders were awaited) and calls the extenders again. Prioritizing extenders are called
concurrently; an error only means no score from that extender. Each score adds ``score * weight *
(MaxNodeScore / MaxExtenderPriority)`` to the plugin total, and appears in the explanation under the
extender's name (its URL prefix).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from scheduler_core.algorithm import (
    NO_NODES_AVAILABLE,
    Algorithm,
    RowView,
    ScheduleError,
    ScheduleResult,
)
from scheduler_core.extender.client import ExtenderError, HTTPExtender
from scheduler_core.extender.wire import MAX_EXTENDER_PRIORITY
from scheduler_core.framework import (
    MAX_NODE_SCORE,
    Code,
    CycleState,
    Manifest,
    NodeInfo,
    PodInfo,
    SnapshotLister,
    Status,
    manifest,
)
from scheduler_core.framework.diagnosis import Diagnosis, FitError
from scheduler_core.runtime.framework import Framework, ScoreOutcome

log = logging.getLogger(__name__)

EXTENDER_NAME = "Extender"  # upstream framework.ExtenderName, a rejector in the diagnosis
SCORE_SCALE = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY


def _node_object(info: NodeInfo) -> Manifest:
    return info.node if info.node is not None else {"metadata": {"name": info.name}}


async def schedule_pod(
    algorithm: Algorithm,
    fwk: Framework,
    state: CycleState,
    pod: PodInfo,
    snapshot: Callable[[], SnapshotLister],
    extenders: Sequence[HTTPExtender],
    *,
    nominated: Mapping[str, Sequence[PodInfo]] | None = None,
    nominated_node: str = "",
    explain: bool = False,
) -> ScheduleResult:
    """``Algorithm.schedule_pod`` with the extenders; raises FitError or ScheduleError as it does."""
    snap = snapshot()
    if not snap.list():
        raise ScheduleError(Status(Code.UNSCHEDULABLE, NO_NODES_AVAILABLE))
    num_all = len(snap.list())
    interested = [e for e in extenders if e.is_interested(pod.pod)]
    filtering = any(e.is_filter for e in interested)
    # Reasons of the nodes the plugins rejected are needed when the extenders reject the rest.
    rows, diagnosis = algorithm.find_nodes_that_fit(
        fwk, state, pod, snap, nominated or {}, explain or filtering, nominated_node=nominated_node
    )
    if filtering and nominated_node and _only_node(snap, rows) == nominated_node:
        # The nominated node passed the filter plugins alone (the full search was not run).
        if await _nominated_passes_extenders(interested, pod, snap.columns.infos[int(rows[0])], diagnosis):
            return ScheduleResult(nominated_node, 1, 1, diagnosis=diagnosis if explain else None)
        # The full search, PreFilter included: the cache may have changed during the calls.
        snap = snapshot()
        state.skip_filter_plugins.clear()
        rows, diagnosis = algorithm.find_nodes_that_fit(fwk, state, pod, snap, nominated or {}, explain or filtering)
    if not len(rows):
        raise FitError(pod, num_all, diagnosis)
    infos = [snap.columns.infos[int(r)] for r in rows]
    names: list[str] = [info.name for info in infos]
    if filtering:
        names = await filter_nodes(interested, pod, [_node_object(i) for i in infos], diagnosis)
        if len(names) != len(infos):
            diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
        snap = snapshot()  # the cache may have changed during the calls
    current = [info for info in (snap.get(n) for n in names) if info is not None]
    if not current:
        raise FitError(pod, len(snap.list()), diagnosis)
    evaluated = len(rows) + len(diagnosis.node_to_status)
    kept = diagnosis if explain else None
    if len(current) == 1:
        return ScheduleResult(current[0].name, evaluated, 1, diagnosis=kept)

    extender_scores: list[tuple[str, dict[str, int]]] = []
    if interested:
        extender_scores = await prioritize_nodes(interested, pod, [_node_object(i) for i in current])
        if any(e.is_prioritizer for e in interested):
            snap = snapshot()
            current = [info for info in (snap.get(i.name) for i in current) if info is not None]
            if not current:
                raise FitError(pod, len(snap.list()), diagnosis)
    columns = snap.columns
    node_rows = np.array([info.row for info in current], np.int64)
    nodes = RowView(columns.infos, node_rows)
    if fwk.score_plugins or not interested:
        outcome = algorithm.prioritize(fwk, state, pod, nodes, columns, node_rows)
    else:  # upstream: with extenders, no score plugins means plugin totals of 0
        outcome = ScoreOutcome([], [], np.zeros(len(nodes), np.int64))
    add_extender_scores(outcome, [info.name for info in current], extender_scores)
    host = current[algorithm.select_host(outcome.totals)].name
    return ScheduleResult(host, evaluated, len(current), outcome, nodes, kept)


def _only_node(snap: SnapshotLister, rows: np.ndarray) -> str | None:
    return snap.columns.names[int(rows[0])] if len(rows) == 1 else None


async def _nominated_passes_extenders(
    extenders: Sequence[HTTPExtender], pod: PodInfo, info: NodeInfo, diagnosis: Diagnosis
) -> bool:
    """Upstream ``evaluateNominatedNode``'s extender half: the nominated node, which passed the
    filter plugins, alone through the filter extenders. On a rejection, or an extender's error
    (only logged there), the full search follows and calls the extenders again; its diagnosis
    reports on the node."""
    try:
        return bool(await filter_nodes(extenders, pod, [_node_object(info)], diagnosis))
    except ScheduleError as error:
        log.info("evaluation failed on nominated node %s for pod %s: %s", info.name, pod.key, error.status.message())
        return False


async def filter_nodes(
    extenders: Sequence[HTTPExtender], pod: PodInfo, nodes: Sequence[Manifest], diagnosis: Diagnosis
) -> list[str]:
    """Upstream ``findNodesThatPassExtenders``: each extender narrows the previous one's list."""
    by_name = {str(manifest.meta(n).get("name", "")): n for n in nodes}
    feasible = list(by_name)
    statuses = diagnosis.node_to_status
    for extender in extenders:
        if not feasible:
            break
        if not extender.is_filter:
            continue
        try:
            passed, failed, unresolvable = await extender.filter(pod.pod, [by_name[n] for n in feasible])
        except ExtenderError as exc:
            if extender.ignorable:
                log.info("skipping extender %s as it returned error and has ignorable flag set: %s", extender.name, exc)
                continue
            raise ScheduleError(Status.as_error(str(exc))) from None
        for name, message in unresolvable.items():
            statuses[name] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message, plugin=EXTENDER_NAME)
        for name, message in failed.items():
            if name not in unresolvable:  # failedAndUnresolvableNodes takes precedence
                statuses[name] = Status(Code.UNSCHEDULABLE, message, plugin=EXTENDER_NAME)
        feasible = passed
    return feasible


async def prioritize_nodes(
    extenders: Sequence[HTTPExtender], pod: PodInfo, nodes: Sequence[Manifest]
) -> list[tuple[str, dict[str, int]]]:
    """Upstream's extender half of ``prioritizeNodes``: concurrent calls; per extender, the
    final score of each node it scored (``score * weight * 10``). An interested extender
    without a prioritize verb scores 0 everywhere, as upstream's ``Prioritize`` answers (so it
    appears in the explanation, as in kube-scheduler's)."""
    scores: list[tuple[str, dict[str, int]]] = [
        (e.name, dict.fromkeys((str(manifest.meta(n).get("name", "")) for n in nodes), 0))
        for e in extenders
        if not e.is_prioritizer
    ]
    prioritizers = [e for e in extenders if e.is_prioritizer]
    answers = await asyncio.gather(*(e.prioritize(pod.pod, nodes) for e in prioritizers), return_exceptions=True)
    for extender, answer in zip(prioritizers, answers, strict=True):
        if isinstance(answer, BaseException):
            if not isinstance(answer, ExtenderError):
                raise answer
            log.debug("extender %s prioritize failed, no score given: %s", extender.name, answer)
            continue
        final: dict[str, int] = {}
        for host, score in answer:
            final[host] = final.get(host, 0) + score * extender.weight * SCORE_SCALE
        scores.append((extender.name, final))
    return scores


def add_extender_scores(
    outcome: ScoreOutcome, names: Sequence[str], extender_scores: Sequence[tuple[str, Mapping[str, int]]]
) -> None:
    """Each extender's scores beside the plugins' (nodes it did not score get 0), in the totals."""
    for name, by_node in extender_scores:
        column = np.fromiter((by_node.get(n, 0) for n in names), np.int64, len(names))
        outcome.names.append(name)
        outcome.weighted.append(column)
        outcome.totals = outcome.totals + column


async def bind(extenders: Sequence[HTTPExtender], pod: PodInfo, node_name: str) -> tuple[bool, Status | None]:
    """Upstream ``extendersBinding``: the first interested binder binds (``True``); an ignorable
    one that fails is skipped, a non-ignorable failure is the binding's error."""
    for extender in extenders:
        if not extender.is_binder or not extender.is_interested(pod.pod):
            continue
        try:
            await extender.bind(name=pod.name, namespace=pod.namespace, uid=pod.uid, node=node_name)
        except ExtenderError as exc:
            if extender.ignorable:
                log.info("skipping extender %s in bind as it returned error and has ignorable flag set: %s",
                         extender.name, exc)  # fmt: skip
                continue
            return True, Status.as_error(str(exc))
        return True, None
    return False, None
