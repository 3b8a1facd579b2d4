"""Our side: ``crd-scheduler simulate`` over the objects kube-scheduler saw.

The input is what the API server stored for the scenario (defaults and admission applied: the
same bytes kube-scheduler's informers delivered) plus the parity SchedulerProfile, read by the
simulator's own manifest loader, as ``crd-scheduler simulate -f`` reads files.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import yaml

from bench.parity_harness import dra, fiterror, volumes
from bench.parity_harness.outcome import Outcome
from bench.parity_harness.profile import ProfilePair, scheduler_profile
from scheduler_core.simulator import Simulation, load_texts, simulate
from scheduler_core.simulator.report import TOTAL

GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"  # the SchedulingGated condition

Json = dict[str, Any]


def scenario_yaml(
    objects: Sequence[Json],
    registered: Collection[str],
    extender_url: str | None = None,
    pair: ProfilePair | None = None,
) -> str:
    """The simulate input: the scenario's objects and the parity profile, one YAML stream."""
    return yaml.safe_dump_all([*objects, scheduler_profile(registered, extender_url, pair)], sort_keys=False)


def run(text: str, pod: tuple[str, str], registry: Mapping[str, Any]) -> Outcome:
    """Simulate ``text`` and return the outcome of the pod ``(namespace, name)``."""
    cluster = load_texts([("scenario.yaml", text)])
    simulation = simulate(cluster, seed=0, registry=registry)
    nodes = [n["metadata"]["name"] for n in cluster.nodes]
    manifest = next((p for p in cluster.pods if (p["metadata"].get("namespace"), p["metadata"]["name"]) == pod), {})
    for last in simulation.pods:
        if (last.namespace, last.name) == pod:
            # kube-scheduler's side reads the first attempt; a preempting pod is bound by a later one.
            firsts = simulation.recorder.first.values() if simulation.recorder else ()
            report = next((r for r in firsts if (r.namespace, r.name) == pod), last)
            # Per plugin, as kube-scheduler's "Plugin scored node" lines: a profile without Score
            # plugins has totals but no plugin score on any node, and none is read on its side.
            per_plugin = {n: {p: s for p, s in row.items() if p != TOTAL} for n, row in report.scores.items()}
            scores = {n: row for n, row in per_plugin.items() if row}
            claims = simulation.cluster.objects("PersistentVolumeClaim")
            reasons = {n: list(reasons) for n, reasons in report.filtered.items()}
            if report.node is None and report.message.startswith("0/"):
                # A PreFilter rejection filters no node one by one: every node has its message, as
                # kube-scheduler's node probes report it.
                rejected = fiterror.parse(report.message).pre_filter
                if rejected is not None:
                    reasons.update({n: [rejected] for n in nodes if n not in reasons})
            return Outcome(
                status=report.status,
                node=report.node,
                feasible=frozenset(n for n in nodes if n not in reasons),
                reasons=reasons,
                scores=scores,
                totals={n: row[TOTAL] for n, row in report.scores.items()},
                message=report.message,
                bindings=volumes.bindings(manifest, claims) if report.node and volumes.claim_names(manifest) else {},
                allocation=_allocation(simulation, pod, manifest) if report.node else [],
                **_preemption(simulation, pod, report.node, last.node),
            )
    raise LookupError(f"simulate reported nothing for pod {pod[0]}/{pod[1]}: {simulation.warnings}")


def _allocation(simulation: Simulation, pod: tuple[str, str], manifest: Json) -> list[str]:
    """The devices of the pod's claims, as stored once bound (the special claim of its DRA-backed
    extended resources is named in the status the scheduler wrote)."""
    stored = simulation.cluster.pod(*pod) or manifest
    return dra.allocation(stored, simulation.cluster.objects("ResourceClaim"))


def _preemption(simulation: Simulation, pod: tuple[str, str], first: str | None, last: str | None) -> dict[str, Any]:
    """The node nominated after a failed first attempt, the pods deleted, and the final node.

    The nomination is the first preemption's, as kube-scheduler's side reads it (its first status
    update): the node of the first victim, since preemption deletes pods only there (a candidate
    has at least one victim, default_preemption.go SelectVictimsOnNode) and the pod is held until
    its victims are gone. The pod's status at the end is not it: a later attempt that the
    extenders reject on the freed node preempts again elsewhere, or clears the nomination when
    preemption finds no candidate (preemption.go Preempt)."""
    deleted = [p for p, _ in simulation.cluster.deleted]
    if first is not None or not deleted:
        return {}
    nominated = str(deleted[0]["spec"]["nodeName"])
    victims = [p["metadata"]["name"] for p in deleted]
    return {"nominated": nominated, "victims": victims, "final_node": last}


def held_by_gates(text: str, pod: tuple[str, str], registry: Mapping[str, Any]) -> bool:
    """Whether simulate leaves the pod ``(namespace, name)`` unattempted, held by its scheduling gates."""
    simulation = simulate(load_texts([("scenario.yaml", text)]), seed=0, registry=registry)
    report = next(r for r in simulation.pods if (r.namespace, r.name) == pod)
    return report.node is None and report.attempts == 0 and report.message == GATED_MESSAGE
