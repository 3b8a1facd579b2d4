"""The snapshot a scheduling cycle reads: nodes in node-tree order, and their columns.

Upstream ``pkg/scheduler/backend/cache/snapshot.go`` copies every changed NodeInfo at the
start of a cycle so that watch events cannot change what the cycle sees. Here the cycle is
synchronous Python in the one asyncio loop, so no event can interleave with it, and the
snapshot holds the cache's own NodeInfos (no copy). A NodeInfo keeps its row of the
snapshot's :class:`NodeColumns` in step itself, so an assume or forget during the cycle is
visible at once to per-node and batch plugins alike. The cache builds a new Snapshot only
when the set or the order of nodes changed (see :mod:`scheduler_core.cache.cache`).

The lists of nodes with pods that have (anti-)affinity are derived lazily: the cache keeps
per-node counts and calls :meth:`Snapshot.affinity_changed` only when a node starts or stops
having such pods, as upstream re-creates those lists only on such a flip. Where a plugin only
asks whether there is any such node, ``any_pods_with_*`` answers without building the list:
with hostname anti-affinity every bound pod flips a node, and rebuilding the list of 5,000
nodes twice a cycle cost more than the plugin's own work.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from scheduler_core.framework.columns import NodeColumns
from scheduler_core.framework.types import NodeInfo


class Snapshot:
    """The cycle's nodes (implements :class:`scheduler_core.framework.SnapshotLister`)."""

    __slots__ = ("_affinity", "_anti_affinity", "_by_name", "_infos", "_with_affinity", "_with_anti", "columns")

    def __init__(
        self,
        infos: Sequence[NodeInfo],
        *,
        pods_with_affinity: Mapping[str, int] | None = None,
        pods_with_required_anti_affinity: Mapping[str, int] | None = None,
    ) -> None:
        """Attach ``infos`` (real nodes, in order) to fresh columns.

        The two mappings count, per node name, the pods with affinity and with required
        anti-affinity; the cache passes its live counters. Without them they are counted
        here once, from the pods.
        """
        self._infos: list[NodeInfo] = list(infos)
        self._by_name: dict[str, NodeInfo] = {info.name: info for info in self._infos}
        self.columns = NodeColumns(self._infos)
        if pods_with_affinity is None:
            pods_with_affinity = {i.name: sum(p.has_affinity for p in i.pods) for i in self._infos}
        if pods_with_required_anti_affinity is None:
            pods_with_required_anti_affinity = {
                i.name: sum(p.has_required_anti_affinity for p in i.pods) for i in self._infos
            }
        self._affinity = pods_with_affinity
        self._anti_affinity = pods_with_required_anti_affinity
        self._with_affinity: list[NodeInfo] | None = None
        self._with_anti: list[NodeInfo] | None = None

    def list(self) -> Sequence[NodeInfo]:
        return self._infos

    def get(self, node_name: str) -> NodeInfo | None:
        info = self._by_name.get(node_name)
        # A node removed since this snapshot was built is not there any more (upstream Get).
        return info if info is not None and info.node is not None else None

    def have_pods_with_affinity(self) -> Sequence[NodeInfo]:
        """Nodes with at least one pod declaring pod affinity or anti-affinity, in order."""
        if self._with_affinity is None:
            counts = self._affinity
            self._with_affinity = [info for info in self._infos if counts.get(info.name)]
        return self._with_affinity

    def have_pods_with_required_anti_affinity(self) -> Sequence[NodeInfo]:
        """Nodes with at least one pod declaring required pod anti-affinity, in order."""
        if self._with_anti is None:
            counts = self._anti_affinity
            self._with_anti = [info for info in self._infos if counts.get(info.name)]
        return self._with_anti

    def any_pods_with_affinity(self) -> bool:
        """Whether :meth:`have_pods_with_affinity` is non-empty, without building the list
        (stops at the first such node): PreScore asks only this, after every flip."""
        if self._with_affinity is not None:
            return bool(self._with_affinity)
        return self._any_listed(self._affinity)

    def any_pods_with_required_anti_affinity(self) -> bool:
        """Whether :meth:`have_pods_with_required_anti_affinity` is non-empty, without
        building the list: PreFilter asks only this."""
        if self._with_anti is not None:
            return bool(self._with_anti)
        return self._any_listed(self._anti_affinity)

    def _any_listed(self, counts: Mapping[str, int]) -> bool:
        """Whether a node of this snapshot has a positive count: one look per node that has
        such pods (the cache's counters hold only those), not one per node of the snapshot,
        which cost every pod of a workload without affinity a pass over 5,000 nodes twice."""
        nodes = self._by_name
        return any(count and name in nodes for name, count in counts.items())

    def affinity_changed(self, *, affinity: bool = True, required_anti_affinity: bool = True) -> None:
        """A node started or stopped having such pods: re-derive that list on next use."""
        if affinity:
            self._with_affinity = None
        if required_anti_affinity:
            self._with_anti = None

    def detach(self) -> None:
        """Release the NodeInfos from this snapshot's columns (a newer snapshot replaces it)."""
        self.columns.detach()

    def __len__(self) -> int:
        return len(self._infos)

    def __repr__(self) -> str:
        return f"Snapshot(nodes={len(self._infos)})"
