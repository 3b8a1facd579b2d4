"""PodTopologySpread inside the whole scheduler (the simulator), registered next to the
in-tree plugins of the default profile (where upstream gives it weight 2)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from scheduler_core.plugins.podtopologyspread import PodTopologySpread
from scheduler_core.runtime.registry import default_registry
from scheduler_core.simulator.manifests import load_texts
from scheduler_core.simulator.report import render_json
from scheduler_core.simulator.run import Simulation, simulate
from tests.unit.plugins.podtopologyspread.helpers import FOO_SELECTOR, ZONE, spread
from tests.wrappers import node, pod

ZONES = {"n0": "z1", "n1": "z1", "n2": "z2", "n3": "z2", "n4": "z3", "n5": "z3"}
ZONED_NODES = [node(name, labels={ZONE: zone}) for name, zone in ZONES.items()]


def run(*objects: dict[str, Any], batch: bool = True) -> Simulation:
    registry: dict[str, Any] = dict(default_registry(with_out_of_tree=False))
    registry[PodTopologySpread.name] = PodTopologySpread
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
    return simulate(load_texts([("cluster.json", text)]), seed=3, registry=registry, batch=batch)


def test_hard_zone_spread_balances_zones() -> None:
    """Six replicas, maxSkew 1 over three zones with one replica already in z1: 3/2/2."""
    constraint = spread(1, ZONE, "DoNotSchedule", FOO_SELECTOR)
    replicas = [pod(f"web-{i}", labels={"foo": ""}, topologySpreadConstraints=[constraint]) for i in range(6)]
    # A pre-existing replica in z1 tilts the count.
    existing = pod("old", labels={"foo": ""}, node_name="n0")
    simulation = run(*ZONED_NODES, existing, *replicas)
    placed = [report.node for report in simulation.pods]
    assert None not in placed
    per_zone = Counter(ZONES[name] for name in [*placed, "n0"] if name is not None)
    assert sorted(per_zone.values()) == [2, 2, 3]
    # Hard constraints only: PreScore skips, so the plugin gives no score.
    assert all("PodTopologySpread" not in r.scores.get(r.node or "", {}) for r in simulation.pods)


def test_missing_topology_key_is_reported_as_upstream() -> None:
    stray = pod(
        "stray", labels={"foo": ""}, topologySpreadConstraints=[spread(1, "rack", "DoNotSchedule", FOO_SELECTOR)]
    )
    (report,) = run(*ZONED_NODES, stray).pods
    assert report.node is None
    # UnschedulableAndUnresolvable: preemption cannot add a label.
    assert report.message == (
        "0/6 nodes are available: 6 node(s) didn't match pod topology spread constraints (missing required label). "
        "no new claims to deallocate, preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling."
    )


def test_skew_rejection_is_reported_as_upstream() -> None:
    nodes = [
        node("a", labels={ZONE: "z1"}),
        node("b", labels={ZONE: "z2"}, taints=[{"key": "k", "effect": "NoSchedule"}]),
    ]
    existing = pod("old", labels={"foo": ""}, node_name="a")
    # b is tainted (TaintToleration rejects it) but still counts as a zone with 0 pods.
    newcomer = pod(
        "new", labels={"foo": ""}, topologySpreadConstraints=[spread(1, ZONE, "DoNotSchedule", FOO_SELECTOR)]
    )
    (report,) = run(*nodes, existing, newcomer).pods
    assert report.node is None
    # Unschedulable (not unresolvable): preemption tries, but the old pod has the same priority.
    assert report.message == (
        "0/2 nodes are available: 1 node(s) didn't match pod topology spread constraints, "
        "1 node(s) had untolerated taint(s). no new claims to deallocate, preemption: 0/2 nodes are available: "
        "1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
    )


def test_system_defaults_score_pods_selected_by_a_service() -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}},
    }
    replicas = [pod(f"web-{i}", labels={"app": "web"}) for i in range(3)]
    loner = pod("loner", labels={"app": "other"})
    simulation = run(*ZONED_NODES, service, *replicas, loner)
    by_name = {r.name: r for r in simulation.pods}
    for i in range(3):
        report = by_name[f"web-{i}"]
        assert all("PodTopologySpread" in scores for scores in report.scores.values()), report.scores
    assert all("PodTopologySpread" not in scores for scores in by_name["loner"].scores.values())
    assert len({by_name[f"web-{i}"].node for i in range(3)}) == 3


def test_batch_and_per_node_runs_agree() -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"selector": {"foo": ""}}}
    soft = spread(1, "kubernetes.io/hostname", "ScheduleAnyway", FOO_SELECTOR)
    hard = spread(2, ZONE, "DoNotSchedule", FOO_SELECTOR, min_domains=4)
    items = [
        *ZONED_NODES,
        node("bare"),
        service,
        pod("old-1", labels={"foo": ""}, node_name="n0"),
        pod("old-2", labels={"foo": ""}, node_name="n2"),
        *[pod(f"a-{i}", labels={"foo": ""}, topologySpreadConstraints=[hard, soft]) for i in range(5)],
        *[pod(f"b-{i}", labels={"foo": ""}) for i in range(4)],
        *[pod(f"c-{i}", labels={"foo": ""}, topologySpreadConstraints=[soft]) for i in range(3)],
    ]
    assert render_json(run(*items, batch=True).pods) == render_json(run(*items, batch=False).pods)
