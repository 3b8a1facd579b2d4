"""Comparing our outcome with kube-scheduler's: every difference, named by node and plugin.

Compared: which nodes are feasible; the filter reasons of each node both find infeasible (or,
where kube-scheduler's are known only together, the multiset over those nodes); each plugin's
weighted score on each node both scored; and the chosen node, but only when kube-scheduler's
best total is unique (on a tie both pick at random). When both bound the pod to the same node,
the PV/PVC bindings written for its claims; whether a gated pod was held (no attempt); and when
the first attempt preempted, the nominated node, the victims and where the pod was bound after.
With at most 12 nodes every node is a preemption candidate (``minCandidateNodesAbsolute`` 100),
so the random offset of upstream's candidate search changes only the order of candidates, and
with distinct start times on the existing pods no two candidates tie
(``pickOneNodeForPreemption``): both are then deterministic.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from bench.parity_harness.extender import BUSY_MESSAGE, NEVER_MESSAGE
from bench.parity_harness.outcome import Outcome

FEASIBLE = "feasible"

# Filter reasons -> plugin, kubernetes v1.36.3 pkg/scheduler/framework/plugins/*/ (ErrReason*; volumebinding/binder.go).
REASON_PLUGINS = {
    "node(s) were unschedulable": "NodeUnschedulable",
    "node(s) had unknown conditions": "NodeUnschedulable",
    "node(s) didn't match the requested node name": "NodeName",
    "node(s) had untolerated taint(s)": "TaintToleration",
    "node(s) didn't match Pod's node affinity/selector": "NodeAffinity",
    "pod affinity terms conflict": "NodeAffinity",
    "node(s) didn't have free ports for the requested pod ports": "NodePorts",
    "Too many pods": "NodeResourcesFit",
    "node(s) didn't match pod topology spread constraints": "PodTopologySpread",
    "node(s) didn't match pod topology spread constraints (missing required label)": "PodTopologySpread",
    "node(s) didn't match pod affinity rules": "InterPodAffinity",
    "node(s) didn't match pod anti-affinity rules": "InterPodAffinity",
    "node(s) didn't satisfy existing pods anti-affinity rules": "InterPodAffinity",
    "node(s) had no available disk": "VolumeRestrictions",
    "node(s) exceed max volume count": "NodeVolumeLimits",
    "node(s) had no available volume zone": "VolumeZone",
    "node(s) did not have enough free storage": "VolumeBinding",
    "node(s) didn't match PersistentVolume's node affinity": "VolumeBinding",
    "node(s) didn't find available persistent volumes to bind": "VolumeBinding",
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)": "VolumeBinding",
    "pod has unbound immediate PersistentVolumeClaims": "VolumeBinding",
    "cannot allocate all claims": "DynamicResources",
    "resourceclaim not available on the node": "DynamicResources",
    "cannot fit resource": "DynamicResources",
    BUSY_MESSAGE: "Extender",
    NEVER_MESSAGE: "Extender",
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode": (
        "VolumeRestrictions"
    ),
}


# Plugins whose PreScore skips their Score where upstream's Score answers 0 on every node (so the
# totals are the same, and only the "Plugin scored node" line differs): DynamicResources for a pod
# without claims (scheduler_core/plugins/dynamicresources pre_score; upstream has no PreScore).
SKIPPED_AT_ZERO = frozenset({"DynamicResources"})


def plugin_of(reasons: list[str]) -> str:
    plugins = sorted({_plugin(reason) for reason in reasons})
    return "/".join(plugins) if plugins else "Filter"


def _plugin(reason: str) -> str:
    if reason.startswith("Insufficient "):
        return "NodeResourcesFit"
    return REASON_PLUGINS.get(reason, "Filter")


@dataclass(frozen=True)
class Disagreement:
    seed: int
    node: str  # "" when it concerns the scenario, several names joined by "," for pooled reasons
    plugin: str
    aspect: str  # feasibility | reasons | pooled reasons | score | chosen node
    ours: str
    theirs: str

    def __str__(self) -> str:
        return (
            f"seed {self.seed}  node {self.node or '-'}  plugin {self.plugin}  {self.aspect}: "
            f"ours {self.ours}  theirs {self.theirs}"
        )


def _describe(outcome: Outcome, node: str) -> str:
    if node in outcome.feasible:
        return FEASIBLE
    if node in outcome.reasons:
        return "; ".join(sorted(outcome.reasons[node]))
    if node in outcome.pooled_nodes:
        return "infeasible (reasons known only over several nodes)"
    return "not evaluated"


def _same_reasons(ours: list[str], theirs: list[str]) -> bool:
    # A PreFilter rejection is one status whose message joins its reasons with ", ".
    return sorted(ours) == sorted(theirs) or ", ".join(ours) == ", ".join(theirs)


def compare(seed: int, ours: Outcome, theirs: Outcome) -> list[Disagreement]:
    found: list[Disagreement] = []
    nodes = sorted(
        set(ours.feasible) | set(ours.reasons) | set(theirs.feasible) | set(theirs.reasons) | set(theirs.pooled_nodes)
    )
    for node in nodes:
        mine, upstream = node in ours.feasible, node in theirs.feasible
        if mine != upstream:
            rejected = ours.reasons.get(node) or theirs.reasons.get(node) or []
            found.append(
                Disagreement(
                    seed, node, plugin_of(rejected), "feasibility", _describe(ours, node), _describe(theirs, node)
                )
            )
        elif (
            not mine and node in theirs.reasons and not _same_reasons(ours.reasons.get(node, []), theirs.reasons[node])
        ):
            plugin = plugin_of([*ours.reasons.get(node, []), *theirs.reasons[node]])
            found.append(Disagreement(seed, node, plugin, "reasons", _describe(ours, node), _describe(theirs, node)))
    found.extend(_compare_pooled(seed, ours, theirs))
    found.extend(_compare_scores(seed, ours, theirs))
    winners = theirs.winners()
    if len(winners) == 1 and ours.node != winners[0] and not found:
        found.append(Disagreement(seed, "", "selection", "chosen node", str(ours.node), winners[0]))
    if ours.node is not None and ours.node == theirs.node and ours.bindings != theirs.bindings:
        found.append(
            Disagreement(seed, ours.node, "VolumeBinding", "bindings", _pairs(ours.bindings), _pairs(theirs.bindings))
        )
    if ours.node is not None and ours.node == theirs.node and ours.allocation != theirs.allocation:
        found.append(
            Disagreement(
                seed,
                ours.node,
                "DynamicResources",
                "allocation",
                "; ".join(ours.allocation),
                "; ".join(theirs.allocation),
            )
        )
    if (ours.nominated, sorted(ours.victims)) != (theirs.nominated, sorted(theirs.victims)):
        found.append(
            Disagreement(
                seed,
                "",
                "DefaultPreemption",
                "preemption",
                f"nominated {ours.nominated}, victims {sorted(ours.victims)}",
                f"nominated {theirs.nominated}, victims {sorted(theirs.victims)}",
            )
        )
    elif theirs.nominated is not None and ours.final_node != theirs.final_node:
        found.append(Disagreement(seed, "", "selection", "final node", str(ours.final_node), str(theirs.final_node)))
    if ours.gated != theirs.gated:
        found.append(Disagreement(seed, "", "SchedulingGates", "gated", str(ours.gated), str(theirs.gated)))
    return found


def _pairs(items: dict[str, str]) -> str:
    return "; ".join(f"{key}: {value}" for key, value in sorted(items.items())) or "none"


def _compare_pooled(seed: int, ours: Outcome, theirs: Outcome) -> list[Disagreement]:
    pooled = sorted(n for n in theirs.pooled_nodes if n not in ours.feasible)
    if not pooled:
        return []
    mine: Counter[str] = Counter(reason for node in pooled for reason in ours.reasons.get(node, []))
    if mine == theirs.pooled_reasons:
        return []
    plugin = plugin_of(sorted(set(mine) | set(theirs.pooled_reasons)))
    return [
        Disagreement(seed, ",".join(pooled), plugin, "pooled reasons", _counts(mine), _counts(theirs.pooled_reasons))
    ]


def _counts(counter: Counter[str]) -> str:
    return "; ".join(f"{count}x {reason}" for reason, count in sorted(counter.items())) or "none"


def _compare_scores(seed: int, ours: Outcome, theirs: Outcome) -> list[Disagreement]:
    found = []
    for node in sorted(set(ours.scores) & set(theirs.scores)):
        mine, upstream = ours.scores[node], theirs.scores[node]
        for plugin in sorted(set(mine) | set(upstream)):
            if plugin in SKIPPED_AT_ZERO and plugin not in mine and upstream.get(plugin) == 0:
                continue
            if mine.get(plugin) != upstream.get(plugin):
                found.append(
                    Disagreement(
                        seed,
                        node,
                        plugin,
                        "score",
                        str(mine.get(plugin, "not scored")),
                        str(upstream.get(plugin, "not scored")),
                    )
                )
    if bool(ours.scores) != bool(theirs.scores) and ours.feasible == theirs.feasible:
        found.append(
            Disagreement(
                seed, "", "Score", "score", f"{len(ours.scores)} nodes scored", f"{len(theirs.scores)} nodes scored"
            )
        )
    return found
