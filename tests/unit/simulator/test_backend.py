"""The in-memory cluster: API writes land in the store and reach the watcher, as an informer's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler_core.framework import Code, PodInfo
from scheduler_core.framework.writes import patch_pod_status, preempt
from scheduler_core.simulator import Event, InMemoryCluster
from tests.wrappers import node, pod


class Watcher:
    def __init__(self) -> None:
        self.updates: list[tuple[Mapping[str, Any], Mapping[str, Any]]] = []
        self.deletes: list[Mapping[str, Any]] = []

    def on_pod_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self.updates.append((old, new))

    def on_pod_delete(self, pod: Mapping[str, Any]) -> None:
        self.deletes.append(pod)

    def on_object_update(self, kind: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self.updates.append((old, new))


def _cluster(*pods: dict[str, Any]) -> tuple[InMemoryCluster, Watcher]:
    cluster = InMemoryCluster(
        nodes=[node("n1")], pods=pods, objects={"PodDisruptionBudget": [{"metadata": {"name": "b"}}]}
    )
    watcher = Watcher()
    cluster.watch(watcher)
    return cluster, watcher


async def test_bind_assigns_the_node_and_feeds_the_update_back() -> None:
    manifest = pod("web", uid="u1")
    cluster, watcher = _cluster(manifest)
    assert await cluster.api.bind(PodInfo(manifest), "n1") is None
    stored = cluster.pods["u1"]
    assert stored["spec"]["nodeName"] == "n1"
    assert {"type": "PodScheduled", "status": "True"} in stored["status"]["conditions"]
    ((old, new),) = watcher.updates
    assert "nodeName" not in old["spec"] and new["spec"]["nodeName"] == "n1"
    assert "nodeName" not in manifest["spec"]  # the input manifest is never mutated


async def test_bind_of_an_assigned_pod_is_a_conflict() -> None:
    manifest = pod("web", uid="u1", node_name="n0")
    cluster, watcher = _cluster(manifest)
    status = await cluster.bind(PodInfo(manifest), "n1")
    assert status is not None and status.code is Code.ERROR
    assert (
        status.message()
        == 'Operation cannot be fulfilled on pods/binding "web": pod web is already assigned to node "n0"'
    )
    assert cluster.pods["u1"]["spec"]["nodeName"] == "n0"
    assert watcher.updates == []


async def test_api_calls_on_a_missing_pod_say_not_found() -> None:
    cluster, _ = _cluster()
    ghost = PodInfo(pod("ghost", uid="g"))
    for status in (
        await cluster.bind(ghost, "n1"),
        await patch_pod_status(cluster, ghost, {"nominatedNodeName": "n1"}),
    ):
        assert status is not None and status.code is Code.ERROR and status.message() == 'pods "ghost" not found'
    # Deleting what is already gone is what the delete wanted (the API's NotFound is not an error).
    assert await preempt(cluster, ghost, "preempted") is None


async def test_delete_pod_removes_it_and_tells_the_watcher() -> None:
    manifest = pod("victim", uid="v", node_name="n1")
    cluster, watcher = _cluster(manifest)
    assert await preempt(cluster, PodInfo(manifest), "preempted by default/big") is None
    assert "v" not in cluster.pods
    assert watcher.deletes == [manifest]
    assert cluster.deleted == [(manifest, "preempted by default/big")]


async def test_set_nominated_node_sets_and_clears_status() -> None:
    manifest = pod("p", uid="p")
    cluster, watcher = _cluster(manifest)
    await patch_pod_status(cluster, PodInfo(manifest), {"nominatedNodeName": "n1"})
    assert cluster.pods["p"]["status"]["nominatedNodeName"] == "n1"
    await patch_pod_status(cluster, PodInfo(manifest), {"nominatedNodeName": None})
    assert "nominatedNodeName" not in cluster.pods["p"]["status"]
    assert len(watcher.updates) == 2


def test_report_failure_stores_condition_and_event_without_feeding_back() -> None:
    manifest = pod("p", uid="p")
    cluster, watcher = _cluster(manifest)
    info = PodInfo(manifest)
    cluster.report_failure(info, "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.", None)
    cluster.report_failure(info, "Unschedulable", "0/1 nodes are available: 1 Too many pods.", "n1")
    status = cluster.pods["p"]["status"]
    assert status["conditions"] == [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/1 nodes are available: 1 Too many pods."}
    ]  # fmt: skip
    assert status["nominatedNodeName"] == "n1"
    assert [e.message for e in cluster.events_for("default", "p")] == [
        "0/1 nodes are available: 1 Insufficient cpu.",
        "0/1 nodes are available: 1 Too many pods.",
    ]
    assert watcher.updates == []


def test_report_scheduled_records_the_upstream_event() -> None:
    manifest = pod("p", uid="p")
    cluster, _ = _cluster(manifest)
    cluster.report_scheduled(PodInfo(manifest), "n1")
    assert cluster.events == [Event("Normal", "Scheduled", "default", "p", "Successfully assigned default/p to n1")]


def test_objects_by_kind() -> None:
    manifest = pod("p", uid="p")
    cluster, _ = _cluster(manifest)
    assert cluster.objects("PodDisruptionBudget") == [{"metadata": {"name": "b"}}]
    assert [p["metadata"]["name"] for p in cluster.objects("Pod")] == ["p"]
    assert [n["metadata"]["name"] for n in cluster.objects("Node")] == ["n1"]
    assert list(cluster.objects("Service")) == []
    assert cluster.pod("default", "p") is cluster.pods["p"]
    assert cluster.pod("default", "nope") is None


def test_objects_version_changes_with_every_change_of_the_kind_and_only_then() -> None:
    """``objects_version``: what a plugin keeps across cycles is keyed by it, so every create,
    replace and delete changes it and no number comes back; other kinds keep theirs; pods and
    nodes (which the scheduler follows by their events) are not counted."""
    cluster, _ = _cluster(pod("p", uid="p"))
    service = {"metadata": {"name": "s", "namespace": "default"}}
    seen = [cluster.objects_version("Service")]  # no Service yet: a number all the same
    budgets = cluster.objects_version("PodDisruptionBudget")
    cluster.create_object("Service", service)
    seen.append(cluster.objects_version("Service"))
    cluster.replace_object("Service", {**service, "spec": {}})
    seen.append(cluster.objects_version("Service"))
    cluster.delete_object("Service", "default", "s")
    seen.append(cluster.objects_version("Service"))
    assert None not in seen and len(set(seen)) == len(seen)
    cluster.delete_object("Service", "default", "s")  # nothing to delete: nothing changed
    assert cluster.objects_version("Service") == seen[-1]
    volumes = cluster.objects_version("PersistentVolume")
    cluster.create_object("PersistentVolume", {"metadata": {"name": "v"}})
    assert cluster.objects_version("PersistentVolume") != volumes
    assert cluster.objects_version("PodDisruptionBudget") == budgets
    assert cluster.objects_version("Pod") is None and cluster.objects_version("Node") is None
