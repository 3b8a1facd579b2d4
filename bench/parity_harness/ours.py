"""Our side: ``crd-scheduler simulate`` over the objects kube-scheduler saw.

The input is what the API server stored for the scenario (defaults and admission applied: the
same bytes kube-scheduler's informers delivered) plus the parity SchedulerProfile, read by the
simulator's own manifest loader, as ``crd-scheduler simulate -f`` reads files.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import yaml

from bench.parity_harness.outcome import Outcome
from bench.parity_harness.profile import ProfilePair, scheduler_profile
from scheduler_core.simulator import load_texts, simulate
from scheduler_core.simulator.report import TOTAL

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
    for report in simulation.pods:
        if (report.namespace, report.name) == pod:
            # Per plugin, as kube-scheduler's "Plugin scored node" lines: a profile without Score
            # plugins has totals but no plugin score on any node, and none is read on its side.
            per_plugin = {n: {p: s for p, s in row.items() if p != TOTAL} for n, row in report.scores.items()}
            scores = {n: row for n, row in per_plugin.items() if row}
            return Outcome(
                status=report.status,
                node=report.node,
                feasible=frozenset(n for n in nodes if n not in report.filtered),
                reasons={n: list(reasons) for n, reasons in report.filtered.items()},
                scores=scores,
                totals={n: row[TOTAL] for n, row in report.scores.items()},
                message=report.message,
            )
    raise LookupError(f"simulate reported nothing for pod {pod[0]}/{pod[1]}: {simulation.warnings}")
