"""The scheduler cache: nodes and the pods on them, assumed pods included.

Upstream ``pkg/scheduler/backend/cache/cache.go`` (with ``interface.go``, whose docstring
draws the lifecycle below). The cache is pod-centric and updated incrementally from watch
events; the scheduler adds the pods it has just placed ("assumes" them) before their binding
is confirmed, so the next cycle already counts them.

Pod lifecycle in the cache (v1.36.3 ``interface.go``; assumed pods no longer expire there)::

       +-------------------------------------------+  +----+
       |                            Add            |  |    |
       |                                           |  |    | Update
       +      Assume                Add            v  v    |
    Initial +--------> Assumed +------------> Added <--+
       ^                +                        +
       |                |                        | Remove
       |                |                        v
       +----------------+                     Deleted
             Forget

"Initial" and "Deleted" pods are not in the cache. As upstream assumes: no pod is assumed
twice; a pod may be added without going through the scheduler (Add with no Assume); a pod that
was not added is neither updated nor removed. An assumed pod leaves the cache only by Forget
(its binding failed) or becomes Added when the watch confirms it.

The caller adds only pods bound to a node and not terminated (phase Succeeded or Failed),
as upstream's event handlers do; the cache itself accepts what it is given.

Nodes: a pod whose node the cache does not know yet gets a placeholder NodeInfo (upstream's
"imaginary node", ``node is None``), left out of the snapshot until the node arrives. Removing
a node keeps a placeholder while pods remain on it, because pod deletions come on another
watch and may arrive later; the placeholder goes with its last pod.

Snapshot: upstream copies every NodeInfo changed since the last cycle into the snapshot, by
generation. Here the scheduling cycle is synchronous Python in the one asyncio loop, so no
event interleaves with it, and the snapshot holds the cache's own NodeInfos, whose
``add_pod``/``remove_pod``/``set_node`` keep their :class:`NodeColumns` row in step. So the
cache only tracks whether the node *set or order* changed (a node added or removed, or moved
to another zone); only then does :meth:`Cache.update_snapshot` list the node tree again and
build a new :class:`Snapshot` with fresh columns, detaching the old ones. Otherwise it
returns the same snapshot, at no cost.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from scheduler_core.cache.errors import CacheError
from scheduler_core.cache.images import ImageStates
from scheduler_core.cache.node_tree import NodeTree, node_name
from scheduler_core.cache.snapshot import Snapshot
from scheduler_core.framework import Manifest
from scheduler_core.framework.resource import Resource
from scheduler_core.framework.types import NodeInfo, NodeName, PodInfo, PodUID

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _PodState:
    pod: PodInfo


def _describe(pod: PodInfo) -> str:
    """Upstream's ``%v(%v)`` of pod key (the UID) and ``klog.KObj``."""
    return f"{pod.uid}({pod.key})"


class Cache:
    """Nodes and the pods assigned or assumed to them; the source of every snapshot."""

    def __init__(self) -> None:
        self._nodes: dict[str, NodeInfo] = {}  # real nodes and placeholders
        self._tree = NodeTree()
        self._pods: dict[PodUID, _PodState] = {}
        self._assumed: set[PodUID] = set()
        self._images = ImageStates()
        # Pods with (required anti-)affinity per node name, for the snapshot's lists.
        self._affinity: dict[str, int] = {}
        self._anti_affinity: dict[str, int] = {}
        self._snapshot: Snapshot | None = None
        self._nodes_changed = True

    # -- pods ------------------------------------------------------------------------------
    def assume_pod(self, pod: PodInfo) -> None:
        """Count ``pod`` on ``pod.node_name`` before its binding is confirmed."""
        if pod.uid in self._pods:
            raise CacheError(f"pod {_describe(pod)} is in the cache, so can't be assumed")
        self._add_pod(pod, assumed=True)

    def forget_pod(self, pod: PodInfo) -> None:
        """Undo ``assume_pod`` (the binding failed, or a later phase rejected the pod)."""
        state = self._pods.get(pod.uid)
        if state is not None and state.pod.node_name != pod.node_name:
            raise CacheError(
                f"pod {_describe(pod)} was assumed on {pod.node_name} but assigned to {state.pod.node_name}"
            )
        if state is None or pod.uid not in self._assumed:
            raise CacheError(f"pod {_describe(pod)} wasn't assumed so cannot be forgotten")
        self._remove_pod(state.pod)

    def add_pod(self, pod: PodInfo) -> None:
        """An assigned pod seen in the cluster: confirms an assumed one (moving it if it was
        bound elsewhere), or adds one bound by someone else."""
        self._require_node_name(pod)
        state = self._pods.get(pod.uid)
        if state is not None and pod.uid in self._assumed:
            # Replace the assumed copy, so the cache holds the pod as the cluster has it.
            self._remove_pod(state.pod)
            self._add_pod(pod, assumed=False)
            if state.pod.node_name != pod.node_name:
                log.info(
                    "Pod was added to a different node than it was assumed: pod=%s assumedNode=%s currentNode=%s",
                    pod.key,
                    state.pod.node_name,
                    pod.node_name,
                )
        elif state is None:
            self._add_pod(pod, assumed=False)
        else:
            raise CacheError(f"pod {_describe(pod)} was already in added state")

    def update_pod(self, old: PodInfo, new: PodInfo) -> None:
        """An added pod changed (labels, resources...); it cannot change node."""
        state = self._pods.get(old.uid)
        if state is None:
            raise CacheError(f"pod {_describe(old)} is not added to scheduler cache, so cannot be updated")
        # An assumed pod gets Add before any Update, which makes it Added.
        if old.uid in self._assumed:
            raise CacheError(f"assumed pod {_describe(old)} should not be updated")
        if state.pod.node_name != new.node_name:
            raise CacheError(
                f"pod {_describe(old)} updated on a different node ({new.node_name}) than previously added to "
                f"({state.pod.node_name}); scheduler cache is corrupted"
            )
        self._remove_pod(state.pod)
        self._add_pod(new, assumed=False)

    def remove_pod(self, pod: PodInfo) -> None:
        """A pod was deleted (or finished); works for assumed and added pods."""
        state = self._pods.get(pod.uid)
        if state is None:
            raise CacheError(f"pod {_describe(pod)} is not found in scheduler cache, so cannot be removed from it")
        # An empty node name is possible when a Delete was missed and the pod comes from the
        # informer's last known state; then the cache's own copy tells the node.
        if pod.node_name and state.pod.node_name != pod.node_name:
            raise CacheError(
                f"pod {_describe(pod)} was added to {state.pod.node_name} but removed from {pod.node_name}; "
                "scheduler cache is corrupted"
            )
        self._remove_pod(state.pod)

    def is_assumed_pod(self, pod: PodInfo) -> bool:
        return pod.uid in self._assumed

    def get_pod(self, pod: PodInfo) -> PodInfo | None:
        """The cache's copy of ``pod`` (by UID), even if its node was removed meanwhile."""
        state = self._pods.get(pod.uid)
        return state.pod if state is not None else None

    # -- nodes -----------------------------------------------------------------------------
    def add_node(self, node: Manifest) -> NodeInfo:
        """A node appeared; returns the cache's NodeInfo for it (read only)."""
        name = node_name(node)
        info = self._nodes.get(name)
        if info is not None and info.node is not None:
            # Already known (a re-list): an update, which also moves it if its zone changed.
            return self.update_node(info.node, node)
        if info is None:
            info = self._nodes[name] = NodeInfo()
        self._tree.add_node(node)
        info.image_states = self._images.add_node(node)
        info.set_node(node)
        self._nodes_changed = True
        return info

    def update_node(self, old: Manifest | None, new: Manifest) -> NodeInfo:
        """A node changed. The NodeInfo and its columns row are updated in place; the snapshot
        is rebuilt only if the node moved to another zone (its place in the order changed).

        The node tree is updated from the node the cache holds, not from ``old``, so the tree
        stays right even if an event was missed; an unknown node is added.
        """
        info = self._nodes.get(node_name(new))
        if info is None or info.node is None:
            return self.add_node(new)
        if self._tree.update_node(info.node, new):
            self._nodes_changed = True
        self._images.remove_node(info.node)
        info.image_states = self._images.add_node(new)
        info.set_node(new)
        return info

    def remove_node(self, name: str) -> None:
        """A node was deleted; its pods stay on a placeholder until their deletions arrive."""
        info = self._nodes.get(name)
        if info is None or info.node is None:
            raise CacheError(f"node {name} is not found")
        self._tree.remove_node(info.node)
        self._images.remove_node(info.node)
        # Unset the node even when the NodeInfo goes: an older snapshot may still hold it.
        info.node = None
        info.image_states = {}
        if not info.pods:
            del self._nodes[name]
        self._nodes_changed = True

    def get_node(self, name: str) -> NodeInfo | None:
        """The NodeInfo for ``name``, placeholder or real (read only)."""
        return self._nodes.get(name)

    # -- snapshot and introspection -------------------------------------------------------
    def update_snapshot(self) -> Snapshot:
        """The snapshot for the next cycle: the same object unless nodes were added, removed
        or moved to another zone since the last call."""
        if self._snapshot is not None and not self._nodes_changed:
            return self._snapshot
        infos = [self._nodes[name] for name in self._tree.list()]
        if self._snapshot is not None:
            self._snapshot.detach()
        self._snapshot = Snapshot(
            infos, pods_with_affinity=self._affinity, pods_with_required_anti_affinity=self._anti_affinity
        )
        self._nodes_changed = False
        return self._snapshot

    def node_count(self) -> int:
        """Nodes in the cache, placeholders included (as upstream ``NodeCount``)."""
        return len(self._nodes)

    def assumed_count(self) -> int:
        """Pods assumed and not yet confirmed by a watch event (upstream ``len(assumedPods)``)."""
        return len(self._assumed)

    def pod_count(self) -> int:
        """Pods in the cache, assumed ones and those on removed nodes included."""
        return sum(len(info.pods) for info in self._nodes.values())

    def dump(self) -> dict[str, Any]:
        """A JSON-ready picture of the cache, for debugging and ``explain``."""
        return {
            "nodes": {name: _dump_node(info, self._assumed) for name, info in sorted(self._nodes.items())},
            "assumedPods": {uid: _dump_assumed(self._pods[uid]) for uid in sorted(self._assumed)},
            "images": len(self._images),
            "snapshotStale": self._nodes_changed,
        }

    # -- internals -------------------------------------------------------------------------
    @staticmethod
    def _require_node_name(pod: PodInfo) -> None:
        if not pod.node_name:
            raise CacheError(f"pod {_describe(pod)} has no node name; only assigned pods go to the cache")

    def _add_pod(self, pod: PodInfo, *, assumed: bool) -> None:
        self._require_node_name(pod)
        name = pod.node_name
        info = self._nodes.get(name)
        if info is None:
            info = self._nodes[name] = NodeInfo()
            info.name = NodeName(name)  # a placeholder until the node arrives
        info.add_pod(pod)
        self._count_affinity(name, pod, 1)
        self._pods[pod.uid] = _PodState(pod)
        if assumed:
            self._assumed.add(pod.uid)

    def _remove_pod(self, pod: PodInfo) -> None:
        """Remove the cache's own copy ``pod`` from its node and forget its state."""
        name = pod.node_name
        info = self._nodes.get(name)
        if info is None:
            log.error("Node not found when trying to remove pod: node=%s pod=%s", name, pod.key)
        else:
            if not info.remove_pod(pod):
                raise CacheError(f"no corresponding pod {pod.name} in pods of node {name}")
            self._count_affinity(name, pod, -1)
            if not info.pods and info.node is None:
                del self._nodes[name]
        self._pods.pop(pod.uid, None)
        self._assumed.discard(pod.uid)

    def _count_affinity(self, name: str, pod: PodInfo, sign: int) -> None:
        affinity = pod.has_affinity and _bump(self._affinity, name, sign)
        anti = pod.has_required_anti_affinity and _bump(self._anti_affinity, name, sign)
        if (affinity or anti) and self._snapshot is not None:
            self._snapshot.affinity_changed(affinity=affinity, required_anti_affinity=anti)


def _bump(counts: dict[str, int], key: str, sign: int) -> bool:
    """Add ``sign`` to ``counts[key]``; True when the count went from or to zero."""
    count = counts.get(key, 0) + sign
    if count:
        counts[key] = count
    else:
        del counts[key]
    return count == (1 if sign > 0 else 0)


def _resource(resource: Resource) -> dict[str, int]:
    result = {
        "milliCPU": resource.milli_cpu,
        "memory": resource.memory,
        "ephemeralStorage": resource.ephemeral_storage,
        "pods": resource.allowed_pod_number,
    }
    result.update(resource.scalar_resources)
    return result


def _dump_assumed(state: _PodState) -> dict[str, Any]:
    return {
        "pod": state.pod.key,
        "node": state.pod.node_name,
    }


def _dump_node(info: NodeInfo, assumed: set[PodUID]) -> dict[str, Any]:
    return {
        "placeholder": info.node is None,
        "pods": sorted(p.key for p in info.pods),
        "assumedPods": sorted(p.key for p in info.pods if p.uid in assumed),
        "allocatable": _resource(info.allocatable),
        "requested": _resource(info.requested),
        "nonZeroRequested": _resource(info.non_zero_requested),
        "snapshotRow": info.row,
    }


def new_snapshot(nodes: Iterable[Manifest], pods: Iterable[PodInfo] = ()) -> Snapshot:
    """A snapshot of ``nodes`` with assigned ``pods`` (upstream ``NewSnapshot``), for tests
    and for one-off evaluations; pods on nodes not listed are left out, as placeholders are."""
    cache = Cache()
    for node in nodes:
        cache.add_node(node)
    for pod in pods:
        cache.add_pod(pod)
    return cache.update_snapshot()
