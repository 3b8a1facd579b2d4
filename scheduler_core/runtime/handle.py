"""The Handle given to plugins: one per profile, over services the scheduler shares."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from scheduler_core.framework import ClusterAPI, Nominator, PodInfo, SnapshotLister, WaitingPod
from scheduler_core.runtime.waiting_pods import WaitingPods


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
    ) -> None:
        self._profile_name = profile_name
        self._snapshot = snapshot
        self._api = api
        self.waiting_pods = waiting_pods if waiting_pods is not None else WaitingPods()
        self._nominator: Nominator = nominator or _NoNominator()
        self._objects = objects

    @property
    def profile_name(self) -> str:
        return self._profile_name

    def snapshot(self) -> SnapshotLister:
        return self._snapshot()

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

    @property
    def nominator(self) -> Nominator:
        return self._nominator

    @property
    def api(self) -> ClusterAPI:
        return self._api

    def objects(self, kind: str) -> Iterable[Any]:
        return self._objects(kind) if self._objects is not None else ()
