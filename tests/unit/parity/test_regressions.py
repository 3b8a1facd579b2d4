"""Scenarios where we once disagreed with kube-scheduler v1.36.3, with its answers as expected values.

Each case is a pair of files in ``scenarios/``: ``<id>.yaml``, the simulate input the parity
harness built (the objects as the API server stored them, and the parity SchedulerProfile), and
``<id>.json``, the pending pod and kube-scheduler's outcome as the harness read it (feasible
nodes, reasons per node, weighted scores per plugin). Recorded with
``python bench/parity.py`` (disagreeing scenarios are written to ``bench/results/parity``).
A case still failing is marked ``xfail(strict=True)`` with its cause, so the fix turns it into
a plain regression test (remove the mark then).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench.parity_harness import ours
from bench.parity_harness.compare import compare
from bench.parity_harness.extender import Extender
from bench.parity_harness.outcome import Outcome
from scheduler_core.runtime.registry import default_registry

SCENARIOS = Path(__file__).parent / "scenarios"
RECORDED_EXTENDER = re.compile(r"http://127\.0\.0\.1:\d+")

# Fixed causes, kept as comments on the cases that found them:
# - NodeResourcesFit's score ignores the incoming pod's pod-level requests (v1.36.3 fit.go getScorer
#   builds the resourceAllocationScorer without enablePodLevelResources);
# - a pod with pod-level requests gets the 100m/200Mi non-zero defaults only for cpu/memory missing
#   from its whole request (framework/types.go getNonMissingContainerRequests).

CASES = [
    # A control that agrees (scores of four plugins, reasons of three filters): the comparison
    # itself must not be what makes the other cases fail.
    pytest.param("control-seed-1-agrees", id="control-seed-1-agrees"),
    pytest.param(
        "fit-score-ignores-incoming-pod-level-requests",
        id="fit-score-ignores-incoming-pod-level-requests",
    ),
    pytest.param(
        "non-zero-requests-with-pod-level-resources",
        id="non-zero-requests-with-pod-level-resources",
    ),
    # Found by `python bench/parity.py --scenarios 500 --seed 1`.
    pytest.param(
        "random-seed-51-incoming-pod-level-requests",
        id="random-seed-51-incoming-pod-level-requests",
    ),
    pytest.param(
        "random-seed-5-existing-pod-level-requests",
        id="random-seed-5-existing-pod-level-requests",
    ),
    pytest.param(
        "random-seed-468-both-causes",
        id="random-seed-468-both-causes",
    ),
    # Pod-level cpu, memory requested nowhere: upstream still gives every container 200Mi, so a pod
    # with pod-level requests keeps per-container defaults for a resource missing everywhere
    # (`--scenarios 2000 --seed 10001`).
    pytest.param(
        "random-seed-11660-missing-memory-defaults-per-container",
        id="random-seed-11660-missing-memory-defaults-per-container",
    ),
    # A preemptor's next attempt tries its nominated node alone first and takes it when it passes
    # (v1.36.3 schedule_one.go findNodesThatFitPod/evaluateNominatedNode); we searched every node
    # and bound it elsewhere (`--features ...,preemption --scenarios 200 --seed 1000`).
    pytest.param(
        "random-seed-1163-preemptor-binds-to-its-nominated-node",
        id="random-seed-1163-preemptor-binds-to-its-nominated-node",
    ),
    # With the scenario extenders (the 21-feature run, `--scenarios 1000 --seed 1`): the same, the
    # nominated node alone through the filter extenders first (evaluateNominatedNode).
    pytest.param(
        "random-seed-548-extenders-pass-the-nominated-node-alone",
        id="random-seed-548-extenders-pass-the-nominated-node-alone",
    ),
    # A harness fix, not ours: the extender rejects the freed node on the retry, whose preemption
    # finds no candidate and clears the nomination; the nomination compared is the first one, as
    # kube-scheduler's side reads it (bench/parity_harness/ours.py _preemption).
    pytest.param(
        "random-seed-69-nomination-read-from-the-first-preemption",
        id="random-seed-69-nomination-read-from-the-first-preemption",
    ),
]


def test_every_recorded_scenario_is_listed() -> None:
    recorded = sorted(path.stem for path in SCENARIOS.glob("*.yaml"))
    assert recorded == sorted(str(case.values[0]) for case in CASES)


@pytest.mark.parametrize("name", CASES)
def test_we_agree_with_kube_scheduler(name: str, extender: Extender) -> None:
    expected = json.loads((SCENARIOS / f"{name}.json").read_text())
    namespace, pod = expected["pod"].split("/")
    registry = default_registry()
    # The recorded profile names the run's extender address; this one answers the same.
    text = RECORDED_EXTENDER.sub(extender.url, (SCENARIOS / f"{name}.yaml").read_text())
    got = ours.run(text, (namespace, pod), registry)
    # A gated pod's hold is checked on the pod still gated, which a recording does not keep (its
    # simulate input is the pod ungated): our side's as the run recorded it.
    got.gated = (expected.get("ours") or {}).get("gated")
    disagreements = compare(0, got, Outcome.from_json(expected["kubeScheduler"]))
    assert not disagreements, "\n".join(map(str, disagreements))
