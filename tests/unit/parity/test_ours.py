"""Our side: simulate over a scenario's objects, read into an Outcome."""

from __future__ import annotations

import pytest
import yaml

from bench.parity_harness import ours
from bench.parity_harness.generator import generate
from bench.parity_harness.outcome import SCHEDULED, UNSCHEDULABLE
from bench.parity_harness.profile import SCHEDULER_NAME
from scheduler_core.runtime.registry import default_registry
from tests.wrappers import node, pod

REGISTRY = default_registry()


def _pending(**kwargs: object) -> dict[str, object]:
    return pod("pending", "ns", scheduler_name=SCHEDULER_NAME, **kwargs)  # type: ignore[arg-type]


def test_a_scheduled_pod_reports_feasibility_reasons_and_weighted_scores() -> None:
    objects = [node("a", cpu="4"), node("b", cpu="8"), node("c", cpu="1"), _pending(cpu="2")]
    outcome = ours.run(ours.scenario_yaml(objects, REGISTRY), ("ns", "pending"), REGISTRY)
    assert (outcome.status, outcome.node) == (SCHEDULED, "b")
    assert outcome.feasible == {"a", "b"}
    assert outcome.reasons == {"c": ["Insufficient cpu"]}
    assert set(outcome.scores) == {"a", "b"}
    assert outcome.scores["a"]["TaintToleration"] == 300  # weight 3, no taint
    assert "total" not in outcome.scores["a"]
    assert outcome.totals["b"] == sum(outcome.scores["b"].values())


def test_an_unschedulable_pod() -> None:
    objects = [node("a", cpu="1"), _pending(cpu="2")]
    outcome = ours.run(ours.scenario_yaml(objects, REGISTRY), ("ns", "pending"), REGISTRY)
    assert (outcome.status, outcome.node, outcome.feasible) == (UNSCHEDULABLE, None, frozenset())
    assert outcome.reasons == {"a": ["Insufficient cpu"]}
    assert outcome.message.startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_the_input_carries_the_parity_profile() -> None:
    text = ours.scenario_yaml([node("a")], REGISTRY)
    *_, profile = yaml.safe_load_all(text)
    assert profile["kind"] == "SchedulerProfile" and profile["spec"]["schedulerName"] == SCHEDULER_NAME


def test_an_unknown_pod_is_an_error() -> None:
    with pytest.raises(LookupError, match="ns/ghost"):
        ours.run(ours.scenario_yaml([node("a"), _pending()], REGISTRY), ("ns", "ghost"), REGISTRY)


@pytest.mark.parametrize("seed", range(5))
def test_generated_scenarios_simulate_as_written(seed: int) -> None:
    """The simulator takes the generator's own manifests too (not only the API server's copies)."""
    scenario = generate(seed, frozenset({"taints", "node_affinity", "init_containers"}))
    outcome = ours.run(
        ours.scenario_yaml(scenario.manifests(), REGISTRY),
        (scenario.namespace, scenario.pending["metadata"]["name"]),
        REGISTRY,
    )
    assert outcome.feasible | set(outcome.reasons) == set(scenario.node_names)
