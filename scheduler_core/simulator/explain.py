"""``explain``: why one pod goes (or went) where it does, on a snapshot of a live cluster.

The snapshot (a :class:`~scheduler_core.simulator.manifests.Cluster`, read by
``scheduler_operator.cli.snapshot``) is simulated with the very loop ``simulate`` runs, the
live profiles only (``live=True``: no built-in default, as in the operator) and one pending
pod, the one asked about: other pending pods are left out, so the answer is this pod's own
cycle against the nodes as they are. A pod already bound is taken off its node first and
placed again: "how it scores now".

A pod held by a profile that does not serve (its namespace's profile for its schedulerName, or
the home one, was refused: no silent fall-back) is no error: the report says
``ProfileNotServing`` with the resolution's reason, and ``held`` lists why the profile is
refused, in the profile's own status conditions (``Ready``/``Stalled``: what the operator
says, on a live cluster) and in the problems of this snapshot's resolution (offline, or when the
status has none).

The report is the pod's **first** attempt: the filter reasons, the weighted scores and
upstream's FailedScheduling message. When that attempt fails and preemption nominates a node,
the victims the in-memory cluster deleted and the node are reported beside it, with where the
pod then lands.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scheduler_core.framework import Manifest, PodInfo, manifest
from scheduler_core.names import PLUGIN_CONFIG_KIND, PROFILE_KIND
from scheduler_core.reporting import REASON_PROFILE_NOT_SERVING
from scheduler_core.simulator.errors import InputError, Problem
from scheduler_core.simulator.manifests import DEFAULT_HOME_NAMESPACE, Cluster
from scheduler_core.simulator.report import TOTAL, PodReport, columns
from scheduler_core.simulator.run import simulate
from scheduler_core.simulator.usage import Usage, node_usage


@dataclass(frozen=True, slots=True)
class Preemption:
    """What preemption would do: the node nominated, the pods evicted there."""

    node: str
    victims: list[str]  # namespace/name

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "victims": self.victims}


@dataclass(slots=True)
class Explanation:
    report: PodReport  # the first attempt
    bound_to: str | None = None  # the live node of a pod already bound
    preemption: Preemption | None = None
    then: PodReport | None = None  # the attempt after preemption, if any
    nodes: dict[str, Usage] = field(default_factory=dict)  # utilization after the cycle, in node order
    warnings: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # why the pod's profile does not serve

    def to_json(self) -> dict[str, Any]:
        """``simulate``'s pod entry, with ``boundTo``, ``preemption`` and ``afterPreemption``."""
        entry = self.report.to_json()
        entry["boundTo"] = self.bound_to
        entry["preemption"] = self.preemption.to_json() if self.preemption else None
        entry["afterPreemption"] = self.then.to_json() if self.then else None
        if self.report.status == REASON_PROFILE_NOT_SERVING:
            entry["held"] = self.held
        return entry


def explain(
    cluster: Cluster,
    namespace: str,
    name: str,
    *,
    seed: int | None = 0,
    home_namespace: str = DEFAULT_HOME_NAMESPACE,
    registry: Manifest | None = None,
) -> Explanation:
    """One scheduling cycle of pod ``namespace/name`` of ``cluster``; :class:`InputError` if
    there is no such pod, or no live profile serves it."""
    what = f"Pod {namespace}/{name}"
    target = next((p for p in cluster.pods if _named(p, namespace, name)), None)
    if target is None:
        raise InputError([Problem("cluster", what, "", "not found")])
    if manifest.status(target).get("phase") in ("Succeeded", "Failed"):
        raise InputError([Problem("cluster", what, "status.phase", "the pod has terminated: nothing to schedule")])
    bound_to = manifest.spec(target).get("nodeName") or None
    pending = {**target, "spec": {k: v for k, v in target["spec"].items() if k != "nodeName"}}
    others = [p for p in cluster.pods if p is not target and manifest.spec(p).get("nodeName")]
    snapshot = Cluster(
        nodes=cluster.nodes,
        pods=[*others, pending],
        profiles=cluster.profiles,
        plugin_configs=cluster.plugin_configs,
        objects=cluster.objects,
    )
    sim = simulate(snapshot, seed=seed, home_namespace=home_namespace, registry=registry, live=True)
    uid = PodInfo(pending).uid
    first = sim.recorder.first.get(uid) if sim.recorder is not None else None
    if first is None:
        scheduler_name = PodInfo(pending).scheduler_name
        held = sim.scheduler.profiles.held_reason(PodInfo(pending))
        key = sim.scheduler.profiles.key_for_pod(PodInfo(pending))
        if held is not None and key is not None:
            report = PodReport(namespace, name, scheduler_name, str(key), REASON_PROFILE_NOT_SERVING, None, held)
            return Explanation(
                report,
                bound_to=bound_to,
                nodes=node_usage(cluster.nodes, sim),
                warnings=[*cluster.warnings, *sim.warnings],
                held=_refusals(cluster, str(key), sim.problems),
            )
        if not sim.pods:
            reason = f"no profile serves schedulerName {scheduler_name!r} in namespace {namespace!r} or the home one"
            raise InputError([Problem("cluster", what, "spec.schedulerName", reason)])
        first = sim.pods[0]  # not attempted: gated
    explanation = Explanation(
        first, bound_to=bound_to, nodes=node_usage(cluster.nodes, sim), warnings=[*cluster.warnings, *sim.warnings]
    )
    nominated = sim.cluster.nominated_nodes.get(uid)
    victims = [_key(pod) for pod, _ in sim.cluster.deleted]
    if first.status != "Scheduled" and (nominated or victims):
        explanation.preemption = Preemption(nominated or "", victims)
        last = sim.recorder.last.get(uid) if sim.recorder is not None else None
        explanation.then = last if last is not None and last is not first else None
    return explanation


def _refusals(cluster: Cluster, key: str, problems: list[Problem]) -> list[str]:
    """The profile's own ``Ready``/``Stalled`` messages (live), then the resolution's problems
    naming it or a PluginConfig of its namespace."""
    said = [
        f"status {c.get('type')}={c.get('status')} ({c.get('reason')}): {c.get('message')}"
        for c in cluster.profile_conditions.get(key, [])
        if c.get("type") in ("Ready", "Stalled")
        and c.get("status") != ("True" if c.get("type") == "Ready" else "False")
    ]
    namespace = key.split("/", 1)[0]
    ours = (f"{PROFILE_KIND} {key}", f"{PLUGIN_CONFIG_KIND} {namespace}/")
    return list(dict.fromkeys([*said, *(str(p) for p in problems if p.what.startswith(ours))]))


def _named(pod: Manifest, namespace: str, name: str) -> bool:
    return manifest.name_of(pod) == name and manifest.namespace_of(pod) == namespace


def _key(pod: Manifest) -> str:
    return f"{manifest.namespace_of(pod)}/{manifest.name_of(pod)}"


def render_text(explanation: Explanation, *, top: int = 5) -> str:
    """For people: status, the top nodes' weighted scores per plugin, filter reasons, preemption."""
    r = explanation.report
    lines = [f"Pod {r.namespace}/{r.name}  schedulerName={r.scheduler_name}  profile={r.profile}"]
    if explanation.bound_to:
        lines.append(f"Bound now to: {explanation.bound_to} (explained as if it were placed again now)")
    lines.append(f"Result: {r.status}" + (f" on {r.node}" if r.node else ""))
    if r.status != "Scheduled":
        lines.append(f"Message: {r.message}")
    if explanation.held:
        lines.append(f"Why profile {r.profile} does not serve:")
        lines.extend(f"  {reason}" for reason in explanation.held)
    if r.scores:
        ranked = sorted(r.scores.items(), key=lambda item: -item[1][TOTAL])[:top]
        plugins = [p for p in next(iter(r.scores.values())) if p != TOTAL]
        header = ["NODE", "TOTAL", *plugins]
        rows = [[node, str(row[TOTAL]), *(str(row.get(p, 0)) for p in plugins)] for node, row in ranked]
        lines.append(f"Scores (weighted, top {len(rows)} of {len(r.scores)} scored nodes):")
        lines.extend("  " + line for line in columns([header, *rows], sep="  "))
    elif r.status == "Scheduled":
        lines.append("Scores: not computed (only one feasible node, as upstream)")
    if r.filtered:
        lines.append(f"Filtered out ({len(r.filtered)} nodes):")
        lines.extend(f"  {node}: {'; '.join(reasons)}" for node, reasons in r.filtered.items())
    if explanation.preemption is not None:
        p = explanation.preemption
        victims = ", ".join(p.victims) or "no pod"
        lines.append(f"Preemption: would evict {victims} and nominate node {p.node or '-'}")
        if explanation.then is not None:
            then = explanation.then
            lines.append(f"  then: {then.status}" + (f" on {then.node}" if then.node else f": {then.message}"))
    return "\n".join(lines)
