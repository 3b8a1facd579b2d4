"""Turning what kube-scheduler showed of one scenario into an :class:`~bench.parity_harness.outcome.Outcome`.

Inputs: the pending pod's first attempt (scores, totals and binding, or its FitError, from the
log), the nodes the extender saw pass every filter for it, each node probe's first attempt and,
for a pod that spreads when filtering, the pod probe's (see :mod:`bench.parity_harness.probes`). The
feasible set is the extender's; each probed node's reasons are its probe's, except where a
spreading pod makes a probe untrustworthy: those nodes' reasons are pooled from the pod's own
FitError (or the pod probe's, minus the nodes the extender saw). Where two sources should agree
and do not (a probe passing a node the pending pod found infeasible, the log's feasible count
against the extender's list), the harness reports an anomaly: a hole in its own reasoning.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from bench.parity_harness import fiterror, probes
from bench.parity_harness.extender import PASSED_MESSAGE
from bench.parity_harness.klog import Attempt
from bench.parity_harness.outcome import SCHEDULED, UNSCHEDULABLE, Outcome


class ReadError(RuntimeError):
    """kube-scheduler's answer is missing or not what an attempt can produce."""


@dataclass
class Observed:
    pod: str  # namespace/name of the pending pod
    nodes: list[str]
    main: Attempt
    passed: list[str] | None  # the extender's first call for the pending pod; None: never called
    node_probes: list[Attempt | None]  # per node, in the order of ``nodes``
    pod_probe: Attempt | None = None  # only for a pod that spreads when filtering
    spreading: bool = False


def _fit_error(attempt: Attempt | None, what: str) -> fiterror.FitError:
    if attempt is None or attempt.fit_error is None:
        raise ReadError(f"{what}: no FitError in its first attempt ({attempt})")
    return fiterror.parse(attempt.fit_error)


def read(seen: Observed) -> tuple[Outcome, list[str]]:
    main = seen.main
    if main.error is not None:
        raise ReadError(f"kube-scheduler failed to schedule {seen.pod}: {main.error}")
    anomalies = [f"{seen.pod}: first attempt used an OpportunisticBatch hint"] if main.hinted else []
    # The recorder passes on every node it is called with, so a failed first attempt never called
    # it: a call seen is a later attempt's (after preemption) and says nothing of the first.
    feasible = frozenset(seen.passed or ()) if main.bound_node is not None else frozenset()
    if main.bound_node is not None:
        if main.feasible_count != len(feasible):
            anomalies.append(f"log says {main.feasible_count} feasible nodes, the extender saw {sorted(feasible)}")
        outcome = Outcome(SCHEDULED, main.bound_node, feasible, scores=main.scores, totals=main.totals)
    else:
        _fit_error(main, seen.pod)
        outcome = Outcome(UNSCHEDULABLE, None, feasible, message=main.fit_error or "")
    for node, probe in zip(seen.nodes, seen.node_probes, strict=True):
        verdict = probes.node_verdict(_fit_error(probe, f"node probe of {node}"), len(seen.nodes))
        if seen.spreading and not probes.isolation_safe(verdict):
            continue
        if (verdict is None) != (node in feasible):
            anomalies.append(f"node probe of {node}: {verdict or 'feasible'}, but feasible={node in feasible}")
        if verdict is not None:
            outcome.reasons[node] = verdict
    if seen.spreading:
        _pool(outcome, seen)
    return outcome, anomalies


def _pool(outcome: Outcome, seen: Observed) -> None:
    """Reasons of the infeasible nodes no node probe could isolate, as one multiset."""
    source = seen.main if seen.main.fit_error is not None else seen.pod_probe
    fit = _fit_error(source, f"pod probe of {seen.pod}")
    pooled = frozenset(n for n in seen.nodes if n not in outcome.feasible and n not in outcome.reasons)
    if fit.pre_filter is not None:
        outcome.pooled_reasons = Counter({fit.pre_filter: len(pooled)}) if pooled else Counter()
    else:
        counts = Counter(fit.reasons)
        counts[PASSED_MESSAGE] -= len(outcome.feasible)
        for reasons in outcome.reasons.values():
            counts.subtract(reasons)
        outcome.pooled_reasons = +counts
    outcome.pooled_nodes = pooled
