"""TaintToleration, as upstream ``tainttoleration/taint_toleration_test.go``
(TestTaintTolerationScore, TestTaintTolerationFilter, TestIsSchedulableAfterNodeChange,
Test_isSchedulableAfterPodChange)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler_core.framework import (
    MAX_NODE_SCORE,
    ActionType,
    Code,
    CycleState,
    EventObject,
    EventResource,
    NodeColumns,
    NodeInfo,
    NodeScore,
    QueueingHint,
    Status,
)
from scheduler_core.plugins.tainttoleration import TaintToleration
from scheduler_core.plugins.tainttoleration.taint_toleration import ERR_REASON_NOT_MATCH
from tests.wrappers import node, pod, pod_info

Taints = list[dict[str, str]]


def taint(key: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def toleration(key: str, value: str = "", effect: str = "", operator: str = "Equal") -> dict[str, str]:
    return {"key": key, "operator": operator, "value": value, "effect": effect}


PREFER = "PreferNoSchedule"
ARM = taint("cpu-type", "arm64", PREFER)
SSD = taint("disk-type", "ssd", PREFER)


@pytest.mark.parametrize(
    ("tolerations", "nodes", "expected"),
    [
        pytest.param(
            [toleration("foo", "bar", PREFER)],
            [
                node("nodeA", taints=[taint("foo", "bar", PREFER)]),
                node("nodeB", taints=[taint("foo", "blah", PREFER)]),
            ],
            [MAX_NODE_SCORE, 0],
            id="TestTaintTolerationScore/node with taints tolerated by the pod gets a higher score",
        ),
        pytest.param(
            [toleration("cpu-type", "arm64", PREFER), toleration("disk-type", "ssd", PREFER)],
            [node("nodeA", taints=[]), node("nodeB", taints=[ARM]), node("nodeC", taints=[ARM, SSD])],
            [MAX_NODE_SCORE, MAX_NODE_SCORE, MAX_NODE_SCORE],
            id="TestTaintTolerationScore/all taints tolerated, same score whatever their count",
        ),
        pytest.param(
            [toleration("foo", "bar", PREFER)],
            [node("nodeA", taints=[]), node("nodeB", taints=[ARM]), node("nodeC", taints=[ARM, SSD])],
            [MAX_NODE_SCORE, 50, 0],
            id="TestTaintTolerationScore/the more intolerable taints a node has, the lower score it gets",
        ),
        pytest.param(
            [toleration("cpu-type", "arm64", "NoSchedule"), toleration("disk-type", "ssd", "NoSchedule")],
            [
                node("nodeA", taints=[]),
                node("nodeB", taints=[taint("cpu-type", "arm64", "NoSchedule")]),
                node("nodeC", taints=[ARM, SSD]),
            ],
            [MAX_NODE_SCORE, MAX_NODE_SCORE, 0],
            id="TestTaintTolerationScore/only PreferNoSchedule taints and tolerations are checked",
        ),
        pytest.param(
            [],
            [node("nodeA", taints=[]), node("nodeB", taints=[ARM])],
            [MAX_NODE_SCORE, 0],
            id="TestTaintTolerationScore/Default behaviour No taints and tolerations",
        ),
        pytest.param(
            [{"key": "cpu-type", "operator": "Exists"}],
            [node("nodeA", taints=[ARM]), node("nodeB", taints=[ARM, SSD])],
            [MAX_NODE_SCORE, 0],
            id="empty-effect toleration counts for PreferNoSchedule",
        ),
    ],
)
def test_score(tolerations: Taints, nodes: list[dict[str, Any]], expected: list[int]) -> None:
    plugin = TaintToleration(None, None)
    p = pod_info("pod1", tolerations=tolerations)
    infos = [NodeInfo(n) for n in nodes]
    state = CycleState()
    assert plugin.pre_score(state, p, infos) is None
    scores = []
    for info in infos:
        score, status = plugin.score(state, p, info)
        assert status is None
        scores.append(NodeScore(info.name, score))
    raw = [s.score for s in scores]
    assert plugin.normalize_score(state, p, scores) is None
    assert [s.score for s in scores] == expected
    # The batch forms agree, raw and normalized.
    batch = plugin.score_batch(state, p, NodeColumns(infos), np.arange(len(infos), dtype=np.int64))
    assert batch is not None
    assert batch.tolist() == raw
    plugin.normalize_score_batch(state, p, batch)
    assert batch.tolist() == expected


def test_score_without_pre_score_is_an_error() -> None:
    plugin = TaintToleration(None, None)
    _, status = plugin.score(CycleState(), pod_info(), NodeInfo(node("n", taints=[])))
    assert status is not None and status.code is Code.ERROR
    assert plugin.score_batch(CycleState(), pod_info(), NodeColumns([]), np.arange(0, dtype=np.int64)) is None


UNTOLERATED = Status.unresolvable(ERR_REASON_NOT_MATCH)


@pytest.mark.parametrize(
    ("tolerations", "taints", "want"),
    [
        pytest.param(
            [],
            [taint("dedicated", "user1", "NoSchedule")],
            UNTOLERATED,
            id="TestTaintTolerationFilter/A pod having no tolerations can't be scheduled onto a node with taints",
        ),
        pytest.param(
            [toleration("dedicated", "user1", "NoSchedule")],
            [taint("dedicated", "user1", "NoSchedule")],
            None,
            id="TestTaintTolerationFilter/A pod which can be scheduled on a dedicated node assigned to user1",
        ),
        pytest.param(
            [toleration("dedicated", "user2", "NoSchedule")],
            [taint("dedicated", "user1", "NoSchedule")],
            UNTOLERATED,
            id="TestTaintTolerationFilter/A pod which can't be scheduled on a dedicated node assigned to user2",
        ),
        pytest.param(
            [toleration("foo", effect="NoSchedule", operator="Exists")],
            [taint("foo", "bar", "NoSchedule")],
            None,
            id="TestTaintTolerationFilter/toleration with operator Exists tolerates the taint",
        ),
        pytest.param(
            [toleration("dedicated", "user2", "NoSchedule"), toleration("foo", effect="NoSchedule", operator="Exists")],
            [taint("dedicated", "user2", "NoSchedule"), taint("foo", "bar", "NoSchedule")],
            None,
            id="TestTaintTolerationFilter/multiple tolerations, all the taints are tolerated",
        ),
        pytest.param(
            [toleration("foo", "bar", PREFER)],
            [taint("foo", "bar", "NoSchedule")],
            UNTOLERATED,
            id="TestTaintTolerationFilter/key and value match but (non-empty) effect doesn't",
        ),
        pytest.param(
            [toleration("foo", "bar")],
            [taint("foo", "bar", "NoSchedule")],
            None,
            id="TestTaintTolerationFilter/toleration effect is empty, taint effect NoSchedule",
        ),
        pytest.param(
            [toleration("dedicated", "user2", "NoSchedule")],
            [taint("dedicated", "user1", PREFER)],
            None,
            id="TestTaintTolerationFilter/key and value don't match but the taint is PreferNoSchedule",
        ),
        pytest.param(
            [],
            [taint("dedicated", "user1", PREFER)],
            None,
            id="TestTaintTolerationFilter/no toleration, but the taint is PreferNoSchedule",
        ),
        pytest.param([], [taint("k", "v", "NoExecute")], UNTOLERATED, id="NoExecute taints filter too"),
    ],
)
def test_filter(tolerations: Taints, taints: Taints, want: Status | None) -> None:
    plugin = TaintToleration(None, None)
    p = pod_info("pod1", tolerations=tolerations)
    info = NodeInfo(node("nodeA", taints=taints))
    assert plugin.filter(CycleState(), p, info) == want
    mask = plugin.filter_batch(CycleState(), p, NodeColumns([info]))
    assert mask is not None
    assert mask.tolist() == [want is None]


def test_filter_batch_without_taints_passes_every_node() -> None:
    infos = [NodeInfo(node(f"n{i}", taints=[])) for i in range(5)]
    mask = TaintToleration(None, None).filter_batch(CycleState(), pod_info(), NodeColumns(infos))
    assert mask is not None
    assert mask.tolist() == [True] * 5


USER2 = [toleration("dedicated", "user2", "NoSchedule")]


@pytest.mark.parametrize(
    ("tolerations", "old", "new", "want"),
    [
        pytest.param(
            USER2,
            None,
            node("nodeA", taints=[taint("dedicated", "user1", "NoSchedule")]),
            QueueingHint.SKIP,
            id="TestIsSchedulableAfterNodeChange/skip-queue-on-untoleratedtaint-node-added",
        ),
        pytest.param(
            USER2,
            None,
            node("nodeA", taints=[taint("dedicated", "user2", "NoSchedule")]),
            QueueingHint.QUEUE,
            id="TestIsSchedulableAfterNodeChange/queue-on-toleratedtaint-node-added",
        ),
        pytest.param(
            USER2,
            node("nodeA", taints=[taint("dedicated", "user1", "NoSchedule")]),
            node(
                "nodeA", taints=[taint("dedicated", "user1", "NoSchedule"), taint("dedicated", "user3", "NoSchedule")]
            ),
            QueueingHint.SKIP,
            id="TestIsSchedulableAfterNodeChange/skip-unrelated-change",
        ),
        pytest.param(
            USER2,
            node("nodeA", taints=[taint("dedicated", "user1", "NoSchedule")]),
            node("nodeA", taints=[taint("dedicated", "user2", "NoSchedule")]),
            QueueingHint.QUEUE,
            id="TestIsSchedulableAfterNodeChange/queue-on-taint-change",
        ),
        pytest.param(
            USER2,
            node("nodeA", taints=[]),
            node("nodeA", taints=[taint("dedicated", "user2", "NoSchedule")]),
            QueueingHint.SKIP,
            id="already tolerated before the update",
        ),
    ],
)
def test_hint_node_change(tolerations: Taints, old: EventObject, new: EventObject, want: QueueingHint) -> None:
    plugin = TaintToleration(None, None)
    assert plugin._is_schedulable_after_node_change(pod_info("pod1", tolerations=tolerations), old, new) is want


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(None, "not-a-node", id="TestIsSchedulableAfterNodeChange/backoff-wrong-new-object"),
        pytest.param(
            "not-a-node",
            node("nodeA", taints=[taint("dedicated", "user1", "NoSchedule")]),
            id="TestIsSchedulableAfterNodeChange/backoff-wrong-old-object",
        ),
    ],
)
def test_hint_node_change_wrong_object_raises(old: object, new: object) -> None:
    with pytest.raises(TypeError):
        TaintToleration(None, None)._is_schedulable_after_node_change(pod_info(), old, new)  # type: ignore[arg-type]  # on purpose


FOO = [{"key": "foo", "effect": "NoSchedule"}]


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(
            pod("pod-2", "ns-1", uid="uid1"),
            pod("pod-2", "ns-1", uid="uid1", tolerations=FOO),
            QueueingHint.SKIP,
            id="Test_isSchedulableAfterPodChange/skip-updates-other-pod",
        ),
        pytest.param(
            pod("pod-1", "ns-1", uid="uid0"),
            pod("pod-1", "ns-1", uid="uid0", labels={"foo": "bar"}),
            QueueingHint.SKIP,
            id="Test_isSchedulableAfterPodChange/skip-updates-not-toleration",
        ),
        pytest.param(
            pod("pod-1", "ns-1", uid="uid0"),
            pod("pod-1", "ns-1", uid="uid0", tolerations=FOO),
            QueueingHint.QUEUE,
            id="Test_isSchedulableAfterPodChange/queue-on-toleration-added",
        ),
    ],
)
def test_hint_pod_toleration_change(old: EventObject, new: EventObject, want: QueueingHint) -> None:
    target = pod_info("pod-1", namespace="ns-1", uid="uid0")
    assert TaintToleration(None, None)._is_schedulable_after_pod_toleration_change(target, old, new) is want


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(None, "not-a-pod", id="Test_isSchedulableAfterPodChange/backoff-wrong-new-object"),
        pytest.param("not-a-pod", pod("p"), id="Test_isSchedulableAfterPodChange/backoff-wrong-old-object"),
    ],
)
def test_hint_pod_change_wrong_object_raises(old: object, new: object) -> None:
    with pytest.raises(TypeError):
        TaintToleration(None, None)._is_schedulable_after_pod_toleration_change(pod_info(), old, new)  # type: ignore[arg-type]  # on purpose


def test_events() -> None:
    events = TaintToleration(None, None).events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
        (EventResource.POD, ActionType.UPDATE_POD_TOLERATIONS),
    ]
    assert all(e.hint is not None for e in events)
