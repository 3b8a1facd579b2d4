"""What one scheduler decided for the pending pod, in a form both sides can fill.

``reasons`` holds the filter reasons of each infeasible node when they are known node by node.
kube-scheduler never logs them per node; the harness learns them from probe pods, and where a
probe cannot isolate a node without changing the answer (topology spreading counts over the
nodes a pod's node affinity admits) those nodes are left out of ``reasons`` and their reasons
are known only together, as the multiset ``pooled_reasons`` (the FitError histogram).
``scores`` holds the weighted score of each plugin that scored, per feasible node, when the
scheduler scored (two feasible nodes or more); ``totals`` their sums. ``bindings`` says what
became of each of the pod's PersistentVolumeClaims once it was bound
(:func:`bench.parity_harness.volumes.bindings`); ``gated`` whether the pod, created with
scheduling gates, was held without any attempt (None: it had no gates). When the first attempt
preempted, ``nominated`` is the node it nominated, ``victims`` the pods it deleted and
``final_node`` where a later attempt bound the pod. ``allocation`` lists the devices allocated to
the pod's DRA claim (:func:`bench.parity_harness.dra.allocation`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

SCHEDULED = "Scheduled"
UNSCHEDULABLE = "Unschedulable"


@dataclass
class Outcome:
    status: str
    node: str | None
    feasible: frozenset[str]
    reasons: dict[str, list[str]] = field(default_factory=dict)
    pooled_reasons: Counter[str] = field(default_factory=Counter)
    pooled_nodes: frozenset[str] = frozenset()
    scores: dict[str, dict[str, int]] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    message: str = ""
    bindings: dict[str, str] = field(default_factory=dict)
    gated: bool | None = None
    nominated: str | None = None  # the node preemption nominated in the first attempt
    victims: list[str] = field(default_factory=list)  # existing pods preempted
    final_node: str | None = None  # where the pod was bound in the end, after preemption
    allocation: list[str] = field(default_factory=list)  # devices of the pod's DRA claim

    def winners(self) -> list[str]:
        """The nodes with the highest total (several on a tie)."""
        if not self.totals:
            return [self.node] if self.node else []
        best = max(self.totals.values())
        return sorted(node for node, total in self.totals.items() if total == best)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "node": self.node,
            "feasible": sorted(self.feasible),
            "reasons": {node: sorted(reasons) for node, reasons in sorted(self.reasons.items())},
            "pooledReasons": dict(sorted(self.pooled_reasons.items())),
            "pooledNodes": sorted(self.pooled_nodes),
            "scores": {node: dict(sorted(row.items())) for node, row in sorted(self.scores.items())},
            "totals": dict(sorted(self.totals.items())),
            "message": self.message,
            "bindings": dict(sorted(self.bindings.items())),
            "gated": self.gated,
            "nominated": self.nominated,
            "victims": sorted(self.victims),
            "finalNode": self.final_node,
            "allocation": self.allocation,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Outcome:
        return cls(
            status=data["status"],
            node=data["node"],
            feasible=frozenset(data["feasible"]),
            reasons={node: list(reasons) for node, reasons in data.get("reasons", {}).items()},
            pooled_reasons=Counter(data.get("pooledReasons", {})),
            pooled_nodes=frozenset(data.get("pooledNodes", ())),
            scores={node: dict(row) for node, row in data.get("scores", {}).items()},
            totals=dict(data.get("totals", {})),
            message=data.get("message", ""),
            bindings=dict(data.get("bindings", {})),
            gated=data.get("gated"),
            nominated=data.get("nominated"),
            victims=list(data.get("victims", [])),
            final_node=data.get("finalNode"),
            allocation=list(data.get("allocation", [])),
        )
