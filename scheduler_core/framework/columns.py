"""Columnar arrays over a snapshot's nodes, for batch plugins.

A per-node Python loop over thousands of nodes and ten plugins cannot keep up with
kube-scheduler, so a snapshot also keeps its nodes' allocatable and requested resources,
pod counts, labels and taints as NumPy arrays, one row per node in snapshot order. Rows are
updated in place when a pod is added to or removed from a node (assume, forget, bind,
delete), so a batch plugin always sees what the per-node form would see.

Built-in plugins may offer ``filter_batch``/``score_batch`` over these arrays; the runtime
uses them when present and calls the per-node form otherwise. Both forms must give
identical results (tested with generated clusters).

Label and taint columns are built lazily, on first use after a node change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from scheduler_core.framework.resource import CPU, EPHEMERAL_STORAGE, MEMORY
from scheduler_core.framework.types import DO_NOT_SCHEDULE_EFFECTS, tolerations_tolerate_taint

if TYPE_CHECKING:
    from scheduler_core.framework.types import NodeInfo, PodInfo, Taint, Toleration

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(slots=True)
class LabelColumn:
    """One label key over all nodes: an integer code per node (-1 when absent)."""

    codes: npt.NDArray[np.int32]
    vocab: dict[str, int]

    def mask_in(self, values: Sequence[str]) -> BoolArray:
        """Nodes whose label is one of ``values`` (absent nodes are False)."""
        lut = np.zeros(len(self.vocab) + 1, dtype=np.bool_)  # last slot: code -1 (absent)
        for value in values:
            code = self.vocab.get(value)
            if code is not None:
                lut[code] = True
        return lut[self.codes]

    def present(self) -> BoolArray:
        return self.codes >= 0


@dataclass(slots=True)
class TaintColumns:
    """The distinct taints of the snapshot and which node carries which."""

    taints: list[Taint]
    matrix: BoolArray  # nodes x distinct taints

    def untolerated(self, tolerations: Sequence[Toleration]) -> BoolArray:
        """Nodes with a NoSchedule/NoExecute taint that ``tolerations`` do not tolerate (the
        batch form of :func:`~scheduler_core.framework.types.find_untolerated_taint`): each
        distinct taint is checked once, then one reduction covers every node."""
        bad = [
            j
            for j, taint in enumerate(self.taints)
            if taint.effect in DO_NOT_SCHEDULE_EFFECTS and not tolerations_tolerate_taint(tolerations, taint)
        ]
        if not bad:
            return np.zeros(len(self.matrix), np.bool_)
        return np.asarray(self.matrix[:, bad].any(axis=1), dtype=np.bool_)


class NodeColumns:
    """Columnar arrays over ``infos`` (the snapshot's NodeInfos, in order)."""

    def __init__(self, infos: Sequence[NodeInfo]) -> None:
        n = len(infos)
        self.infos: list[NodeInfo] = list(infos)
        self.names: list[str] = [info.name for info in infos]
        self.size = n
        self.alloc_cpu: IntArray = np.zeros(n, np.int64)
        self.alloc_memory: IntArray = np.zeros(n, np.int64)
        self.alloc_ephemeral: IntArray = np.zeros(n, np.int64)
        self.alloc_pods: IntArray = np.zeros(n, np.int64)
        self.req_cpu: IntArray = np.zeros(n, np.int64)
        self.req_memory: IntArray = np.zeros(n, np.int64)
        self.req_ephemeral: IntArray = np.zeros(n, np.int64)
        self.pod_count: IntArray = np.zeros(n, np.int64)
        self.nz_cpu: IntArray = np.zeros(n, np.int64)
        self.nz_memory: IntArray = np.zeros(n, np.int64)
        self.unschedulable: BoolArray = np.zeros(n, np.bool_)
        self._scalar_alloc: dict[str, IntArray] = {}
        self._scalar_req: dict[str, IntArray] = {}
        self._labels: dict[str, LabelColumn] = {}
        self._taints: TaintColumns | None = None
        self.version = 0  # bumped by every node-level change, for plugins that cache derived data
        for row, info in enumerate(infos):
            info.row = row
            info.columns = self
            self._fill_node(row, info)
            self._fill_pods(row, info)

    # -- maintenance, called by NodeInfo ------------------------------------------------
    def _fill_node(self, row: int, info: NodeInfo) -> None:
        alloc = info.allocatable
        self.alloc_cpu[row] = alloc.milli_cpu
        self.alloc_memory[row] = alloc.memory
        self.alloc_ephemeral[row] = alloc.ephemeral_storage
        self.alloc_pods[row] = alloc.allowed_pod_number
        self.unschedulable[row] = info.unschedulable
        for name, amount in alloc.scalar_resources.items():
            self._scalar_column(self._scalar_alloc, name)[row] = amount

    def _fill_pods(self, row: int, info: NodeInfo) -> None:
        req = info.requested
        self.req_cpu[row] = req.milli_cpu
        self.req_memory[row] = req.memory
        self.req_ephemeral[row] = req.ephemeral_storage
        self.pod_count[row] = len(info.pods)
        self.nz_cpu[row] = info.non_zero_requested.milli_cpu
        self.nz_memory[row] = info.non_zero_requested.memory
        for name, amount in req.scalar_resources.items():
            self._scalar_column(self._scalar_req, name)[row] = amount

    def _scalar_column(self, table: dict[str, IntArray], name: str) -> IntArray:
        column = table.get(name)
        if column is None:
            column = table[name] = np.zeros(self.size, np.int64)
        return column

    def node_changed(self, info: NodeInfo) -> None:
        row = info.row
        for column in self._scalar_alloc.values():
            column[row] = 0
        self._fill_node(row, info)
        self.names[row] = info.name
        self._labels.clear()
        self._taints = None
        self.version += 1

    def pods_changed(self, info: NodeInfo, pod_info: PodInfo, sign: int) -> None:
        """The node's sums as NodeInfo now has them (int64, wrapped as upstream's)."""
        row = info.row
        req = info.requested
        self.req_cpu[row] = req.milli_cpu
        self.req_memory[row] = req.memory
        self.req_ephemeral[row] = req.ephemeral_storage
        self.pod_count[row] += sign
        self.nz_cpu[row] = info.non_zero_requested.milli_cpu
        self.nz_memory[row] = info.non_zero_requested.memory
        for name in pod_info.requests.scalar_resources:
            self._scalar_column(self._scalar_req, name)[row] = req.scalar_resources.get(name, 0)

    def detach(self) -> None:
        """Release the NodeInfos (the snapshot was rebuilt)."""
        for info in self.infos:
            if info.columns is self:
                info.columns = None
                info.row = -1

    # -- read API for batch plugins -------------------------------------------------------
    def allocatable(self, resource: str) -> IntArray:
        if resource == CPU:
            return self.alloc_cpu
        if resource == MEMORY:
            return self.alloc_memory
        if resource == EPHEMERAL_STORAGE:
            return self.alloc_ephemeral
        return self._scalar_alloc.get(resource, np.zeros(self.size, np.int64))

    def requested(self, resource: str) -> IntArray:
        if resource == CPU:
            return self.req_cpu
        if resource == MEMORY:
            return self.req_memory
        if resource == EPHEMERAL_STORAGE:
            return self.req_ephemeral
        return self._scalar_req.get(resource, np.zeros(self.size, np.int64))

    def label(self, key: str) -> LabelColumn:
        column = self._labels.get(key)
        if column is None:
            vocab: dict[str, int] = {}
            codes = np.full(self.size, -1, np.int32)
            for row, info in enumerate(self.infos):
                value = info.labels.get(key)
                if value is not None:
                    codes[row] = vocab.setdefault(value, len(vocab))
            column = self._labels[key] = LabelColumn(codes, vocab)
        return column

    def taints(self) -> TaintColumns:
        if self._taints is None:
            index: dict[Taint, int] = {}
            for info in self.infos:
                for taint in info.taints:
                    index.setdefault(taint, len(index))
            matrix = np.zeros((self.size, len(index)), np.bool_)
            for row, info in enumerate(self.infos):
                for taint in info.taints:
                    matrix[row, index[taint]] = True
            self._taints = TaintColumns(list(index), matrix)
        return self._taints
