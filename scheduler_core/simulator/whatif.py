"""What-if: the same snapshot scheduled under the live profiles and under candidate ones.

``simulate --from-cluster -f CANDIDATE...`` overlays the candidate SchedulerProfiles and
PluginConfigs on the live ones (same namespace/name replaces, a new one is added; a candidate
without a namespace goes to the home namespace, as ``kubectl apply -n <home>`` would put it)
and runs :func:`~scheduler_core.simulator.run.simulate` twice on the same snapshot and seed:
once as the cluster is configured, once with the candidates. Pending pods are placed in both;
``replace_all`` also takes every bound pod a profile handles off its node first, to compare
packing from scratch. The comparison is per pod (node under each, moved or not) and per node
(requested CPU and memory over allocatable, and pod count, after each run), with the count of
nodes that run at least one of the compared pods.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from scheduler_core.framework import Manifest, manifest
from scheduler_core.simulator.manifests import DEFAULT_HOME_NAMESPACE, Cluster
from scheduler_core.simulator.report import PodReport, columns
from scheduler_core.simulator.run import Simulation, simulate
from scheduler_core.simulator.usage import Usage, node_usage


@dataclass(frozen=True, slots=True)
class Placement:
    namespace: str
    name: str
    live: PodReport | None
    candidate: PodReport | None

    @property
    def live_node(self) -> str | None:
        return self.live.node if self.live else None

    @property
    def candidate_node(self) -> str | None:
        return self.candidate.node if self.candidate else None

    @property
    def moved(self) -> bool:
        return self.live_node != self.candidate_node

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "live": self.live.to_json() if self.live else None,
            "candidate": self.candidate.to_json() if self.candidate else None,
            "moved": self.moved,
        }


@dataclass(slots=True)
class WhatIf:
    placements: list[Placement]
    before: dict[str, Usage]  # node -> usage under the live profiles
    after: dict[str, Usage]  # node -> usage under the candidates
    nodes_used_before: int  # nodes running at least one compared pod
    nodes_used_after: int
    replace_all: bool = False
    warnings: list[str] = field(default_factory=list)

    @property
    def moves(self) -> list[Placement]:
        return [p for p in self.placements if p.moved]

    def summary(self) -> str:
        scheduled_before = sum(1 for p in self.placements if p.live_node)
        scheduled_after = sum(1 for p in self.placements if p.candidate_node)
        trend = (
            "toward fewer nodes" if self.nodes_used_after < self.nodes_used_before
            else "toward more nodes" if self.nodes_used_after > self.nodes_used_before
            else "on as many nodes"
        )  # fmt: skip
        return (
            f"{len(self.moves)} of {len(self.placements)} pods move; scheduled {scheduled_before} -> "
            f"{scheduled_after}; nodes used {self.nodes_used_before} -> {self.nodes_used_after} ({trend})"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary(),
            "replaceAll": self.replace_all,
            "nodesUsed": {"live": self.nodes_used_before, "candidate": self.nodes_used_after},
            "pods": [p.to_json() for p in self.placements],
            "nodes": {
                name: {"live": self.before[name].to_json(), "candidate": self.after[name].to_json()}
                for name in self.before
            },
        }


def overlay(live: Cluster, candidates: Cluster) -> Cluster:
    """``live`` with the candidates' profiles and PluginConfigs applied over its own."""
    replaced = {c.key for c in candidates.profiles}
    configs = {(c.namespace, c.name) for c in candidates.plugin_configs}
    return Cluster(
        nodes=live.nodes,
        pods=live.pods,
        profiles=[p for p in live.profiles if p.key not in replaced] + candidates.profiles,
        plugin_configs=[c for c in live.plugin_configs if (c.namespace, c.name) not in configs]
        + candidates.plugin_configs,
        objects=live.objects,
    )


def compare(
    live: Cluster,
    candidates: Cluster,
    *,
    replace_all: bool = False,
    seed: int | None = 0,
    home_namespace: str = DEFAULT_HOME_NAMESPACE,
    registry: Manifest | None = None,
    namespace: str | None = None,
) -> WhatIf:
    """Schedule ``live`` as configured and with ``candidates`` overlaid; compare (the pods of
    ``namespace`` only, if given)."""
    options: dict[str, Any] = {
        "seed": seed, "home_namespace": home_namespace, "registry": registry, "live": True,
        "replace_all": replace_all, "namespace": namespace,
    }  # fmt: skip
    before = simulate(live, **options)
    after = simulate(overlay(live, candidates), **options)
    placements = _placements(before, after)
    compared = {(p.namespace, p.name) for p in placements}
    warnings = list(dict.fromkeys([*live.warnings, *candidates.warnings, *before.warnings, *after.warnings]))
    return WhatIf(
        placements=placements,
        before=node_usage(live.nodes, before),
        after=node_usage(live.nodes, after),
        nodes_used_before=_nodes_used(before, compared),
        nodes_used_after=_nodes_used(after, compared),
        replace_all=replace_all,
        warnings=warnings,
    )


def _placements(before: Simulation, after: Simulation) -> list[Placement]:
    live = {(r.namespace, r.name): r for r in before.pods}
    candidate = {(r.namespace, r.name): r for r in after.pods}
    keys = list(dict.fromkeys([*live, *candidate]))
    return [Placement(ns, name, live.get((ns, name)), candidate.get((ns, name))) for ns, name in keys]


def _nodes_used(sim: Simulation, compared: set[tuple[str, str]]) -> int:
    nodes = set()
    for pod in sim.cluster.pods.values():
        node = manifest.spec(pod).get("nodeName")
        if node and (manifest.namespace_of(pod), manifest.name_of(pod)) in compared:
            nodes.add(node)
    return len(nodes)


def render_json(whatif: WhatIf) -> str:
    return json.dumps(whatif.to_json(), indent=2)


def render_table(whatif: WhatIf) -> str:
    """Pods (moved ones marked), then nodes with utilization under each, then the summary."""
    pods = [("POD", "LIVE", "CANDIDATE", "")] + [
        (f"{p.namespace}/{p.name}", p.live_node or "-", p.candidate_node or "-", "moved" if p.moved else "")
        for p in whatif.placements
    ]
    nodes = [("NODE", "CPU LIVE", "CPU CANDIDATE", "MEM LIVE", "MEM CANDIDATE", "PODS")]
    for name, before in whatif.before.items():
        after = whatif.after[name]
        nodes.append((
            name, f"{before.cpu:.0%}", f"{after.cpu:.0%}", f"{before.memory:.0%}", f"{after.memory:.0%}",
            f"{before.pods} -> {after.pods}",
        ))  # fmt: skip
    return "\n".join([*columns(pods), "", *columns(nodes), "", whatif.summary()])
