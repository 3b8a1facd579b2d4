"""Node utilization after a simulation: requested CPU and memory over allocatable, pod count.

Built from the in-memory cluster's pods with the scheduler's own :class:`NodeInfo` accounting
(the one pod-requests function), for what-if's before/after and the HTML report's bars.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler_core.framework import NodeInfo, PodInfo
from scheduler_core.simulator.run import Simulation


@dataclass(frozen=True, slots=True)
class Usage:
    """Requested over allocatable on one node."""

    cpu: float  # fraction of allocatable CPU requested
    memory: float
    pods: int

    def to_json(self) -> dict[str, Any]:
        return {"cpu": round(self.cpu, 4), "memory": round(self.memory, 4), "pods": self.pods}


def node_usage(nodes: Sequence[Mapping[str, Any]], sim: Simulation) -> dict[str, Usage]:
    """Every node of ``nodes``, in order, with the pods bound to it at the end of ``sim``."""
    infos = {(n.get("metadata") or {}).get("name", ""): NodeInfo(n) for n in nodes}
    for pod in sim.cluster.pods.values():
        node = (pod.get("spec") or {}).get("nodeName")
        if node in infos and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            infos[node].add_pod(PodInfo(pod))
    return {
        name: Usage(
            _fraction(info.requested.milli_cpu, info.allocatable.milli_cpu),
            _fraction(info.requested.memory, info.allocatable.memory),
            len(info.pods),
        )
        for name, info in infos.items()
    }


def _fraction(used: int, total: int) -> float:
    return used / total if total > 0 else 0.0
