"""NodeName: a pod with ``spec.nodeName`` fits only the node of that name.

Upstream: ``pkg/scheduler/framework/plugins/nodename/node_name.go``. PreFilter narrows the
cycle to the named node (the PreFilterResult), Filter rejects every other node as
UnschedulableAndUnresolvable, so preemption never looks elsewhere. A rejected pod waits for
a node to be added; no hint is needed (upstream retries it on every NodeAdd).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np

from scheduler_core.framework import (
    NODE_ADD,
    BoolArray,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeColumns,
    NodeInfo,
    PodInfo,
    PreFilterResult,
    Status,
)
from scheduler_core.plugins import names

NAME = names.NODE_NAME

ERR_REASON = "node(s) didn't match the requested node name"


def fits(pod: PodInfo, node: NodeInfo) -> bool:
    return not pod.node_name or pod.node_name == node.name


class NodeName:
    name = NAME
    args_model = None

    def __init__(self, args: object, handle: Handle | None) -> None:
        self._handle = handle
        self._row_cache: tuple[weakref.ref[NodeColumns], int, dict[str, int]] | None = None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(NODE_ADD)]

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.node_name:
            return None, None
        return PreFilterResult(frozenset({pod.node_name})), None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None if fits(pod, node) else Status.unresolvable(ERR_REASON)

    def filter_batch(self, state: CycleState, pod: PodInfo, columns: NodeColumns) -> BoolArray | None:
        if not pod.node_name:
            return np.ones(columns.size, dtype=np.bool_)
        mask = np.zeros(columns.size, dtype=np.bool_)
        row = self._rows(columns).get(pod.node_name)
        if row is not None:
            mask[row] = True
        return mask

    def _rows(self, columns: NodeColumns) -> dict[str, int]:
        """Row by node name, kept until the columns' nodes change (a list scan of thousands
        of names costs more than the whole batch filter)."""
        cached = self._row_cache
        if cached is None or cached[0]() is not columns or cached[1] != columns.version:
            cached = (weakref.ref(columns), columns.version, {n: row for row, n in enumerate(columns.names)})
            self._row_cache = cached
        return cached[2]
