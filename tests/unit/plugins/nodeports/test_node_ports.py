"""NodePorts, as upstream ``nodeports/node_ports_test.go`` (TestNodePorts, TestPreFilterDisabled,
Test_isSchedulableAfterPodDeleted, TestFits)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import (
    ActionType,
    Code,
    CycleState,
    EventResource,
    NodeInfo,
    PodInfo,
    QueueingHint,
    Status,
)
from scheduler_core.plugins.nodeports import NodePorts
from scheduler_core.plugins.nodeports.node_ports import ERR_REASON, fits
from tests.wrappers import make_pod, node, node_info, pod

UNSCHEDULABLE = Status.unschedulable(ERR_REASON)


@pytest.mark.parametrize(
    ("the_pod", "existing", "want_filter"),
    [
        pytest.param(
            make_pod().host_ports("UDP/127.0.0.1/8080").obj(),
            make_pod().host_ports("UDP/127.0.0.1/9090").obj(),
            None,
            id="TestNodePorts/other port",
        ),
        pytest.param(
            make_pod().host_ports("UDP/127.0.0.1/8080").obj(),
            make_pod().host_ports("UDP/127.0.0.1/8080").obj(),
            UNSCHEDULABLE,
            id="TestNodePorts/same udp port",
        ),
        pytest.param(
            make_pod().host_ports("TCP/127.0.0.1/8080").obj(),
            make_pod().host_ports("TCP/127.0.0.1/8080").obj(),
            UNSCHEDULABLE,
            id="TestNodePorts/same tcp port",
        ),
        pytest.param(
            make_pod().host_ports("TCP/127.0.0.1/8080").obj(),
            make_pod().host_ports("TCP/127.0.0.2/8080").obj(),
            None,
            id="TestNodePorts/different host ip",
        ),
        pytest.param(
            make_pod().host_ports("UDP/127.0.0.1/8080").obj(),
            make_pod().host_ports("TCP/127.0.0.1/8080").obj(),
            None,
            id="TestNodePorts/different protocol",
        ),
        pytest.param(
            make_pod().host_ports("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080").obj(),
            make_pod().host_ports("UDP/127.0.0.1/8080").obj(),
            UNSCHEDULABLE,
            id="TestNodePorts/second udp port conflict",
        ),
        pytest.param(
            make_pod().host_ports("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080").obj(),
            make_pod().host_ports("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081").obj(),
            UNSCHEDULABLE,
            id="TestNodePorts/first tcp port conflict",
        ),
        pytest.param(
            make_pod().host_ports("TCP/0.0.0.0/8001").obj(),
            make_pod().host_ports("TCP/127.0.0.1/8001").obj(),
            UNSCHEDULABLE,
            id="TestNodePorts/first tcp port conflict due to 0.0.0.0 hostIP",
        ),
        pytest.param(
            make_pod().host_ports("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001").obj(),
            make_pod().host_ports("TCP/127.0.0.1/8001").obj(),
            UNSCHEDULABLE,
            id="TestNodePorts/TCP hostPort conflict due to 0.0.0.0 hostIP",
        ),
        pytest.param(
            make_pod().host_ports("TCP/127.0.0.1/8001").obj(),
            make_pod().host_ports("TCP/0.0.0.0/8001").obj(),
            UNSCHEDULABLE,
            id="TestNodePorts/second tcp port conflict to 0.0.0.0 hostIP",
        ),
        pytest.param(
            make_pod().host_ports("UDP/127.0.0.1/8001").obj(),
            make_pod().host_ports("TCP/0.0.0.0/8001").obj(),
            None,
            id="TestNodePorts/second different protocol",
        ),
        pytest.param(
            make_pod().host_ports("UDP/127.0.0.1/8001").obj(),
            make_pod().host_ports("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001").obj(),
            UNSCHEDULABLE,
            id="TestNodePorts/UDP hostPort conflict due to 0.0.0.0 hostIP",
        ),
        pytest.param(
            make_pod().init_container(host_ports=(8001,), sidecar=True).obj(),
            make_pod().host_ports("TCP/0.0.0.0/8001").obj(),
            UNSCHEDULABLE,
            id="TestNodePorts/TCP hostPort conflict from sidecar initContainer",
        ),
        pytest.param(
            make_pod().host_ports("/" + "/8001").obj(),
            make_pod().host_ports("TCP/0.0.0.0/8001").obj(),
            UNSCHEDULABLE,
            id="empty ip and protocol mean 0.0.0.0 and TCP",
        ),
    ],
)
def test_filter(the_pod: dict[str, Any], existing: dict[str, Any], want_filter: Status | None) -> None:
    plugin = NodePorts(None, None)
    state = CycleState()
    p = PodInfo(the_pod)
    assert plugin.pre_filter(state, p, []) == (None, None)
    assert plugin.filter(state, p, node_info("m1", pods_on_node=[existing])) == want_filter


@pytest.mark.parametrize(
    "the_pod",
    [
        pytest.param(pod(), id="TestNodePorts/skip filter"),
        pytest.param(
            make_pod().init_container(host_ports=(8001,), sidecar=False).obj(),
            id="TestNodePorts/non-sidecar initContainer using hostPort",
        ),
        pytest.param(
            pod(containers=[{"name": "c", "image": "x", "ports": [{"containerPort": 80}]}]),
            id="container port without host port",
        ),
    ],
)
def test_pre_filter_skips_pods_without_host_ports(the_pod: dict[str, Any]) -> None:
    result, status = NodePorts(None, None).pre_filter(CycleState(), PodInfo(the_pod), [])
    assert result is None and status is not None and status.code is Code.SKIP


def test_filter_without_pre_filter_is_an_error() -> None:
    # TestPreFilterDisabled
    status = NodePorts(None, None).filter(CycleState(), PodInfo(pod()), NodeInfo(node("n")))
    assert status is not None and status.code is Code.ERROR
    assert status.message() == 'reading "PreFilterNodePorts" from cycleState: not found'


HOST_PORT_8080 = pod(host_ports=[8080])


@pytest.mark.parametrize(
    ("old", "expected"),
    [
        pytest.param(pod(), QueueingHint.SKIP, id="Test_isSchedulableAfterPodDeleted/skip-queue-on-unscheduled"),
        pytest.param(
            pod(node_name="fake-node"),
            QueueingHint.SKIP,
            id="Test_isSchedulableAfterPodDeleted/skip-queue-on-non-hostport",
        ),
        pytest.param(
            pod(node_name="fake-node", host_ports=[8081]),
            QueueingHint.SKIP,
            id="Test_isSchedulableAfterPodDeleted/skip-queue-on-unrelated-hostport",
        ),
        pytest.param(
            pod(node_name="fake-node", host_ports=[8080]),
            QueueingHint.QUEUE,
            id="Test_isSchedulableAfterPodDeleted/queue-on-released-hostport",
        ),
        pytest.param(
            {**pod(host_ports=[8080]), "status": {"nominatedNodeName": "fake-node"}},
            QueueingHint.QUEUE,
            id="a nominated pod held the port",
        ),
    ],
)
def test_hint_pod_deleted(old: dict[str, Any], expected: QueueingHint) -> None:
    plugin = NodePorts(None, None)
    hints = {(e.event.resource, e.event.action): e.hint for e in plugin.events_to_register()}
    hint = hints[(EventResource.ASSIGNED_POD, ActionType.DELETE)]
    assert hint is not None
    assert hint(PodInfo(HOST_PORT_8080), PodInfo(old), None) is expected


def test_hint_wrong_object_raises() -> None:
    # Test_isSchedulableAfterPodDeleted/backoff-wrong-old-object: an error queues the pod.
    hint = NodePorts(None, None).events_to_register()[0].hint
    assert hint is not None
    with pytest.raises(TypeError):
        hint(PodInfo(HOST_PORT_8080), "not-a-pod", None)  # on purpose: a stored hint takes any object


def test_events() -> None:
    events = {
        (e.event.resource, e.event.action, e.hint is not None) for e in NodePorts(None, None).events_to_register()
    }
    assert events == {
        (EventResource.ASSIGNED_POD, ActionType.DELETE, True),
        (EventResource.POD, ActionType.DELETE, True),
        (EventResource.NODE, ActionType.ADD, False),
    }


@pytest.mark.parametrize(
    ("the_pod", "existing", "expected"),
    [
        pytest.param(
            make_pod().host_ports("TCP/127.0.0.1/80").obj(),
            ["TCP/127.0.0.1/9090"],
            True,
            id="TestFits/non-conflicting ports",
        ),
        pytest.param(
            make_pod()
            .host_ports("TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100")
            .obj(),
            ["TCP/127.0.0.1/9090", "TCP/127.0.0.1/9191", "TCP/127.0.1.1/8080"],
            True,
            id="TestFits/multiple non-conflicting ports",
        ),
        pytest.param(
            make_pod().host_ports("TCP/127.0.0.1/80").obj(),
            ["UDP/127.0.0.1/80"],
            True,
            id="TestFits/same ports on different protocols",
        ),
        pytest.param(
            make_pod().host_ports("TCP/127.0.0.1/80").obj(),
            ["TCP/127.0.0.1/80"],
            False,
            id="TestFits/conflicting ports",
        ),
        pytest.param(
            make_pod()
            .host_ports("TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100")
            .obj(),
            ["TCP/127.0.0.1/9090", "TCP/127.0.1.1/90", "TCP/127.0.1.1/8080"],
            False,
            id="TestFits/multiple ports, some conflicting",
        ),
    ],
)
def test_fits(the_pod: dict[str, Any], existing: list[str], expected: bool) -> None:
    assert fits(PodInfo(the_pod), node_info("m1", pods_on_node=[make_pod().host_ports(*existing).obj()])) is expected


def test_freed_port_after_pod_removal() -> None:
    holder = PodInfo(make_pod().host_ports("TCP/0.0.0.0/8080").obj())
    info = node_info("m1")
    info.add_pod(holder)
    wanting = PodInfo(make_pod().host_ports("TCP/10.0.0.1/8080").obj())
    assert not fits(wanting, info)
    info.remove_pod(holder)
    assert fits(wanting, info)
