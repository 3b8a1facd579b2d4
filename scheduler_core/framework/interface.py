"""The plugin contract: one Protocol per extension point, the Handle, the factory.

A plugin is a class with a ``name`` and any of the methods below; the runtime sees which
extension points it serves from the methods it has (as upstream sees which Go interfaces a
plugin implements). Scheduling-cycle hooks are plain functions, run on the hot path;
binding-cycle hooks are coroutines. ``None`` as a status means success.

Upstream: ``staging/src/k8s.io/kube-scheduler/framework/interface.go`` and
``pkg/scheduler/framework/interface.go``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable, Iterator, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from scheduler_core.framework.columns import BoolArray, IntArray, NodeColumns
from scheduler_core.framework.cycle_state import CycleState
from scheduler_core.framework.events import ClusterEventWithHint
from scheduler_core.framework.status import Status
from scheduler_core.framework.types import (
    NodeInfo,
    NodeName,
    NodeScore,
    NodeToStatus,
    PodInfo,
    PostFilterResult,
    PreBindPreFlightResult,
    PreFilterResult,
    QueuedPodInfo,
)
from scheduler_core.framework.writes import ClusterAPI

T = TypeVar("T")

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = 2**63 - 1


@runtime_checkable
class Plugin(Protocol):
    name: str


class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: PodInfo) -> Status | None: ...


class QueueSortPlugin(Plugin, Protocol):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool: ...


class EnqueueExtensions(Plugin, Protocol):
    def events_to_register(self) -> Sequence[ClusterEventWithHint]: ...


class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]: ...


class PreFilterExtensions(Protocol):
    """Optional on a PreFilter plugin: keep its cycle state right when pods are added or
    removed in what-if evaluations (nominated pods, preemption victims)."""

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status | None: ...

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status | None: ...


class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None: ...


class BatchFilterPlugin(FilterPlugin, Protocol):
    """A Filter plugin that can also judge every node of a snapshot at once.

    ``filter_batch`` returns a boolean mask over ``columns`` rows (True = passes), or
    ``None`` when it cannot judge this pod in batch (the runtime then calls ``filter``
    per node). It must agree exactly with ``filter``; reasons come from ``filter``.
    """

    def filter_batch(self, state: CycleState, pod: PodInfo, columns: NodeColumns) -> BoolArray | None: ...


@runtime_checkable
class BatchFilterRejection(Protocol):
    """Optional on a batch Filter plugin: the one Status its ``filter`` returns, in this cycle,
    for every node its ``filter_batch`` mask rejects, or ``None`` when that depends on the node.
    A failed attempt then needs no ``filter`` call per rejected node to say why (the diagnosis
    of each node, the FailedScheduling message); it must agree exactly with ``filter``."""

    def filter_batch_rejection(self, state: CycleState, pod: PodInfo) -> Status | None: ...


@runtime_checkable
class BatchFilterStatuses(Protocol):
    """Optional on a batch Filter plugin whose rejection depends on the node: what its
    ``filter`` returns for each node at column ``rows`` (nodes its ``filter_batch`` mask
    rejected), read from the columns, or ``None`` to be asked per node. Nodes given the same
    answer may share one Status. It must agree exactly with ``filter``."""

    def filter_batch_statuses(
        self, state: CycleState, pod: PodInfo, columns: NodeColumns, rows: IntArray
    ) -> list[Status | None] | None: ...


@runtime_checkable
class FilterRejectsChanged(Protocol):
    """Optional on a Filter plugin: whether its ``filter`` certainly rejects ``pod`` on ``node``
    changed by taking the pods ``removed`` (on it) off and putting the pods ``added`` (not on
    it) on, judged without changing it. True must mean a rejection; False may mean "cannot
    tell". Preemption's dry run asks it where a rejection settles the question without a clone
    or a filter run: whether the pod fits a node even with every lower-priority pod off it,
    whether it still fits with one of them put back."""

    def filter_rejects_changed(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, removed: Sequence[PodInfo], added: Sequence[PodInfo]
    ) -> bool: ...


class PostFilterPlugin(Plugin, Protocol):
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]: ...


@runtime_checkable
class PostFilterExtensions(Protocol):
    """Optional on a PostFilter plugin: ``post_filter`` that may await the profile's HTTP
    extenders (``Handle.extenders_process_preemption``, upstream ``callExtenders``). The
    runtime awaits it in place of ``post_filter`` when the profile calls extenders; it must
    agree with ``post_filter`` when the extenders change nothing."""

    async def post_filter_async(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]: ...


class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None: ...


class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]: ...


class ScoreExtensions(Protocol):
    """Optional on a Score plugin: rewrite the scores of all nodes, in place, to 0..100."""

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None: ...


class BatchScoreExtensions(Protocol):
    """Optional on a Score plugin with ``normalize_score``: the same over an int64 array of
    raw scores, rewritten in place (it must agree exactly with ``normalize_score``)."""

    def normalize_score_batch(self, state: CycleState, pod: PodInfo, scores: IntArray) -> Status | None: ...


class BatchScorePlugin(ScorePlugin, Protocol):
    """A Score plugin that can also score rows of the columns at once.

    ``score_batch`` returns raw scores for ``rows`` (before normalize), or ``None`` to fall
    back to ``score`` per node. A plugin with ``normalize_score`` may also offer
    ``normalize_score_batch(state, pod, scores)`` rewriting an int64 array in place.
    """

    def score_batch(self, state: CycleState, pod: PodInfo, columns: NodeColumns, rows: IntArray) -> IntArray | None: ...


class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: NodeName) -> Status | None: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: NodeName) -> None: ...


class PermitPlugin(Plugin, Protocol):
    def permit(self, state: CycleState, pod: PodInfo, node_name: NodeName) -> tuple[Status | None, float]: ...


class PreBindPlugin(Plugin, Protocol):
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: NodeName) -> Status | None: ...


class PreBindPreFlight(Protocol):
    """Optional on a PreBind plugin (upstream makes it part of every PreBind plugin, v1.36.3
    ``kube-scheduler/framework/interface.go``): before Permit's wait, whether its ``pre_bind``
    has work for this pod on ``node_name``, from the cycle state alone. ``None`` (Success): it
    has, and the binding cycle writes the pod's ``status.nominatedNodeName`` first, to tell
    other components (the cluster autoscaler) where the pod is going; ``Status.skip()``: it has
    none, and its ``pre_bind`` is not called; an Error status fails the binding cycle. A PreBind
    plugin without it counts as Success. ``PreBindPreFlightResult(allow_parallel=True)``: its
    ``pre_bind`` may run beside the other plugins' that allow it."""

    def pre_bind_pre_flight(
        self, state: CycleState, pod: PodInfo, node_name: NodeName
    ) -> tuple[PreBindPreFlightResult | None, Status | None]: ...


class BindPlugin(Plugin, Protocol):
    async def bind(self, state: CycleState, pod: PodInfo, node_name: NodeName) -> Status | None: ...


class PostBindPlugin(Plugin, Protocol):
    async def post_bind(self, state: CycleState, pod: PodInfo, node_name: NodeName) -> None: ...


class WaitingPod(Protocol):
    """A pod held at Permit. ``allow`` by every waiting plugin lets it bind; one
    ``reject`` sends it back to the queue."""

    @property
    def pod(self) -> PodInfo: ...

    def pending_plugins(self) -> list[str]: ...

    def allow(self, plugin: str) -> None: ...

    def reject(self, plugin: str, message: str) -> None: ...


class SnapshotLister(Protocol):
    """Read access to the cycle's snapshot of nodes."""

    def list(self) -> Sequence[NodeInfo]: ...

    def get(self, node_name: str) -> NodeInfo | None: ...

    @property
    def columns(self) -> NodeColumns: ...

    def have_pods_with_affinity(self) -> Sequence[NodeInfo]: ...

    def have_pods_with_required_anti_affinity(self) -> Sequence[NodeInfo]: ...

    def any_pods_with_affinity(self) -> bool:
        """``bool(have_pods_with_affinity())``, without building the list."""
        ...

    def any_pods_with_required_anti_affinity(self) -> bool:
        """``bool(have_pods_with_required_anti_affinity())``, without building the list."""
        ...


class Nominator(Protocol):
    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]: ...


class PluginMetrics(Protocol):
    """What plugins report to the scheduler's metrics (upstream's plugins write the global
    ``scheduler_preemption_*`` metrics; here they go through the Handle)."""

    def preemption_attempted(self) -> None:
        """One PostFilter preemption attempt (``scheduler_preemption_attempts_total``)."""
        ...

    def preemption_victims(self, count: int) -> None:
        """The victims of the chosen candidate (``scheduler_preemption_victims``)."""
        ...

    def preemption_goroutine_finished(self, result: str, seconds: float) -> None:
        """A background preemption ended, ``success`` or ``error``, after ``seconds``
        (``scheduler_preemption_goroutines_duration_seconds`` and ``..._execution_total``)."""
        ...

    def volume_scheduling_stage_failed(self, operation: str) -> None:
        """VolumeBinding's ``predicate``, ``assume`` or ``bind`` stage failed with an error
        (``scheduler_volume_scheduling_stage_error_total``)."""
        ...


class Handle(Protocol):
    """What the framework gives a plugin: the snapshot, waiting pods, nominator, API."""

    @property
    def profile_name(self) -> str: ...

    def snapshot(self) -> SnapshotLister: ...

    def get_waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def iterate_over_waiting_pods(self) -> Iterator[WaitingPod]: ...

    def reject_waiting_pod(self, uid: str) -> bool: ...

    @property
    def nominator(self) -> Nominator: ...

    @property
    def metrics(self) -> PluginMetrics: ...

    @property
    def api(self) -> ClusterAPI: ...

    @property
    def tenant_namespace(self) -> str | None:
        """``None`` for a cluster-wide profile; else the one namespace whose pods this profile
        schedules and may preempt (DESIGN.md tenant safety)."""
        ...

    def objects(self, kind: str) -> Iterable[Any]:
        """Other cluster objects the backend carries (PDBs, Services, PVCs...), by kind."""
        ...

    def lookup(self, kind: str, namespace: str, name: str) -> Any | None:
        """One of :meth:`objects` by namespace ("" for a cluster-scoped kind) and name, or None:
        a lister's ``Get``, without listing the kind."""
        ...

    def objects_version(self, kind: str) -> int | None:
        """A number that changes whenever an object of ``kind`` is added, replaced or removed,
        and never takes an earlier value again; None when the backend does not count. What a
        plugin derives from :meth:`objects` and :meth:`lookup` may be kept across cycles while
        the numbers of the kinds it read stay the same."""
        ...

    def activate(self, pods: Iterable[PodInfo]) -> None:
        """Move ``pods`` to activeQ (upstream ``PodActivator.Activate``): from the unschedulable
        pool or backoffQ; a pod in flight is requeued when its attempt ends; others are ignored."""
        ...

    def shared(self, name: str, factory: Callable[[], T]) -> T:
        """The scheduler's one object under ``name`` (made by ``factory`` on first use), shared by
        every profile's plugins and kept across hot reloads: state that must be one per
        scheduler, as upstream's ``SharedDRAManager`` (DynamicResources' in-flight allocations)."""
        ...

    def start_task(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``work`` in the background, tracked by the scheduler (waited for when it
        drains, e.g. at the end of ``simulate``): preemption's evictions."""
        ...

    async def extenders_process_preemption(
        self, pod: PodInfo, victims: dict[str, tuple[list[PodInfo], int]]
    ) -> tuple[dict[str, tuple[list[PodInfo], int]], Status | None]:
        """Upstream ``callExtenders``: the profile's preempting extenders narrow the candidates
        (node name -> victims and PDB violations); unchanged when it has none."""
        ...

    # The plugins runner, for what-if evaluations (preemption).
    def run_filter_with_nominated_pods(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None: ...

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo
    ) -> Status | None: ...

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None: ...

    def runs_remove_pod_extension(self, state: CycleState) -> bool:
        """Whether :meth:`run_pre_filter_extension_remove_pod` calls any plugin in ``state``
        (a PreFilter plugin with a RemovePod extension did not Skip): without one, a what-if
        removal needs no call per pod."""
        ...

    def runs_add_pod_extension(self, state: CycleState) -> bool:
        """Whether :meth:`run_pre_filter_extension_add_pod` calls any plugin in ``state``."""
        ...

    def filter_rejects_changed(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, removed: Sequence[PodInfo], added: Sequence[PodInfo]
    ) -> bool:
        """Whether a Filter plugin running in ``state`` certainly rejects ``pod`` on ``node``
        without the pods ``removed`` and with the pods ``added`` (:class:`FilterRejectsChanged`);
        False when none can tell."""
        ...


class PluginFactory(Protocol):
    """Builds a plugin from its validated args. ``args_model`` is a pydantic model with
    defaults (or ``None`` for a plugin without args); ``name`` is the registered name."""

    @property
    def name(self) -> str: ...

    @property
    def args_model(self) -> type[BaseModel] | None: ...

    def __call__(self, args: Any, handle: Handle) -> Plugin: ...
