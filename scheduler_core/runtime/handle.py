"""The Handle given to plugins: one per profile, over services the scheduler shares."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from scheduler_core.extender.preemption import process_preemption
from scheduler_core.framework import (
    ClusterAPI,
    CycleState,
    NodeInfo,
    Nominator,
    PodInfo,
    SnapshotLister,
    Status,
    WaitingPod,
)
from scheduler_core.framework.storage import scan
from scheduler_core.metrics.scheduler_metrics import SchedulerMetrics
from scheduler_core.runtime.waiting_pods import WaitingPods

if TYPE_CHECKING:
    from scheduler_core.extender.client import HTTPExtender
    from scheduler_core.runtime.framework import Framework


T = TypeVar("T")

# The PreFilter extensions' method names (``Framework.run_pre_filter_extension_*``).
_ADD_POD = "add_pod"
_REMOVE_POD = "remove_pod"


class _NoNominator:
    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return []


class FrameworkHandle:
    """Implements :class:`scheduler_core.framework.Handle`."""

    def __init__(
        self,
        profile_name: str,
        *,
        snapshot: Callable[[], SnapshotLister],
        api: ClusterAPI,
        waiting_pods: WaitingPods | None = None,
        nominator: Nominator | None = None,
        objects: Callable[[str], Iterable[Any]] | None = None,
        lookup: Callable[[str, str, str], Any | None] | None = None,
        objects_version: Callable[[str], int | None] | None = None,
        tenant_namespace: str | None = None,
        spawn: Callable[[Coroutine[Any, Any, None]], asyncio.Task[None]] | None = None,
        activate: Callable[[Iterable[PodInfo]], None] | None = None,
        shared: dict[str, Any] | None = None,
        metrics: SchedulerMetrics | None = None,
    ) -> None:
        self._shared = shared if shared is not None else {}
        self._spawn = spawn
        self._activate = activate
        # The scheduler's metrics: the framework times its extension points into them, and
        # plugins report preemption through them (``Handle.metrics``).
        self.metrics = metrics if metrics is not None else SchedulerMetrics()
        self.profile_name = profile_name
        self.tenant_namespace = tenant_namespace
        self._framework: Framework | None = None
        # Per PreFilter extension method, the plugins of the framework that have it.
        self._extension_plugins: dict[str, tuple[str, ...]] = {}
        self.snapshot = snapshot
        self.api = api
        self.waiting_pods = waiting_pods if waiting_pods is not None else WaitingPods()
        self.nominator: Nominator = nominator or _NoNominator()
        self._objects = objects
        self._lookup = lookup
        self._objects_version = objects_version
        # The profile's HTTP extenders (upstream Handle.Extenders()), set when the profile is built.
        self.extenders: Sequence[HTTPExtender] = ()

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting_pods.get(uid)

    def iterate_over_waiting_pods(self) -> Iterator[WaitingPod]:
        return iter(self.waiting_pods)

    def reject_waiting_pod(self, uid: str) -> bool:
        waiting = self.waiting_pods.get(uid)
        if waiting is None:
            return False
        waiting.reject("", "removed")
        return True

    def objects(self, kind: str) -> Iterable[Any]:
        return self._objects(kind) if self._objects is not None else ()

    def lookup(self, kind: str, namespace: str, name: str) -> Any | None:
        if self._lookup is not None:
            return self._lookup(kind, namespace, name)
        return scan(self.objects(kind), namespace, name)  # a backend without an index

    def objects_version(self, kind: str) -> int | None:
        return self._objects_version(kind) if self._objects_version is not None else None

    def activate(self, pods: Iterable[PodInfo]) -> None:
        if self._activate is not None:
            self._activate(pods)

    def shared(self, name: str, factory: Callable[[], T]) -> T:
        if name not in self._shared:
            self._shared[name] = factory()
        found: T = self._shared[name]
        return found

    def start_task(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        if self._spawn is not None:
            return self._spawn(work)
        return asyncio.get_running_loop().create_task(work)

    async def extenders_process_preemption(
        self, pod: PodInfo, victims: dict[str, tuple[list[PodInfo], int]]
    ) -> tuple[dict[str, tuple[list[PodInfo], int]], Status | None]:
        return await process_preemption(self.extenders, pod, victims, self.snapshot())

    def attach(self, framework: Framework) -> None:
        """Called by the Framework this handle serves, so plugins can run its plugins."""
        self._framework = framework
        self._extension_plugins = {}

    def _fwk(self) -> Framework:
        if self._framework is None:
            raise RuntimeError(f"handle of profile {self.profile_name} is not attached to a framework")
        return self._framework

    def run_filter_with_nominated_pods(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        nominated = self.nominator.nominated_pods_for_node(node.name)
        if not nominated:  # the common case in preemption's dry runs: no ghost to add
            return self._fwk().run_filter(state, pod, node)
        return self._fwk().run_filter_with_nominated_pods(state, pod, node, nominated)

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo
    ) -> Status | None:
        if not self._extends(state, _ADD_POD):
            return None
        return self._fwk().run_pre_filter_extension_add_pod(state, pod, to_add, node)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        if not self._extends(state, _REMOVE_POD):
            return None
        return self._fwk().run_pre_filter_extension_remove_pod(state, pod, to_remove, node)

    def runs_remove_pod_extension(self, state: CycleState) -> bool:
        return self._extends(state, _REMOVE_POD)

    def runs_add_pod_extension(self, state: CycleState) -> bool:
        return self._extends(state, _ADD_POD)

    def filter_rejects_changed(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, removed: Sequence[PodInfo], added: Sequence[PodInfo]
    ) -> bool:
        return self._fwk().filter_rejects_changed(state, pod, node, removed, added)

    def _extends(self, state: CycleState, method: str) -> bool:
        """Whether a PreFilter plugin with the extension ``method`` runs in ``state`` (its
        PreFilter did not Skip). Without one the framework's loop finds nothing to call, and
        preemption's dry runs ask per victim: PreemptionPVs, 1000 nodes, 1.3 million times."""
        names = self._extension_plugins.get(method)
        if names is None:
            plugins = self._fwk().pre_filter_plugins
            names = tuple(p.name for p in plugins if getattr(p, method, None) is not None)
            self._extension_plugins[method] = names
        return not state.skip_filter_plugins.issuperset(names)
