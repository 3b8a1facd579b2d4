"""The PodScheduled=False condition of a failed attempt, written by the operator's backend on the
real API server when its report lane is saturated (issue 25: ``EventHandlingPodDelete`` on the
dev cluster).

Upstream never drops this write: with ``SchedulerAsyncAPICalls`` off (v1.36.3's default) the
scheduling goroutine patches the status itself (``updatePod`` in ``pkg/scheduler/schedule_one.go``),
and with it on, the API dispatcher keeps one call per pod, a newer status patch merged into the
pending one and a binding overwriting it (``pkg/scheduler/backend/api_dispatcher/call_queue.go``,
``framework/api_calls/api_calls.go`` relevances). A pod left without the condition looks
untouched to ``kubectl``, to upstream's scheduler_perf barriers and to anything waiting on it.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from scheduler_core.framework import PodInfo, writes
from scheduler_operator.control.backend import KubeBackend
from scheduler_operator.control.recorder import EventRecorder
from scheduler_operator.io.calls import Lanes
from scheduler_operator.io.transport import Credentials, Transport
from tests.wrappers import make_pod

PODS = 12


@dataclass
class Side:
    backend: KubeBackend
    lanes: Lanes
    core: Any
    namespace: str

    def create(self, name: str) -> PodInfo:
        body = make_pod().name(name).namespace(self.namespace).req(cpu="100m").obj()
        body["metadata"].pop("uid", None)
        created = self.core.create_namespaced_pod(self.namespace, body)
        return PodInfo(client.ApiClient().sanitize_for_serialization(created))  # type: ignore[no-untyped-call]

    def scheduled(self, pod: PodInfo) -> dict[str, Any] | None:
        stored = self.core.read_namespaced_pod(pod.name, pod.namespace)
        found = [c for c in stored.status.conditions or () if c.type == "PodScheduled"]
        return {"status": found[0].status, "reason": found[0].reason, "message": found[0].message} if found else None


@pytest.fixture
async def side(api: client.ApiClient, namespace: str, request: pytest.FixtureRequest) -> AsyncIterator[Side]:
    # One report in flight and (by default) two waiting: the lane is full after the first pod's
    # event and condition, as it was with 2,590 pods failing within seconds of each other.
    lanes = Lanes(critical=2, reports=1, reports_backlog=getattr(request, "param", 2))
    transport = Transport(Credentials.of(api.configuration))
    recorder = EventRecorder(transport, lanes, instance=f"conditions-{uuid.uuid4().hex[:6]}")
    try:
        yield Side(KubeBackend(transport, lanes, recorder, stores={}), lanes, client.CoreV1Api(api), namespace)
    finally:
        await lanes.drain()
        await transport.close()


async def test_every_failed_pod_gets_its_condition_when_the_report_lane_is_full(side: Side) -> None:
    pods = [side.create(f"unsched-{i}") for i in range(PODS)]
    for i, pod in enumerate(pods):
        side.backend.report_failure(pod, "Unschedulable", f"0/{i} nodes are available", None)
    await side.lanes.drain()

    for i, pod in enumerate(pods):
        assert side.scheduled(pod) == {"status": "False", "reason": "Unschedulable",
                                       "message": f"0/{i} nodes are available"}, pod.name  # fmt: skip


async def test_a_newer_failure_replaces_the_one_still_waiting(side: Side) -> None:
    pods = [side.create(f"unsched-{i}") for i in range(PODS)]
    for pod in pods:
        side.backend.report_failure(pod, "Unschedulable", "0/3 nodes are available", None)
    side.backend.report_failure(pods[-1], "SchedulerError", "later", None)
    await side.lanes.drain()

    assert side.scheduled(pods[-1]) == {"status": "False", "reason": "SchedulerError", "message": "later"}
    assert side.scheduled(pods[0]) == {"status": "False", "reason": "Unschedulable",
                                       "message": "0/3 nodes are available"}  # fmt: skip


@pytest.mark.parametrize("side", [100], indirect=True)  # room for every report: none is dropped
async def test_binding_cancels_the_failure_report_still_waiting(side: Side) -> None:
    """A pod that failed, then fit at its next attempt, must not read PodScheduled=False once
    bound: its waiting report goes, as the dispatcher's binding overwrites a status patch."""
    pods = [side.create(f"unsched-{i}") for i in range(PODS)]
    for pod in pods:
        side.backend.report_failure(pod, "Unschedulable", "0/3 nodes are available", None)
    assert await side.backend.bind(pods[-1], "node-a") is None
    await side.lanes.drain()

    stored = side.core.read_namespaced_pod(pods[-1].name, pods[-1].namespace)
    assert stored.spec.node_name == "node-a"
    assert side.scheduled(pods[-1]) == {"status": "True", "reason": None, "message": None}


def nominated(side: Side, pod: PodInfo) -> str | None:
    return side.core.read_namespaced_pod(pod.name, pod.namespace).status.nominated_node_name  # type: ignore[no-any-return]


async def test_a_failure_clears_the_binding_cycles_nomination_even_when_it_repeats_itself(side: Side) -> None:
    """The binding cycle nominates the pod before PreBind's work (NominatedNodeNameForExpectation);
    a failure after it clears the nomination (``clearNominatedNode``), each time, though the pod
    store (none here: the watch may lag) does not show the nomination and the failure's reason
    and message are the last report's."""
    (pod,) = [side.create("gang-member")]
    for node in ("node-a", "node-b"):
        assert await writes.patch_pod_status(side.backend, pod, {"nominatedNodeName": node}) is None
        assert nominated(side, pod) == node
        side.backend.report_failure(pod, "Unschedulable", "rejected at Permit: timeout", "")
        await side.lanes.drain()
        assert nominated(side, pod) is None, node


@pytest.mark.parametrize("side", [100], indirect=True)
async def test_the_nomination_is_not_undone_by_a_failure_report_still_waiting(side: Side) -> None:
    """An earlier attempt's report (a preemption's nomination elsewhere) still waiting on the
    report lane must not land after the next binding cycle's nomination: upstream writes them
    in order."""
    pods = [side.create(f"unsched-{i}") for i in range(PODS)]
    for pod in pods:
        side.backend.report_failure(pod, "Unschedulable", "0/3 nodes are available", "node-z")
    assert await writes.patch_pod_status(side.backend, pods[-1], {"nominatedNodeName": "node-a"}) is None
    await side.lanes.drain()
    assert nominated(side, pods[-1]) == "node-a"
