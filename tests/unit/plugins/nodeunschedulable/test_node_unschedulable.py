"""NodeUnschedulable, as upstream ``nodeunschedulable/node_unschedulable_test.go``
(TestNodeUnschedulable, TestIsSchedulableAfterNodeChange), the pod-toleration hint, and the
batch filter against the per-node one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.framework import (
    ActionType,
    CycleState,
    EventObject,
    EventResource,
    NodeColumns,
    NodeInfo,
    QueueingHint,
    Status,
)
from scheduler_core.plugins.nodeunschedulable import NodeUnschedulable
from scheduler_core.plugins.nodeunschedulable.node_unschedulable import (
    ERR_REASON_UNSCHEDULABLE,
    TAINT_NODE_UNSCHEDULABLE,
)
from tests.wrappers import node, node_info, pod, pod_info

UNSCHEDULABLE_TOLERATION = {"key": TAINT_NODE_UNSCHEDULABLE, "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("tolerations", "unschedulable", "want"),
    [
        pytest.param(
            None,
            True,
            Status.unresolvable(ERR_REASON_UNSCHEDULABLE),
            id="TestNodeUnschedulable/Does not schedule pod to unschedulable node",
        ),
        pytest.param(None, False, None, id="TestNodeUnschedulable/Schedule pod to normal node"),
        pytest.param(
            [UNSCHEDULABLE_TOLERATION],
            True,
            None,
            id="TestNodeUnschedulable/Schedule pod with toleration to unschedulable node",
        ),
        pytest.param([{"operator": "Exists"}], True, None, id="wildcard toleration tolerates unschedulable"),
        pytest.param(
            [{"key": TAINT_NODE_UNSCHEDULABLE, "effect": "NoExecute"}],
            True,
            Status.unresolvable(ERR_REASON_UNSCHEDULABLE),
            id="toleration of another effect does not help",
        ),
    ],
)
def test_filter(tolerations: list[dict[str, str]] | None, unschedulable: bool, want: Status | None) -> None:
    plugin = NodeUnschedulable(None, None)
    got = plugin.filter(CycleState(), pod_info(tolerations=tolerations), NodeInfo(node(unschedulable=unschedulable)))
    assert got == want


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(None, node(unschedulable=True), QueueingHint.SKIP, id="skip-queue-on-unschedulable-node-added"),
        pytest.param(None, node(), QueueingHint.QUEUE, id="queue-on-schedulable-node-added"),
        pytest.param(
            node(unschedulable=True),
            node(unschedulable=True, taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]),
            QueueingHint.SKIP,
            id="skip-unrelated-change",
        ),
        pytest.param(node(unschedulable=True), node(), QueueingHint.QUEUE, id="queue-on-unschedulable-field-change"),
        pytest.param(node(), node(), QueueingHint.SKIP, id="schedulable node stays schedulable"),
        pytest.param(NodeInfo(node(unschedulable=True)), NodeInfo(node()), QueueingHint.QUEUE, id="NodeInfo objects"),
    ],
)
def test_hint_node_change(old: EventObject, new: EventObject, want: QueueingHint) -> None:
    assert NodeUnschedulable(None, None)._is_schedulable_after_node_change(pod_info(), old, new) is want


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(None, "not-a-node", id="backoff-wrong-new-object"),
        pytest.param("not-a-node", node(unschedulable=True), id="backoff-wrong-old-object"),
    ],
)
def test_hint_node_change_wrong_object_raises(old: object, new: object) -> None:
    # Raising counts as QUEUE, as upstream's (Queue, err).
    with pytest.raises(TypeError):
        NodeUnschedulable(None, None)._is_schedulable_after_node_change(pod_info(), old, new)  # type: ignore[arg-type]  # on purpose


@pytest.mark.parametrize(
    ("new_name", "new_tolerations", "want"),
    [
        pytest.param("p", [UNSCHEDULABLE_TOLERATION], QueueingHint.QUEUE, id="toleration of the taint added"),
        pytest.param("p", [{"key": "foo", "effect": "NoSchedule"}], QueueingHint.SKIP, id="unrelated toleration added"),
        pytest.param("other", [UNSCHEDULABLE_TOLERATION], QueueingHint.SKIP, id="another pod's update"),
    ],
)
def test_hint_pod_toleration_change(new_name: str, new_tolerations: list[dict[str, str]], want: QueueingHint) -> None:
    target = pod_info("p", uid="uid-p")
    new = pod(new_name, uid=f"uid-{new_name}", tolerations=new_tolerations)
    old = pod(new_name, uid=f"uid-{new_name}")
    assert NodeUnschedulable(None, None)._is_schedulable_after_pod_toleration_change(target, old, new) is want


def test_events() -> None:
    events = NodeUnschedulable(None, None).events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
        (EventResource.POD, ActionType.UPDATE_POD_TOLERATIONS),
    ]
    assert all(e.hint is not None for e in events)


TOLERATIONS = st.lists(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(["", TAINT_NODE_UNSCHEDULABLE, "other"]),
            "operator": st.sampled_from(["Equal", "Exists"]),
            "effect": st.sampled_from(["", "NoSchedule", "NoExecute", "PreferNoSchedule"]),
        }
    ),
    max_size=3,
)


@settings(max_examples=150, deadline=None)
@given(flags=st.lists(st.booleans(), max_size=10), tolerations=TOLERATIONS)
def test_filter_batch_equals_filter(flags: list[bool], tolerations: list[dict[str, str]]) -> None:
    infos = [NodeInfo(node(f"n{i}", unschedulable=flag)) for i, flag in enumerate(flags)]
    columns = NodeColumns(infos)
    plugin = NodeUnschedulable(None, None)
    p = pod_info(tolerations=tolerations)
    mask = plugin.filter_batch(CycleState(), p, columns)
    assert mask is not None
    expected = np.array([plugin.filter(CycleState(), p, info) is None for info in infos], dtype=np.bool_)
    np.testing.assert_array_equal(mask, expected)
    # A cordon after the columns were built is seen by both forms.
    if infos:
        infos[0].set_node(node("n0", unschedulable=not flags[0]))
        mask = plugin.filter_batch(CycleState(), p, columns)
        assert mask is not None
        assert bool(mask[0]) is (plugin.filter(CycleState(), p, infos[0]) is None)


def test_node_info_builder_is_schedulable_by_default() -> None:
    assert NodeUnschedulable(None, None).filter(CycleState(), pod_info(), node_info()) is None
