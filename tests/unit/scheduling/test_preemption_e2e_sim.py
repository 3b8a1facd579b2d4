"""Preemption end to end through ``simulate``: the real scheduler loop over the in-memory cluster,
with DefaultPreemption in the registry (so in the default profile, as upstream's default plugins).

A high-priority pod fits nowhere; DefaultPreemption picks the node whose eviction violates no
PodDisruptionBudget and costs the least (upstream pickOneNodeForPreemption), evicts only the
victims the pod needs gone (the more important one is reprieved), nominates the pod there; the
victims' deletion requeues it, and it binds to the nominated node.
"""

from __future__ import annotations

import json
from typing import Any

from scheduler_core.framework import PodInfo, PodUID, Status
from scheduler_core.plugins.defaultpreemption import DefaultPreemption
from scheduler_core.runtime.registry import default_registry
from scheduler_core.simulator.manifests import load_texts
from scheduler_core.simulator.run import Simulation, simulate
from tests.wrappers import make_pod, node, pod


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


CLASSES = [priority_class("low", 100), priority_class("mid", 500), priority_class("high", 1000)]


DB_PDB = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "db", "namespace": "default"},
    "spec": {"selector": {"matchLabels": {"app": "db"}}, "minAvailable": 2},
    "status": {"disruptionsAllowed": 0, "currentHealthy": 2, "desiredHealthy": 2, "expectedPods": 2},
}


class RecordingPreemption(DefaultPreemption):
    """DefaultPreemption recording its PreEnqueue answers (True: the pod is held)."""

    held: list[tuple[str, bool]] = []

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        status = super().pre_enqueue(pod)
        RecordingPreemption.held.append((pod.name, status is not None))
        return status


def run(
    *docs: dict[str, Any] | list[dict[str, Any]], plugin: type[DefaultPreemption] = DefaultPreemption
) -> Simulation:
    registry: dict[str, Any] = dict(default_registry(with_out_of_tree=False))
    registry[DefaultPreemption.name] = plugin
    items = [d for doc in docs for d in (doc if isinstance(doc, list) else [doc])]
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
    return simulate(load_texts([("cluster.json", text)]), registry=registry)


def events(sim: Simulation, name: str) -> list[tuple[str, str]]:
    return [(e.reason, e.message) for e in sim.cluster.events_for("default", name)]


def test_high_priority_pod_preempts_the_right_victims_and_binds_to_its_nominated_node() -> None:
    sim = run(
        CLASSES,
        node("node-a", cpu="2", memory="8Gi"),
        node("node-b", cpu="2", memory="8Gi"),
        node("node-c", cpu="2", memory="8Gi"),
        # node-a: evicting would break the db PodDisruptionBudget.
        pod("db-1", uid="db-1", labels={"app": "db"}, priorityClassName="low", cpu="1", node_name="node-a"),
        pod("db-2", uid="db-2", labels={"app": "db"}, priorityClassName="low", cpu="1", node_name="node-a"),
        # node-b: evicting web is enough; the more important cache is reprieved.
        pod("web", uid="web", labels={"app": "x"}, priorityClassName="low", cpu="1", node_name="node-b"),
        pod("cache", uid="cache", labels={"app": "x"}, priorityClassName="mid", cpu="500m", node_name="node-b"),
        # node-c: nothing of lower priority.
        pod("critical", uid="critical", labels={"app": "x"}, priorityClassName="high", cpu="2", node_name="node-c"),
        DB_PDB,
        pod("urgent", uid="urgent", labels={"app": "x"}, priorityClassName="high", cpu="1500m"),
    )
    (report,) = sim.pods
    assert (report.name, report.status, report.node) == ("urgent", "Scheduled", "node-b")
    assert [(p.get("metadata") or {}).get("name") for p, _ in sim.cluster.deleted] == ["web"]
    assert [reason for _, reason in sim.cluster.deleted] == [
        "crd-scheduler: preempting to accommodate a higher priority pod"
    ]
    assert events(sim, "urgent") == [
        ("FailedScheduling", "0/3 nodes are available: 3 Insufficient cpu."),
        ("Scheduled", "Successfully assigned default/urgent to node-b"),
    ]
    stored = sim.cluster.pod("default", "urgent")
    # The binding ends the nomination, in the pod as the API server's binding does
    # (ClearingNominatedNodeNameAfterBinding, v1.36.3 pkg/registry/core/pod/storage/storage.go)
    # and in the nominator.
    assert stored is not None and "nominatedNodeName" not in stored["status"]
    assert sim.scheduler.queue.nominator.nominated_pods_for_node("node-b") == []
    # The preemption task has finished, and no longer holds the pod.
    (plugin,) = [fwk.plugins[DefaultPreemption.name] for _, fwk in sim.scheduler.profiles]
    assert isinstance(plugin, DefaultPreemption)
    assert not plugin.executor.tasks
    assert not plugin.executor.is_running_preemption(PodUID("urgent"))


def test_several_victims_are_evicted_before_the_pod_is_retried() -> None:
    """The first deletion finds the pod held by PreEnqueue (its preemption still runs); the last
    one releases it, and it binds where the victims were."""
    RecordingPreemption.held = []
    sim = run(
        CLASSES,
        node("node-a", cpu="2", memory="8Gi"),
        pod("w1", uid="w1", labels={"app": "x"}, priorityClassName="low", cpu="700m", node_name="node-a"),
        pod("w2", uid="w2", labels={"app": "x"}, priorityClassName="low", cpu="700m", node_name="node-a"),
        pod("w3", uid="w3", labels={"app": "x"}, priorityClassName="mid", cpu="600m", node_name="node-a"),
        pod("urgent", uid="urgent", labels={"app": "x"}, priorityClassName="high", cpu="2"),
        plugin=RecordingPreemption,
    )
    (report,) = sim.pods
    assert (report.status, report.node, report.attempts) == ("Scheduled", "node-a", 2)
    assert sorted(p["metadata"]["name"] for p, _ in sim.cluster.deleted) == ["w1", "w2", "w3"]
    # Admitted on arrival; held after the first two deletions; released by the last one.
    assert RecordingPreemption.held == [("urgent", False), ("urgent", True), ("urgent", True), ("urgent", False)]


def test_preemption_policy_never_keeps_the_pod_pending() -> None:
    sim = run(
        CLASSES,
        node("node-a", cpu="2", memory="8Gi"),
        pod("web", uid="web", labels={"app": "x"}, priorityClassName="low", cpu="2", node_name="node-a"),
        pod("polite", uid="polite", labels={"app": "x"}, priorityClassName="high", cpu="1", preemptionPolicy="Never"),
    )
    (report,) = sim.pods
    assert (report.status, report.node) == ("Unschedulable", None)
    assert sim.cluster.deleted == []
    assert report.message.startswith(
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate,"
        " preemption: not eligible due to preemptionPolicy=Never."
    )


def test_no_victims_message_is_upstreams() -> None:
    sim = run(
        CLASSES,
        node("node-a", cpu="2", memory="8Gi"),
        pod("big", uid="big", labels={"app": "x"}, priorityClassName="high", cpu="2", node_name="node-a"),
        pod("also-big", uid="also-big", labels={"app": "x"}, priorityClassName="high", cpu="1"),
    )
    (report,) = sim.pods
    assert report.message == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "no new claims to deallocate, preemption: 0/1 nodes are available:"
        " 1 No preemption victims found for incoming pod."
    )


def started(manifest: dict[str, Any], second: int) -> dict[str, Any]:
    manifest["status"] = {"startTime": f"2026-01-01T00:00:{second:02d}Z"}
    return manifest


def test_a_preemptor_held_when_its_requeueing_deletion_came_is_retried_when_its_preemption_ends() -> None:
    """The parity harness's seeds 287 and 487 (docs/parity.md): only NodePorts rejected the pod
    on node-a, so only the deletion of the victim holding its port may requeue it. That victim
    goes first (the older one; the last is the least important), while the preemption still
    runs, so PreEnqueue holds the pod; the last victim's deletion does not interest NodePorts.
    Upstream v1.36.3 leaves the pod parked there for good; it is activated when its preemption
    ends, and binds."""
    RecordingPreemption.held = []
    sim = run(
        CLASSES,
        node("node-a", cpu="2", memory="8Gi"),
        started(
            make_pod()
            .name("ported")
            .uid("ported")
            .priority_class("low")
            .req(cpu="1")
            .host_port(8080)
            .node("node-a")
            .obj(),
            0,
        ),
        started(
            pod("plain", uid="plain", labels={"app": "x"}, priorityClassName="low", cpu="1", node_name="node-a"), 1
        ),
        make_pod().name("urgent").uid("urgent").priority_class("high").req(cpu="2").host_port(8080).obj(),
        plugin=RecordingPreemption,
    )
    (report,) = sim.pods
    assert (report.status, report.node) == ("Scheduled", "node-a")
    assert [p["metadata"]["name"] for p, _ in sim.cluster.deleted] == ["ported", "plain"]
    # Held by the first deletion; the second was not worth a PreEnqueue; the activation let it go.
    assert RecordingPreemption.held == [("urgent", False), ("urgent", True), ("urgent", False)]
