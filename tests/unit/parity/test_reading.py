"""Reading a scenario's outcome from kube-scheduler's attempts, the extender and the probes."""

from __future__ import annotations

from collections import Counter

import pytest

from bench.parity_harness.extender import PASSED_MESSAGE
from bench.parity_harness.klog import Attempt
from bench.parity_harness.outcome import SCHEDULED, UNSCHEDULABLE
from bench.parity_harness.probes import ABSENT_FROM_CYCLE
from bench.parity_harness.reading import Observed, ReadError, read

NODES = ["a", "b", "c"]
CPU = "Insufficient cpu"
TAINT = "node(s) had untolerated taint(s)"
SPREAD = "node(s) didn't match pod topology spread constraints"


def _probe(*reasons: str) -> Attempt:
    """A node probe's attempt: the node's reasons, the two other nodes outside the cycle."""
    items = [f"1 {r}" for r in reasons] + [f"2 {ABSENT_FROM_CYCLE}"]
    return Attempt(fit_error=f"0/3 nodes are available: {', '.join(sorted(items))}.")


PASSED = _probe(PASSED_MESSAGE)
SCORES = {"a": {"NodeResourcesFit": 50}, "b": {"NodeResourcesFit": 40}}


def test_a_scheduled_pod() -> None:
    main = Attempt(scores=SCORES, totals={"a": 50, "b": 40}, bound_node="a", feasible_count=2)
    outcome, anomalies = read(Observed("ns/p", NODES, main, ["a", "b"], [PASSED, PASSED, _probe(CPU, TAINT)]))
    assert (outcome.status, outcome.node, outcome.feasible) == (SCHEDULED, "a", frozenset({"a", "b"}))
    assert outcome.reasons == {"c": [CPU, TAINT]}
    assert outcome.scores == SCORES and outcome.totals == {"a": 50, "b": 40}
    assert anomalies == []


def test_an_unschedulable_pod() -> None:
    main = Attempt(fit_error=f"0/3 nodes are available: 1 {CPU}, 2 {TAINT}.")
    outcome, anomalies = read(Observed("ns/p", NODES, main, None, [_probe(CPU), _probe(TAINT), _probe(TAINT)]))
    assert (outcome.status, outcome.node, outcome.feasible) == (UNSCHEDULABLE, None, frozenset())
    assert outcome.reasons == {"a": [CPU], "b": [TAINT], "c": [TAINT]}
    assert anomalies == []


def test_a_preempting_pods_later_extender_call_is_not_its_first_attempts() -> None:
    """The first attempt failed and preempted; the recorder's call came from the attempt after
    the victims went (seed 1049 of the preemption feature read node a as feasible)."""
    main = Attempt(fit_error=f"0/3 nodes are available: 3 {CPU}.")
    outcome, anomalies = read(Observed("ns/p", NODES, main, ["a"], [_probe(CPU), _probe(CPU), _probe(CPU)]))
    assert outcome.feasible == frozenset()
    assert outcome.reasons == {"a": [CPU], "b": [CPU], "c": [CPU]}
    assert anomalies == []


@pytest.mark.parametrize(
    ("main", "passed", "node_probes", "anomaly"),
    [
        pytest.param(
            Attempt(bound_node="a", feasible_count=1),
            ["a"],
            [PASSED, PASSED, _probe(CPU)],
            "node probe of b: feasible, but feasible=False",
            id="probe-passes-an-infeasible-node",
        ),
        pytest.param(
            Attempt(bound_node="a", feasible_count=2),
            ["a"],
            [PASSED, _probe(CPU), _probe(CPU)],
            "log says 2 feasible nodes, the extender saw ['a']",
            id="log-and-extender-differ",
        ),
        pytest.param(
            Attempt(bound_node="a", feasible_count=1, hinted=True),
            ["a"],
            [PASSED, _probe(CPU), _probe(CPU)],
            "ns/p: first attempt used an OpportunisticBatch hint",
            id="hinted",
        ),
    ],
)
def test_inconsistent_sources_are_anomalies(
    main: Attempt, passed: list[str], node_probes: list[Attempt | None], anomaly: str
) -> None:
    _, anomalies = read(Observed("ns/p", NODES, main, passed, node_probes))
    assert anomalies == [anomaly]


def test_a_spreading_pod_pools_the_reasons_probes_cannot_isolate() -> None:
    main = Attempt(scores={}, totals={}, bound_node="a", feasible_count=1)
    # Narrowed to one node, b and c pass spreading; only the pod probe sees them fail it.
    pod_probe = Attempt(fit_error=f"0/3 nodes are available: 1 {PASSED_MESSAGE}, 2 {SPREAD}.")
    seen = Observed("ns/p", NODES, main, ["a"], [PASSED, PASSED, PASSED], pod_probe, spreading=True)
    outcome, anomalies = read(seen)
    assert outcome.reasons == {}
    assert (outcome.pooled_nodes, outcome.pooled_reasons) == (frozenset({"b", "c"}), Counter({SPREAD: 2}))
    assert anomalies == []


def test_a_spreading_pod_keeps_the_reasons_of_filters_before_spreading() -> None:
    main = Attempt(fit_error=f"0/3 nodes are available: 1 {TAINT}, 2 {SPREAD}.")
    seen = Observed("ns/p", NODES, main, None, [_probe(TAINT), PASSED, _probe(SPREAD)], None, spreading=True)
    outcome, _ = read(seen)
    assert outcome.reasons == {"a": [TAINT]}
    assert (outcome.pooled_nodes, outcome.pooled_reasons) == (frozenset({"b", "c"}), Counter({SPREAD: 2}))


@pytest.mark.parametrize(
    "seen",
    [
        pytest.param(Observed("ns/p", NODES, Attempt(error="boom"), None, []), id="scheduler-error"),
        pytest.param(
            Observed("ns/p", NODES, Attempt(fit_error="0/3 nodes are available: 3 x."), None, [None] * 3),
            id="probe-never-attempted",
        ),
    ],
)
def test_missing_answers_are_errors(seen: Observed) -> None:
    with pytest.raises(ReadError):
        read(seen)
