"""GangScheduling, as upstream v1.36.3 ``gangscheduling/gangscheduling_test.go``
(TestGangSchedulingFlow, Test_isSchedulableAfterPodAdded, Test_isSchedulableAfterPodGroupAdded)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import Code, CycleState, NodeInfo, PodInfo, QueueingHint, Status
from scheduler_core.framework.storage import scan
from scheduler_core.plugins.gangscheduling import GangScheduling
from scheduler_core.runtime.waiting_pods import WaitingPods
from tests.wrappers import node, pod

KIND = "scheduling.k8s.io/PodGroup"


def group(name: str, min_count: int | None, namespace: str = "ns1") -> dict[str, Any]:
    policy: dict[str, Any] = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"schedulingPolicy": policy},
    }


def member(name: str, pg: str | None, namespace: str = "ns1") -> dict[str, Any]:
    extra: dict[str, Any] = {"schedulingGroup": {"podGroupName": pg}} if pg else {}
    return pod(name, namespace, uid=name, **extra)


P = {n: member(n, pg) for n, pg in [("p1", "pg1"), ("p2", "pg1"), ("p3", "pg1"), ("p4", "pg2"), ("p5", "pg2")]}
BASIC_POD = member("basic-pod", "pg3")
NON_GANG = member("non-gang", None)
GROUPS = [group("pg1", 3), group("pg2", 4), group("pg3", None)]


class FakeHandle:
    def __init__(self, pods: list[dict[str, Any]], groups: list[dict[str, Any]]) -> None:
        self.pods = pods
        self.groups = groups
        self.node = NodeInfo(node("some-node"))
        self.waiting_pods = WaitingPods()

    def objects(self, kind: str) -> list[dict[str, Any]]:
        return {"Pod": self.pods, KIND: self.groups}.get(kind, [])

    def lookup(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return scan(self.objects(kind), namespace, name)  # type: ignore[return-value]

    def snapshot(self) -> FakeHandle:
        return self

    def list(self) -> list[NodeInfo]:
        return [self.node]

    def get_waiting_pod(self, uid: str) -> Any:
        return self.waiting_pods.get(uid)


def assume(handle: FakeHandle, plugin: GangScheduling, manifest: dict[str, Any]) -> tuple[Status | None, float]:
    assumed = PodInfo(manifest).with_node("some-node")
    handle.node.add_pod(assumed)
    return plugin.permit(CycleState(), assumed, "some-node")


@pytest.mark.parametrize(
    ("the_pod", "initial", "groups", "waiting", "pre_enqueue", "permit", "activated", "allowed"),
    [
        pytest.param(NON_GANG, [], GROUPS, [], None, None, [], [], id="non-gang pod succeeds immediately"),
        pytest.param(BASIC_POD, [], GROUPS, [], None, None, [], [], id="basic policy pod succeeds immediately"),
        pytest.param(
            P["p1"],
            ["p2", "p3", "p4", "p5"],
            [],
            [],
            Status.unresolvable('waiting for pods\'s pod group "pg1" to appear in scheduling queue'),
            None,
            [],
            [],
            id="gang pod fails PreEnqueue when pod group is not yet created",
        ),
        pytest.param(
            P["p1"],
            ["p2", "p4", "p5"],
            GROUPS[:2],
            [],
            Status.unresolvable("waiting for minCount pods from a gang to appear in scheduling queue"),
            None,
            [],
            [],
            id="gang pod fails PreEnqueue when quorum is not met",
        ),
        pytest.param(
            P["p1"],
            ["p2", "p3", "p4", "p5"],
            GROUPS[:2],
            ["p2", "p4", "p5"],
            None,
            Status.wait("waiting for minCount pods from a gang to be scheduled"),
            ["ns1/p3"],
            [],
            id="gang pod passes PreEnqueue, but waits at Permit",
        ),
        pytest.param(
            P["p1"],
            ["p2", "p3", "p4", "p5"],
            GROUPS[:2],
            ["p2", "p3", "p4", "p5"],
            None,
            None,
            [],
            ["p2", "p3"],
            id="final gang pod arrives at Permit and allows all waiting pods from a gang",
        ),
    ],
)
async def test_gang_scheduling_flow(
    the_pod: dict[str, Any],
    initial: list[str],
    groups: list[dict[str, Any]],
    waiting: list[str],
    pre_enqueue: Status | None,
    permit: Status | None,
    activated: list[str],
    allowed: list[str],
) -> None:
    handle = FakeHandle([the_pod, *(P[n] for n in initial)], groups)
    plugin = GangScheduling(None, handle)  # type: ignore[arg-type]
    got = plugin.pre_enqueue(PodInfo(the_pod))
    assert got == pre_enqueue
    if got is not None:
        return
    for name in waiting:
        status, timeout = assume(handle, plugin, P[name])
        assert status is not None and status.code is Code.WAIT, name
        assert timeout == 300  # permitTimeoutDuration
        handle.waiting_pods.wait(PodInfo(P[name]), {"GangScheduling": timeout})
    state = CycleState()
    assumed = PodInfo(the_pod).with_node("some-node")
    handle.node.add_pod(assumed)
    status, _ = plugin.permit(state, assumed, "some-node")
    assert status == permit
    assert sorted(state.pods_to_activate) == activated
    released = sorted(w.pod.uid for w in handle.waiting_pods if not w.holding())
    assert released == allowed


@pytest.mark.parametrize(
    ("added", "want"),
    [
        pytest.param(
            member("p2", "pg1"), QueueingHint.QUEUE, id="add a newPod which matches the pod's scheduling group"
        ),
        pytest.param(
            member("p2", "pg1", namespace="ns2"),
            QueueingHint.SKIP,
            id="add a newPod which doesn't match the pod's namespace",
        ),
        pytest.param(
            member("p2", "pg2"), QueueingHint.SKIP, id="add a newPod which doesn't match the pod's pod group name"
        ),
    ],
)
def test_is_schedulable_after_pod_added(added: dict[str, Any], want: QueueingHint) -> None:
    plugin = GangScheduling(None, FakeHandle([], []))  # type: ignore[arg-type]
    hint = next(h for h in plugin.events_to_register() if h.event.resource.value == "Pod").hint
    assert hint is not None and hint(PodInfo(P["p1"]), None, added) is want


@pytest.mark.parametrize(
    ("added", "want"),
    [
        pytest.param(group("pg1", 3), QueueingHint.QUEUE, id="add a pod group which matches the pod's pod group name"),
        pytest.param(
            group("pg2", 3), QueueingHint.SKIP, id="add a pod group which doesn't match the pod's scheduling group name"
        ),
        pytest.param(
            group("pg1", 3, namespace="ns2"),
            QueueingHint.SKIP,
            id="add a pod group which doesn't match the pod's scheduling group namespace",
        ),
    ],
)
def test_is_schedulable_after_pod_group_added(added: dict[str, Any], want: QueueingHint) -> None:
    plugin = GangScheduling(None, FakeHandle([], []))  # type: ignore[arg-type]
    hint = next(h for h in plugin.events_to_register() if h.event.resource.value == KIND).hint
    assert hint is not None and hint(PodInfo(P["p1"]), None, added) is want
