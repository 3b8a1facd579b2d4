"""Node utilization after a simulation: requested CPU and memory over allocatable, pod count.

Built from the in-memory cluster's pods with the scheduler's own :class:`NodeInfo` accounting
(the one pod-requests function), for what-if's before/after and the HTML report's bars.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from scheduler_core.framework import Manifest, NodeInfo, manifest
from scheduler_core.simulator.run import Simulation


@dataclass(frozen=True, slots=True)
class Usage:
    """Requested over allocatable on one node."""

    cpu: float  # fraction of allocatable CPU requested
    memory: float
    pods: int

    def to_json(self) -> dict[str, Any]:
        return {"cpu": round(self.cpu, 4), "memory": round(self.memory, 4), "pods": self.pods}


def node_usage(nodes: Sequence[Manifest], sim: Simulation) -> dict[str, Usage]:
    """Every node of ``nodes``, in order, with the pods on it at the end of ``sim`` (as the
    scheduler's cache accounts them: bound pods, terminated ones left out)."""
    usage = {}
    for node in nodes:
        name = manifest.meta(node).get("name", "")
        info = sim.scheduler.cache.get_node(name) or NodeInfo(node)
        usage[name] = Usage(
            _fraction(info.requested.milli_cpu, info.allocatable.milli_cpu),
            _fraction(info.requested.memory, info.allocatable.memory),
            len(info.pods),
        )
    return usage


def _fraction(used: int, total: int) -> float:
    return used / total if total > 0 else 0.0
