"""Queueing hints, as upstream ``podtopologyspread/plugin_test.go`` (v1.36.3):
``Test_isSchedulableAfterNodeChange`` and ``Test_isSchedulableAfterPodChange``."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import ActionType, EventResource, NodeInfo, PodInfo, QueueingHint
from scheduler_core.plugins.podtopologyspread import PodTopologySpread
from tests.unit.plugins.podtopologyspread.helpers import (
    BAR_SELECTOR,
    FOO_SELECTOR,
    build_snapshot,
    make_node,
    make_plugin,
    spread,
)
from tests.wrappers import make_pod

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.SKIP
DNS = "DoNotSchedule"
TAINT_A = [{"key": "aaa", "value": "bbb", "effect": "NoSchedule"}]
TAINT_C = [{"key": "ccc", "value": "bbb", "effect": "NoSchedule"}]


def plugin() -> PodTopologySpread:
    return make_plugin(build_snapshot([]))


def pod(
    *constraints: dict[str, Any], uid: str = "p", labels: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    """``st.MakePod().UID(uid).Name(uid)`` with ``labels``, constraints and spec fields."""
    wrapper = make_pod().name(uid).uid(uid).namespace(spec.pop("namespace", "default")).labels(labels or {})
    if "nominated" in spec:
        wrapper.nominated_node_name(spec.pop("nominated"))
    if constraints:
        wrapper.spec(topologySpreadConstraints=list(constraints))
    return wrapper.spec(**spec).obj()


ZONE_FOO = spread(1, "zone", DNS, FOO_SELECTOR)
NODE_FOO = spread(1, "node", DNS, FOO_SELECTOR)
NODE_BAR = spread(1, "node", DNS, BAR_SELECTOR)
SPREAD_ZONE = PodInfo(pod(ZONE_FOO, labels={"foo": ""}))
SPREAD_ZONE_NODE = PodInfo(pod(ZONE_FOO, NODE_FOO, labels={"foo": ""}))
SPREAD_ZONE_FOO_NODE_BAR = PodInfo(pod(ZONE_FOO, NODE_BAR, labels={"foo": ""}))


@pytest.mark.parametrize(
    ("target", "old", "new", "want"),
    [
        pytest.param(
            SPREAD_ZONE,
            make_node("node-a", {"zone": "zone1"}),
            make_node("node-a", {"zone": "zone2"}),
            QUEUE,
            id="node updates label which matches topologyKey",
        ),
        pytest.param(
            SPREAD_ZONE,
            make_node("node-a", {"foo": "bar1"}),
            make_node("node-a", {"foo": "bar2"}),
            SKIP,
            id="node that doesn't match topologySpreadConstraints updates non-related label",
        ),
        pytest.param(
            SPREAD_ZONE_NODE,
            make_node("node-a", {"zone": "zone1", "node": "node1", "foo": "bar"}),
            make_node("node-a", {"zone": "zone1", "node": "node1"}),
            SKIP,
            id="node that match topologySpreadConstraints adds non-related label",
        ),
        pytest.param(
            SPREAD_ZONE, None, make_node("node-a", {"foo": "bar"}), SKIP, id="create node with non-related labels"
        ),
        pytest.param(
            SPREAD_ZONE, None, make_node("node-a", {"zone": "zone1"}), QUEUE, id="create node with related labels"
        ),
        pytest.param(
            SPREAD_ZONE, make_node("node-a", {"foo": "bar"}), None, SKIP, id="delete node with non-related labels"
        ),
        pytest.param(
            SPREAD_ZONE, make_node("node-a", {"zone": "zone1"}), None, QUEUE, id="delete node with related labels"
        ),
        pytest.param(
            SPREAD_ZONE_NODE,
            None,
            make_node("node-a", {"zone": "zone1"}),
            SKIP,
            id="add node with related labels that only match one of topologySpreadConstraints",
        ),
        pytest.param(
            SPREAD_ZONE_NODE,
            None,
            make_node("node-a", {"zone": "zone1", "node": "node1"}),
            QUEUE,
            id="add node with related labels that match all topologySpreadConstraints",
        ),
        pytest.param(
            SPREAD_ZONE_NODE,
            make_node("node-a", {"zone": "zone1"}),
            make_node("node-a", {"zone": "zone1"}),
            SKIP,
            id="update node with related labels that only match one of topologySpreadConstraints",
        ),
        pytest.param(
            SPREAD_ZONE_NODE,
            make_node("node-a", {"zone": "zone1", "node": "node1"}),
            make_node("node-a", {"zone": "zone1", "node": "node2"}),
            QUEUE,
            id="update node with related labels that match all topologySpreadConstraints",
        ),
        pytest.param(
            SPREAD_ZONE_NODE,
            make_node("node-a", {"zone": "zone1", "node": "node1"}, taints=TAINT_A),
            make_node("node-a", {"zone": "zone1", "node": "node1"}, taints=TAINT_C),
            QUEUE,
            id="update node with different taints that match all topologySpreadConstraints",
        ),
        pytest.param(
            SPREAD_ZONE_NODE,
            make_node("node-a", {"node": "node1"}, taints=TAINT_A),
            make_node("node-a", {"node": "node1"}, taints=TAINT_C),
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
            pod(uid="p2", labels={"foo": ""}, nodeName="fake-node"),
            QUEUE,
            id="add pod with labels match topologySpreadConstraints selector",
        ),
        pytest.param(SPREAD_ZONE, None, pod(uid="p2", labels={"foo": ""}), SKIP, id="add un-scheduled pod"),
        pytest.param(
            SPREAD_ZONE,
            pod(uid="p2", labels={"bar": ""}),
            pod(uid="p2", labels={"foo": ""}),
            SKIP,
            id="update un-scheduled pod",
        ),
        pytest.param(SPREAD_ZONE, pod(uid="p2", labels={"foo": ""}), None, SKIP, id="delete un-scheduled pod"),
        pytest.param(
            SPREAD_ZONE,
            None,
            pod(uid="p2", labels={"foo": ""}, nodeName="fake-node", namespace="fake-namespace"),
            SKIP,
            id="add pod with different namespace",
        ),
        pytest.param(
            SPREAD_ZONE,
            None,
            pod(uid="p2", labels={"bar": ""}, nodeName="fake-node"),
            SKIP,
            id="add pod with labels don't match topologySpreadConstraints selector",
        ),
        pytest.param(
            SPREAD_ZONE,
            pod(uid="p2", labels={"foo": ""}, nodeName="fake-node"),
            None,
            QUEUE,
            id="delete pod with labels that match topologySpreadConstraints selector",
        ),
        pytest.param(
            SPREAD_ZONE,
            pod(uid="p2", labels={"bar": ""}, nominated="fake-node"),
            None,
            SKIP,
            id="delete nominated pod with labels that don't match topologySpreadConstraints selector",
        ),
        pytest.param(
            SPREAD_ZONE,
            pod(uid="p2", labels={"foo": ""}, nominated="fake-node"),
            None,
            QUEUE,
            id="delete nominated pod with labels that match topologySpreadConstraints selector",
        ),
        pytest.param(
            SPREAD_ZONE,
            pod(uid="p2", labels={"bar": ""}, nodeName="fake-node"),
            None,
            SKIP,
            id="delete pod with labels that don't match topologySpreadConstraints selector",
        ),
        pytest.param(
            SPREAD_ZONE,
            pod(uid="p2", labels={"foo": "", "bar": "bar1"}, nodeName="fake-node"),
            pod(uid="p2", labels={"foo": "", "bar": "bar2"}, nodeName="fake-node"),
            SKIP,
            id="update pod's non-related label",
        ),
        pytest.param(
            SPREAD_ZONE,
            pod(uid="p2", nodeName="fake-node"),
            pod(uid="p2", labels={"foo": ""}, nodeName="fake-node"),
            QUEUE,
            id="add pod's label that matches topologySpreadConstraints selector",
        ),
        pytest.param(
            SPREAD_ZONE,
            pod(uid="p2", labels={"foo": ""}, nodeName="fake-node"),
            pod(uid="p2", nodeName="fake-node"),
            QUEUE,
            id="delete pod label that matches topologySpreadConstraints selector",
        ),
        pytest.param(
            SPREAD_ZONE,
            pod(uid="p2", labels={"foo": "foo1"}, nodeName="fake-node"),
            pod(uid="p2", labels={"foo": "foo2"}, nodeName="fake-node"),
            SKIP,
            id="change pod's label that matches topologySpreadConstraints selector",
        ),
        pytest.param(
            SPREAD_ZONE_FOO_NODE_BAR,
            pod(uid="p2", labels={"foo": ""}, nodeName="fake-node"),
            pod(uid="p2", labels={"foo": "", "bar": "bar2"}, nodeName="fake-node"),
            QUEUE,
            id="add pod's label that matches topologySpreadConstraints selector with multi topologySpreadConstraints",
        ),
        pytest.param(
            SPREAD_ZONE_FOO_NODE_BAR,
            pod(uid="p2", labels={"foo": ""}, nodeName="fake-node"),
            pod(uid="p2", labels={"foo": "", "baz": ""}, nodeName="fake-node"),
            SKIP,
            id="change pod's label that doesn't match topologySpreadConstraints selector with multi "
            "topologySpreadConstraints",
        ),
        pytest.param(
            SPREAD_ZONE_FOO_NODE_BAR,
            pod(uid="p2", labels={"foo": "", "bar": ""}, nodeName="fake-node"),
            pod(uid="p2", labels={"foo": "", "bar": "bar2"}, nodeName="fake-node"),
            SKIP,
            id="change pod's label that match topologySpreadConstraints selector with multi topologySpreadConstraints",
        ),
        pytest.param(
            PodInfo(
                pod(spread(1, "zone", DNS, FOO_SELECTOR, node_taints_policy="Honor"), NODE_BAR, labels={"foo": ""})
            ),
            pod(uid="p", labels={"foo": ""}),
            pod(uid="p", labels={"foo": ""}, tolerations=TOLERATION),
            QUEUE,
            id="the unschedulable Pod has topologySpreadConstraint with NodeTaintsPolicy:Honor "
            "and has got a new toleration",
        ),
        pytest.param(
            PodInfo(
                pod(spread(1, "zone", DNS, FOO_SELECTOR, node_taints_policy="Ignore"), NODE_BAR, labels={"foo": ""})
            ),
            pod(uid="p", labels={"foo": ""}),
            pod(uid="p", labels={"foo": ""}, tolerations=TOLERATION),
            SKIP,
            id="the unschedulable Pod has topologySpreadConstraint without NodeTaintsPolicy:Honor and has got a new "
            "toleration",
        ),
        pytest.param(
            PodInfo(
                pod(spread(1, "zone", DNS, FOO_SELECTOR, node_taints_policy="Ignore"), NODE_BAR, labels={"foo": ""})
            ),
            pod(uid="p"),
            pod(uid="p", labels={"foo": ""}),
            QUEUE,
            id="the unschedulable Pod has topologySpreadConstraint "
            "and has got a new label matching the selector of the constraint",
        ),
        pytest.param(
            PodInfo(
                pod(spread(1, "zone", DNS, FOO_SELECTOR, node_taints_policy="Ignore"), NODE_BAR, labels={"foo": ""})
            ),
            pod(uid="p"),
            pod(uid="p", labels={"unrelated": ""}),
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
    broken = PodInfo(pod(spread(1, "zone", DNS, {"matchExpressions": [{"key": "k", "operator": "Bogus"}]})))
    with pytest.raises(ValueError, match="obtaining pod's hard topology spread constraints"):
        plugin().is_schedulable_after_node_change(broken, None, make_node("n", {"zone": "z"}))


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
