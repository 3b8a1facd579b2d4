"""NodeAffinity, as upstream ``nodeaffinity/node_affinity_test.go`` (TestNodeAffinity,
TestNodeAffinityPriority, Test_isSchedulableAfterNodeChange), with each case also run
through the batch forms."""

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
    PreFilterResult,
    QueueingHint,
    Status,
)
from scheduler_core.plugins.nodeaffinity import NodeAffinity, NodeAffinityArgs
from scheduler_core.plugins.nodeaffinity.node_affinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
)
from tests.unit.plugins.nodeaffinity.helpers import Json, affinity, expr, name_in, preferred, required, term
from tests.wrappers import node, pod_info

POD = Status.unresolvable(ERR_REASON_POD)
SKIP = Status.skip()


def case(
    name: str,
    *,
    node_selector: dict[str, str] | None = None,
    pod_affinity: Json | None = None,
    labels: dict[str, str] | None = None,
    node_name: str = "",
    want: Status | None = None,
    want_pre_filter: Status | None = None,
    want_result: PreFilterResult | None = None,
    added: Json | None = None,
    run_pre_filter: bool = True,
) -> Any:
    return pytest.param(
        node_selector,
        pod_affinity,
        node(node_name, labels=labels, hostname_label=False),
        want,
        want_pre_filter,
        want_result,
        added,
        run_pre_filter,
        id=f"TestNodeAffinity/{name}",
    )


FOO_BAR = {"foo": "bar"}
GPU = {"GPU": "NVIDIA-GRID-K1"}
ZONE_FOO = {"zone": "foo"}


@pytest.mark.parametrize(
    ("node_selector", "pod_affinity", "node", "want", "want_pre_filter", "want_result", "added", "run_pre_filter"),
    [
        case("missing labels", node_selector=FOO_BAR, want=POD),
        case("same labels", node_selector=FOO_BAR, labels=FOO_BAR),
        case("node labels are superset", node_selector=FOO_BAR, labels={"foo": "bar", "baz": "blah"}),
        case("node labels are subset", node_selector={"foo": "bar", "baz": "blah"}, labels=FOO_BAR, want=POD),
        case(
            "Pod with matchExpressions using In operator that matches the existing node",
            pod_affinity=required(term(expr("foo", "In", "bar", "value2"))),
            labels=FOO_BAR,
        ),
        case(
            "Pod with matchExpressions using Gt operator that matches the existing node",
            pod_affinity=required(term(expr("kernel-version", "Gt", "0204"))),
            labels={"kernel-version": "0206"},
        ),
        case(
            "Pod with matchExpressions using NotIn operator that matches the existing node",
            pod_affinity=required(term(expr("mem-type", "NotIn", "DDR", "DDR2"))),
            labels={"mem-type": "DDR3"},
        ),
        case(
            "Pod with matchExpressions using Exists operator that matches the existing node",
            pod_affinity=required(term(expr("GPU", "Exists"))),
            labels=GPU,
        ),
        case(
            "Pod with affinity that don't match node's labels won't schedule onto the node",
            pod_affinity=required(term(expr("foo", "In", "value1", "value2"))),
            labels=FOO_BAR,
            want=POD,
        ),
        case(
            "Pod with empty MatchExpressions is not a valid value will match no objects",
            pod_affinity=required({"matchExpressions": []}),
            labels=FOO_BAR,
            want=POD,
        ),
        case("Pod with no Affinity will schedule onto a node", labels=FOO_BAR, want_pre_filter=SKIP),
        case(
            "Pod with Affinity but nil NodeSelector will schedule onto a node",
            pod_affinity={"requiredDuringSchedulingIgnoredDuringExecution": None},
            labels=FOO_BAR,
            want_pre_filter=SKIP,
        ),
        case(
            "Pod with multiple matchExpressions ANDed that matches the existing node",
            pod_affinity=required(term(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER"))),
            labels=GPU,
        ),
        case(
            "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
            pod_affinity=required(term(expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER"))),
            labels=GPU,
            want=POD,
        ),
        case(
            "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels",
            pod_affinity=required(
                term(expr("foo", "In", "bar", "value2")), term(expr("diffkey", "In", "wrong", "value2"))
            ),
            labels=FOO_BAR,
        ),
        case(
            "Pod with an Affinity and a PodSpec.NodeSelector both are satisfied",
            node_selector=FOO_BAR,
            pod_affinity=required(term(expr("foo", "Exists"))),
            labels=FOO_BAR,
        ),
        case(
            "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector is not satisfied",
            node_selector=FOO_BAR,
            pod_affinity=required(term(expr("foo", "Exists"))),
            labels={"foo": "barrrrrr"},
            want=POD,
        ),
        case(
            "Pod with an invalid value in Affinity term won't be scheduled onto the node",
            pod_affinity=required(term(expr("foo", "NotIn", "invalid value: ___@#$%^"))),
            labels=FOO_BAR,
            want=POD,
        ),
        case(
            "Pod with matchFields using In operator that matches the existing node",
            pod_affinity=required(term(fields=[name_in("node1")])),
            node_name="node1",
            want_result=PreFilterResult(frozenset({"node1"})),
        ),
        case(
            "Pod with matchFields using In operator that does not match the existing node",
            pod_affinity=required(term(fields=[name_in("node1")])),
            node_name="node2",
            want=POD,
            want_result=PreFilterResult(frozenset({"node1"})),
        ),
        case(
            "Pod with two terms: matchFields does not match, but matchExpressions matches",
            pod_affinity=required(term(fields=[name_in("node1"), name_in("node2")]), term(expr("foo", "In", "bar"))),
            node_name="node2",
            labels=FOO_BAR,
        ),
        case(
            "Pod with one term: matchFields does not match, but matchExpressions matches",
            pod_affinity=required(term(expr("foo", "In", "bar"), fields=[name_in("node1")])),
            node_name="node2",
            labels=FOO_BAR,
            want=POD,
            want_result=PreFilterResult(frozenset({"node1"})),
        ),
        case(
            "Pod with one term: both matchFields and matchExpressions match",
            pod_affinity=required(term(expr("foo", "In", "bar"), fields=[name_in("node1")])),
            node_name="node1",
            labels=FOO_BAR,
            want_result=PreFilterResult(frozenset({"node1"})),
        ),
        case(
            "Pod with two terms: both matchFields and matchExpressions do not match",
            pod_affinity=required(term(fields=[name_in("node1")]), term(expr("foo", "In", "not-match-to-bar"))),
            node_name="node2",
            labels=FOO_BAR,
            want=POD,
        ),
        case(
            "Pod with two terms of node.Name affinity",
            pod_affinity=required(term(fields=[name_in("node1")]), term(fields=[name_in("node2")])),
            node_name="node2",
            want_result=PreFilterResult(frozenset({"node1", "node2"})),
        ),
        case(
            "Pod with two conflicting mach field requirements",
            pod_affinity=required(term(fields=[name_in("node1"), name_in("node2")])),
            node_name="node2",
            labels=FOO_BAR,
            want=POD,
            want_pre_filter=Status.unresolvable(ERR_REASON_CONFLICT),
        ),
        case(
            "Matches added affinity and Pod's node affinity",
            pod_affinity=required(term(expr("zone", "In", "foo"))),
            node_name="node2",
            labels=ZONE_FOO,
            added=required(term(fields=[name_in("node2")])),
        ),
        case(
            "Matches added affinity but not Pod's node affinity",
            pod_affinity=required(term(expr("zone", "In", "bar"))),
            node_name="node2",
            labels=ZONE_FOO,
            added=required(term(fields=[name_in("node2")])),
            want=POD,
        ),
        case(
            "Doesn't match added affinity",
            node_name="node2",
            labels=ZONE_FOO,
            added=required(term(expr("zone", "In", "bar"))),
            want=Status.unresolvable(ERR_REASON_ENFORCED),
        ),
        case(
            "Matches node selector correctly even if PreFilter is not called",
            node_selector=FOO_BAR,
            labels={"foo": "bar", "baz": "blah"},
            run_pre_filter=False,
        ),
        case(
            "Matches node affinity correctly even if PreFilter is not called",
            pod_affinity=required(term(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER"))),
            labels=GPU,
            run_pre_filter=False,
        ),
    ],
)
def test_filter(
    node_selector: dict[str, str] | None,
    pod_affinity: Json | None,
    node: Json,
    want: Status | None,
    want_pre_filter: Status | None,
    want_result: PreFilterResult | None,
    added: Json | None,
    run_pre_filter: bool,
) -> None:
    plugin = NodeAffinity(NodeAffinityArgs.model_validate({"addedAffinity": added}), None)
    pod = pod_info(node_selector=node_selector, affinity=affinity(pod_affinity) if pod_affinity else None)
    info = NodeInfo(node)
    state = CycleState()
    if run_pre_filter:
        result, status = plugin.pre_filter(state, pod, [info])
        assert status == want_pre_filter
        assert result == want_result
    assert plugin.filter(state, pod, info) == want
    mask = plugin.filter_batch(state, pod, NodeColumns([info]))
    assert mask is not None
    assert mask.tolist() == [want is None]


LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}
AFFINITY1 = preferred((2, term(expr("foo", "In", "bar"))))
AFFINITY2 = preferred(
    (2, term(expr("foo", "In", "bar"))),
    (4, term(expr("key", "In", "value"))),
    (5, term(expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1"))),
)


@pytest.mark.parametrize(
    ("pod_affinity", "node_list", "expected", "added", "run_pre_score"),
    [
        pytest.param(
            None,
            [
                node("node1", labels=LABEL1, hostname_label=False),
                node("node2", labels=LABEL2, hostname_label=False),
                node("node3", labels=LABEL3, hostname_label=False),
            ],
            [0, 0, 0],
            None,
            False,
            id="TestNodeAffinityPriority/all nodes are same priority as NodeAffinity is nil",
        ),
        pytest.param(
            AFFINITY1,
            [
                node("node1", labels=LABEL4, hostname_label=False),
                node("node2", labels=LABEL2, hostname_label=False),
                node("node3", labels=LABEL3, hostname_label=False),
            ],
            [0, 0, 0],
            None,
            True,
            id="TestNodeAffinityPriority/no node matches preferred scheduling requirements",
        ),
        pytest.param(
            AFFINITY1,
            [
                node("node1", labels=LABEL1, hostname_label=False),
                node("node2", labels=LABEL2, hostname_label=False),
                node("node3", labels=LABEL3, hostname_label=False),
            ],
            [MAX_NODE_SCORE, 0, 0],
            None,
            True,
            id="TestNodeAffinityPriority/only node1 matches the preferred scheduling requirements of pod",
        ),
        pytest.param(
            AFFINITY2,
            [
                node("node1", labels=LABEL1, hostname_label=False),
                node("node5", labels=LABEL5, hostname_label=False),
                node("node2", labels=LABEL2, hostname_label=False),
            ],
            [18, MAX_NODE_SCORE, 36],
            None,
            True,
            id="TestNodeAffinityPriority/all nodes matches the preferred requirements but with different priorities",
        ),
        pytest.param(
            None,
            [node("node1", labels=LABEL1, hostname_label=False), node("node2", labels=LABEL2, hostname_label=False)],
            [MAX_NODE_SCORE, 0],
            AFFINITY1,
            True,
            id="TestNodeAffinityPriority/added affinity",
        ),
        pytest.param(
            AFFINITY1,
            [
                node("node1", labels=LABEL1, hostname_label=False),
                node("node2", labels=LABEL2, hostname_label=False),
                node("node3", labels=LABEL5, hostname_label=False),
            ],
            [40, 60, MAX_NODE_SCORE],
            preferred((3, term(expr("key", "In", "value")))),
            True,
            id="TestNodeAffinityPriority/added affinity and pod has default affinity",
        ),
        pytest.param(
            AFFINITY2,
            [
                node("node1", labels=LABEL1, hostname_label=False),
                node("node5", labels=LABEL5, hostname_label=False),
                node("node2", labels=LABEL2, hostname_label=False),
            ],
            [18, MAX_NODE_SCORE, 36],
            None,
            False,
            id="TestNodeAffinityPriority/calculate the priorities correctly even if PreScore is not called",
        ),
    ],
)
def test_score(
    pod_affinity: Json | None, node_list: list[Json], expected: list[int], added: Json | None, run_pre_score: bool
) -> None:
    plugin = NodeAffinity(NodeAffinityArgs.model_validate({"addedAffinity": added}), None)
    pod = pod_info(affinity=affinity(pod_affinity) if pod_affinity else None)
    infos = [NodeInfo(n) for n in node_list]
    state = CycleState()
    if run_pre_score:
        assert plugin.pre_score(state, pod, infos) is None
    scores = []
    for info in infos:
        score, status = plugin.score(state, pod, info)
        assert status is None
        scores.append(NodeScore(info.name, score))
    raw = [s.score for s in scores]
    assert plugin.normalize_score(state, pod, scores) is None
    assert [s.score for s in scores] == expected
    batch = plugin.score_batch(state, pod, NodeColumns(infos), np.arange(len(infos), dtype=np.int64))
    assert batch is not None
    assert batch.tolist() == raw
    plugin.normalize_score_batch(state, pod, batch)
    assert batch.tolist() == expected


def test_pre_score_skips_without_node_affinity() -> None:
    # TestNodeAffinityPriority/Skip is returned in PreScore when NodeAffinity is nil
    status = NodeAffinity(None, None).pre_score(
        CycleState(), pod_info(), [NodeInfo(node("node1", labels=LABEL1, hostname_label=False))]
    )
    assert status == Status.skip()


def test_pre_score_error_on_broken_affinity() -> None:
    # TestNodeAffinityPriority/PreScore returns error when an incoming Pod has a broken affinity
    pod = pod_info(affinity=affinity(preferred((2, term(expr("invalid key", "In", "bar"))))))
    status = NodeAffinity(None, None).pre_score(CycleState(), pod, [])
    assert status is not None and status.code is Code.ERROR
    assert status.message() == (
        '[0].matchExpressions[0].key: Invalid value: "invalid key": name part must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
        "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    )
    # Without PreScore, Score reports the same error and the batch form defers to it.
    _, score_status = NodeAffinity(None, None).score(CycleState(), pod, NodeInfo(node("n", hostname_label=False)))
    assert score_status == status
    assert NodeAffinity(None, None).score_batch(CycleState(), pod, NodeColumns([]), np.arange(0)) is None


def test_pre_score_empty_preferred_list_is_not_skipped() -> None:
    # A present but empty list is not nil upstream: scoring runs and gives 0.
    pod = pod_info(affinity=affinity({"preferredDuringSchedulingIgnoredDuringExecution": []}))
    assert NodeAffinity(None, None).pre_score(CycleState(), pod, []) is None


FOO_IN_BAR = affinity(required(term(expr("foo", "In", "bar"))))
ENFORCED_FOO_BAR = required(term(expr("foo", "In", "bar")))


@pytest.mark.parametrize(
    ("added", "old", "new", "want"),
    [
        pytest.param(None, None, node("", hostname_label=False), QueueingHint.SKIP, id="skip-queue-on-add"),
        pytest.param(None, None, node("", labels=FOO_BAR, hostname_label=False), QueueingHint.QUEUE, id="queue-on-add"),
        pytest.param(
            None,
            node("", hostname_label=False),
            node("", hostname_label=False),
            QueueingHint.SKIP,
            id="skip-unrelated-changes",
        ),
        pytest.param(
            None,
            node("", hostname_label=False),
            node("", labels={"k": "v"}, hostname_label=False),
            QueueingHint.SKIP,
            id="skip-unrelated-changes-on-labels",
        ),
        pytest.param(
            None,
            node("", labels=FOO_BAR, hostname_label=False),
            node("", labels={"k": "v"}, hostname_label=False),
            QueueingHint.SKIP,
            id="skip-labels-changes-on-node-from-suitable-to-unsuitable",
        ),
        pytest.param(
            None,
            node("", hostname_label=False),
            node("", labels=FOO_BAR, hostname_label=False),
            QueueingHint.QUEUE,
            id="queue-on-labels-change-makes-pod-schedulable",
        ),
        pytest.param(
            ENFORCED_FOO_BAR,
            None,
            node("", hostname_label=False),
            QueueingHint.SKIP,
            id="skip-queue-on-add-scheduler-enforced-node-affinity",
        ),
        pytest.param(
            ENFORCED_FOO_BAR,
            None,
            node("", labels=FOO_BAR, hostname_label=False),
            QueueingHint.QUEUE,
            id="queue-on-add-scheduler-enforced-node-affinity",
        ),
    ],
)
def test_hint_node_change(added: Json | None, old: EventObject, new: EventObject, want: QueueingHint) -> None:
    plugin = NodeAffinity(NodeAffinityArgs.model_validate({"addedAffinity": added}), None)
    assert plugin._is_schedulable_after_node_change(pod_info(affinity=FOO_IN_BAR), old, new) is want


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(None, "not-a-node", id="Test_isSchedulableAfterNodeChange/backoff-wrong-new-object"),
        pytest.param(
            "not-a-node",
            node("", hostname_label=False),
            id="Test_isSchedulableAfterNodeChange/backoff-wrong-old-object",
        ),
    ],
)
def test_hint_wrong_object_raises(old: object, new: object) -> None:
    with pytest.raises(TypeError):
        NodeAffinity(None, None)._is_schedulable_after_node_change(pod_info(affinity=FOO_IN_BAR), old, new)  # type: ignore[arg-type]  # on purpose


def test_hint_queues_on_parse_error() -> None:
    # Upstream returns (Queue, err) when the pod's affinity does not parse and no term matched.
    pod = pod_info(affinity=affinity(required(term(expr("foo", "Bogus", "bar")))))
    assert (
        NodeAffinity(None, None)._is_schedulable_after_node_change(pod, None, node("", hostname_label=False))
        is QueueingHint.QUEUE
    )


def test_events() -> None:
    (event,) = NodeAffinity(None, None).events_to_register()
    assert event.event.resource is EventResource.NODE
    assert event.event.action == ActionType.ADD | ActionType.UPDATE_NODE_LABEL
    assert event.hint is not None


def test_pre_filter_node_selector_present_but_empty_is_not_skipped() -> None:
    # Upstream skips only when spec.nodeSelector is nil.
    pod = pod_info(nodeSelector={})
    assert NodeAffinity(None, None).pre_filter(CycleState(), pod, []) == (None, None)
