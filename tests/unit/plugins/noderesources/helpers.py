"""Upstream noderesources tests' vocabulary, so that their table cases can be copied with their
numbers: a container's requests as ``newResourcePod`` writes them (:func:`usage`) and a scorer
that checks batch == per node. Pods and nodes are the kit's (``tests.wrappers``:
``make_pod().req(usage(1, 1))``, ``make_node().capacity_only(...)`` as ``st.MakeNode().Capacity``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from scheduler_core.framework import CycleState, IntArray, NodeColumns, NodeInfo, PodInfo, Status

# Upstream's bare ``st.MakePod()`` has no containers at all; the framework's pod parsing cannot
# take that yet, so it stands in as one container requesting cpu and memory 0 explicitly, which
# requests (and non-zero requests) exactly the same: nothing.
NOTHING = {"cpu": "0", "memory": "0"}


def usage(
    milli_cpu: int = 0, memory: int = 0, ephemeral: int = 0, scalars: Mapping[str, int] | None = None
) -> dict[str, str]:
    """A container's requests as upstream ``newResourcePod`` writes a ``framework.Resource``:
    cpu, memory, pods and ephemeral-storage always present (possibly 0)."""
    reqs = {"cpu": f"{milli_cpu}m", "memory": str(memory), "pods": "0", "ephemeral-storage": str(ephemeral)}
    reqs.update({name: str(q) for name, q in (scalars or {}).items()})
    return reqs


class ScorePlugin(Protocol):
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]: ...

    def score_batch(self, state: CycleState, pod: PodInfo, columns: NodeColumns, rows: IntArray) -> IntArray | None: ...


def scores(plugin: ScorePlugin, state: CycleState, pod: PodInfo, infos: Sequence[NodeInfo]) -> list[int]:
    """Per-node scores, after checking that score_batch over the columns gives the same."""
    columns = NodeColumns(infos)
    per_node = []
    for info in infos:
        score, status = plugin.score(state, pod, info)
        assert status is None
        per_node.append(score)
    batch = plugin.score_batch(state, pod, columns, np.arange(len(infos), dtype=np.int64))
    assert batch is not None
    assert batch.tolist() == per_node
    return per_node
