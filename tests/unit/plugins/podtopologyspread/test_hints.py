"""Queueing hints, as upstream ``podtopologyspread/plugin_test.go`` (v1.36.3):
``Test_isSchedulableAfterNodeChange`` and ``Test_isSchedulableAfterPodChange``."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import ActionType, EventResource, NodeInfo, PodInfo, QueueingHint
from scheduler_core.plugins.podtopologyspread import PodTopologySpread
from tests.unit.plugins.podtopologyspread.helpers import BAR_SELECTOR, FOO_SELECTOR, build_snapshot, make_plugin, spread
from tests.wrappers import node, pod, pod_info

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.SKIP
DNS = "DoNotSchedule"
TAINT_A = [{"key": "aaa", "value": "bbb", "effect": "NoSchedule"}]
TAINT_C = [{"key": "ccc", "value": "bbb", "effect": "NoSchedule"}]


def plugin() -> PodTopologySpread:
    return make_plugin(build_snapshot([]))


ZONE_FOO = spread(1, "zone", DNS, FOO_SELECTOR)
NODE_FOO = spread(1, "node", DNS, FOO_SELECTOR)
NODE_BAR = spread(1, "node", DNS, BAR_SELECTOR)
SPREAD_ZONE = pod_info("p", uid="p", labels={"foo": ""}, topologySpreadConstraints=[ZONE_FOO])
SPREAD_ZONE_NODE = pod_info("p", uid="p", labels={"foo": ""}, topologySpreadConstraints=[ZONE_FOO, NODE_FOO])
SPREAD_ZONE_FOO_NODE_BAR = pod_info("p", uid="p", labels={"foo": ""}, topologySpreadConstraints=[ZONE_FOO, NODE_BAR])


@pytest.mark.parametrize(
    ("target", "old", "new", "want"),
    [
        pytest.param(
            SPREAD_ZONE,
            node("node-a", labels={"zone": "zone1"}, hostname_label=False),
            node("node-a", labels={"zone": "zone2"}, hostname_label=False),
            QUEUE,
            id="node updates label which matches topologyKey",
        ),
        pytest.param(
            SPREAD_ZONE,
            node("node-a", labels={"foo": "bar1"}, hostname_label=False),
            node("node-a", labels={"foo": "bar2"}, hostname_label=False),
            SKIP,
            id="node that doesn't match topologySpreadConstraints updates non-related label",
        ),
        pytest.param(
            SPREAD_ZONE_NODE,
            node("node-a", labels={"zone": "zone1", "node": "node1", "foo": "bar"}, hostname_label=False),
            node("node-a", labels={"zone": "zone1", "node": "node1"}, hostname_label=False),
            SKIP,
            id="node that match topologySpreadConstraints adds non-related label",
        ),
        pytest.param(
            SPREAD_ZONE,
            None,
            node("node-a", labels={"foo": "bar"}, hostname_label=False),
            SKIP,
            id="create node with non-related labels",
        ),
        pytest.param(
            SPREAD_ZONE,
            None,
            node("node-a", labels={"zone": "zone1"}, hostname_label=False),
            QUEUE,
            id="create node with related labels",
        ),
        pytest.param(
            SPREAD_ZONE,
            node("node-a", labels={"foo": "bar"}, hostname_label=False),
            None,
            SKIP,
            id="delete node with non-related labels",
        ),
        pytest.param(
            SPREAD_ZONE,
            node("node-a", labels={"zone": "zone1"}, hostname_label=False),
            None,
            QUEUE,
            id="delete node with related labels",
        ),
        pytest.param(
            SPREAD_ZONE_NODE,
            None,
            node("node-a", labels={"zone": "zone1"}, hostname_label=False),
            SKIP,
            id="add node with related labels that only match one of topologySpreadConstraints",
        ),
        pytest.param(
            SPREAD_ZONE_NODE,
            None,
            node("node-a", labels={"zone": "zone1", "node": "node1"}, hostname_label=False),
            QUEUE,
            id="add node with related labels that match all topologySpreadConstraints",
        ),
        pytest.param(
            SPREAD_ZONE_NODE,
            node("node-a", labels={"zone": "zone1"}, hostname_label=False),
            node("node-a", labels={"zone": "zone1"}, hostname_label=False),
            SKIP,
            id="update node with related labels that only match one of topologySpreadConstraints",
        ),
        pytest.param(
            SPREAD_ZONE_NODE,
            node("node-a", labels={"zone": "zone1", "node": "node1"}, hostname_label=False),
            node("node-a", labels={"zone": "zone1", "node": "node2"}, hostname_label=False),
            QUEUE,
            id="update node with related labels that match all topologySpreadConstraints",
        ),
        pytest.param(
            SPREAD_ZONE_NODE,
            node("node-a", labels={"zone": "zone1", "node": "node1"}, taints=TAINT_A, hostname_label=False),
            node("node-a", labels={"zone": "zone1", "node": "node1"}, taints=TAINT_C, hostname_label=False),
            QUEUE,
            id="update node with different taints that match all topologySpreadConstraints",
        ),
        pytest.param(
            SPREAD_ZONE_NODE,
            node("node-a", labels={"node": "node1"}, taints=TAINT_A, hostname_label=False),
            node("node-a", labels={"node": "node1"}, taints=TAINT_C, hostname_label=False),
            SKIP,
            id="update node with different taints that only match one of topologySpreadConstraints",
        ),
    ],
)
def test_is_schedulable_after_node_change(
    target: PodInfo, old: dict[str, Any] | None, new: dict[str, Any] | None, want: QueueingHint
) -> None:
    assert plugin().is_schedulable_after_node_change(target, old, new) is want
    # NodeInfos (what the cache hands out) are read the same way.
    as_info = [None if n is None else NodeInfo(n) for n in (old, new)]
    assert plugin().is_schedulable_after_node_change(target, *as_info) is want


TOLERATION = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]


@pytest.mark.parametrize(
    ("target", "old", "new", "want"),
    [
        pytest.param(
            SPREAD_ZONE,
            None,
            pod("p2", uid="p2", labels={"foo": ""}, nodeName="fake-node"),
            QUEUE,
            id="add pod with labels match topologySpreadConstraints selector",
        ),
        pytest.param(SPREAD_ZONE, None, pod("p2", uid="p2", labels={"foo": ""}), SKIP, id="add un-scheduled pod"),
        pytest.param(
            SPREAD_ZONE,
            pod("p2", uid="p2", labels={"bar": ""}),
            pod("p2", uid="p2", labels={"foo": ""}),
            SKIP,
            id="update un-scheduled pod",
        ),
        pytest.param(SPREAD_ZONE, pod("p2", uid="p2", labels={"foo": ""}), None, SKIP, id="delete un-scheduled pod"),
        pytest.param(
            SPREAD_ZONE,
            None,
            pod("p2", namespace="fake-namespace", uid="p2", labels={"foo": ""}, nodeName="fake-node"),
            SKIP,
            id="add pod with different namespace",
        ),
        pytest.param(
            SPREAD_ZONE,
            None,
            pod("p2", uid="p2", labels={"bar": ""}, nodeName="fake-node"),
            SKIP,
            id="add pod with labels don't match topologySpreadConstraints selector",
        ),
        pytest.param(
            SPREAD_ZONE,
            pod("p2", uid="p2", labels={"foo": ""}, nodeName="fake-node"),
            None,
            QUEUE,
            id="delete pod with labels that match topologySpreadConstraints selector",
        ),
        pytest.param(
            SPREAD_ZONE,
            pod("p2", uid="p2", labels={"bar": ""}, nominated_node_name="fake-node"),
            None,
            SKIP,
            id="delete nominated pod with labels that don't match topologySpreadConstraints selector",
        ),
        pytest.param(
            SPREAD_ZONE,
            pod("p2", uid="p2", labels={"foo": ""}, nominated_node_name="fake-node"),
            None,
            QUEUE,
            id="delete nominated pod with labels that match topologySpreadConstraints selector",
        ),
        pytest.param(
            SPREAD_ZONE,
            pod("p2", uid="p2", labels={"bar": ""}, nodeName="fake-node"),
            None,
            SKIP,
            id="delete pod with labels that don't match topologySpreadConstraints selector",
        ),
        pytest.param(
            SPREAD_ZONE,
            pod("p2", uid="p2", labels={"foo": "", "bar": "bar1"}, nodeName="fake-node"),
            pod("p2", uid="p2", labels={"foo": "", "bar": "bar2"}, nodeName="fake-node"),
            SKIP,
            id="update pod's non-related label",
        ),
        pytest.param(
            SPREAD_ZONE,
            pod("p2", uid="p2", nodeName="fake-node"),
            pod("p2", uid="p2", labels={"foo": ""}, nodeName="fake-node"),
            QUEUE,
            id="add pod's label that matches topologySpreadConstraints selector",
        ),
        pytest.param(
            SPREAD_ZONE,
            pod("p2", uid="p2", labels={"foo": ""}, nodeName="fake-node"),
            pod("p2", uid="p2", nodeName="fake-node"),
            QUEUE,
            id="delete pod label that matches topologySpreadConstraints selector",
        ),
        pytest.param(
            SPREAD_ZONE,
            pod("p2", uid="p2", labels={"foo": "foo1"}, nodeName="fake-node"),
            pod("p2", uid="p2", labels={"foo": "foo2"}, nodeName="fake-node"),
            SKIP,
            id="change pod's label that matches topologySpreadConstraints selector",
        ),
        pytest.param(
            SPREAD_ZONE_FOO_NODE_BAR,
            pod("p2", uid="p2", labels={"foo": ""}, nodeName="fake-node"),
            pod("p2", uid="p2", labels={"foo": "", "bar": "bar2"}, nodeName="fake-node"),
            QUEUE,
            id="add pod's label that matches topologySpreadConstraints selector with multi topologySpreadConstraints",
        ),
        pytest.param(
            SPREAD_ZONE_FOO_NODE_BAR,
            pod("p2", uid="p2", labels={"foo": ""}, nodeName="fake-node"),
            pod("p2", uid="p2", labels={"foo": "", "baz": ""}, nodeName="fake-node"),
            SKIP,
            id="change pod's label that doesn't match topologySpreadConstraints selector with multi "
            "topologySpreadConstraints",
        ),
        pytest.param(
            SPREAD_ZONE_FOO_NODE_BAR,
            pod("p2", uid="p2", labels={"foo": "", "bar": ""}, nodeName="fake-node"),
            pod("p2", uid="p2", labels={"foo": "", "bar": "bar2"}, nodeName="fake-node"),
            SKIP,
            id="change pod's label that match topologySpreadConstraints selector with multi topologySpreadConstraints",
        ),
        pytest.param(
            pod_info(
                "p",
                uid="p",
                labels={"foo": ""},
                topologySpreadConstraints=[
                    spread(1, "zone", DNS, FOO_SELECTOR, node_taints_policy="Honor"),
                    NODE_BAR,
                ],
            ),
            pod("p", uid="p", labels={"foo": ""}),
            pod("p", uid="p", labels={"foo": ""}, tolerations=TOLERATION),
            QUEUE,
            id="the unschedulable Pod has topologySpreadConstraint with NodeTaintsPolicy:Honor "
            "and has got a new toleration",
        ),
        pytest.param(
            pod_info(
                "p",
                uid="p",
                labels={"foo": ""},
                topologySpreadConstraints=[
                    spread(1, "zone", DNS, FOO_SELECTOR, node_taints_policy="Ignore"),
                    NODE_BAR,
                ],
            ),
            pod("p", uid="p", labels={"foo": ""}),
            pod("p", uid="p", labels={"foo": ""}, tolerations=TOLERATION),
            SKIP,
            id="the unschedulable Pod has topologySpreadConstraint without NodeTaintsPolicy:Honor and has got a new "
            "toleration",
        ),
        pytest.param(
            pod_info(
                "p",
                uid="p",
                labels={"foo": ""},
                topologySpreadConstraints=[
                    spread(1, "zone", DNS, FOO_SELECTOR, node_taints_policy="Ignore"),
                    NODE_BAR,
                ],
            ),
            pod("p", uid="p"),
            pod("p", uid="p", labels={"foo": ""}),
            QUEUE,
            id="the unschedulable Pod has topologySpreadConstraint "
            "and has got a new label matching the selector of the constraint",
        ),
        pytest.param(
            pod_info(
                "p",
                uid="p",
                labels={"foo": ""},
                topologySpreadConstraints=[
                    spread(1, "zone", DNS, FOO_SELECTOR, node_taints_policy="Ignore"),
                    NODE_BAR,
                ],
            ),
            pod("p", uid="p"),
            pod("p", uid="p", labels={"unrelated": ""}),
            SKIP,
            id="the unschedulable Pod has topologySpreadConstraint and has got a new unrelated label",
        ),
    ],
)
def test_is_schedulable_after_pod_change(
    target: PodInfo, old: dict[str, Any] | None, new: dict[str, Any] | None, want: QueueingHint
) -> None:
    assert plugin().is_schedulable_after_pod_change(target, old, new) is want
    as_info = [None if p is None else PodInfo(p) for p in (old, new)]
    assert plugin().is_schedulable_after_pod_change(target, *as_info) is want


def test_a_selector_that_does_not_parse_raises_so_the_queue_queues() -> None:
    broken = pod_info(
        "p",
        uid="p",
        topologySpreadConstraints=[spread(1, "zone", DNS, {"matchExpressions": [{"key": "k", "operator": "Bogus"}]})],
    )
    with pytest.raises(ValueError, match="obtaining pod's hard topology spread constraints"):
        plugin().is_schedulable_after_node_change(broken, None, node("n", labels={"zone": "z"}, hostname_label=False))


def test_events_to_register() -> None:
    """Pod Add|UpdatePodLabel|UpdatePodToleration|Delete (assigned and unscheduled pods) and
    Node Add|Delete|UpdateNodeLabel|UpdateNodeTaint, each with its hint."""
    registered = {(e.event.resource, e.event.action): e.hint for e in plugin().events_to_register()}
    pod_actions = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.UPDATE_POD_TOLERATIONS | ActionType.DELETE
    node_actions = ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
    assert set(registered) == {
        (EventResource.ASSIGNED_POD, pod_actions),
        (EventResource.POD, pod_actions),
        (EventResource.NODE, node_actions),
    }
    assert all(hint is not None for hint in registered.values())
