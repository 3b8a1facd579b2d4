"""Default selectors (upstream ``plugins/helper/spread_test.go``, v1.36.3), the shared label
selector (``scheduler_core/framework/labels.py``, apimachinery's ``LabelSelectorAsSelector``),
constraint parsing and the memoised pod counts."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler_core.framework import PodInfo
from scheduler_core.framework import labels as labelselector
from scheduler_core.plugins.podtopologyspread.common import filter_constraints
from scheduler_core.plugins.podtopologyspread.counting import MatchCounter, RowCounter, generations
from scheduler_core.plugins.podtopologyspread.defaults import default_selector
from tests.unit.plugins.podtopologyspread.helpers import FOO_SELECTOR, build_snapshot, spread
from tests.wrappers import make_pod, node, pod, pod_info

NS = "test"
SERVICE = {"metadata": {"name": "test-service", "namespace": NS}, "spec": {"selector": {"podLabelKey": "podLabelVal"}}}
REPLICA_SET = {
    "metadata": {"name": "test-replicaset", "namespace": NS},
    "spec": {"selector": {"matchLabels": {"replicaSetLabelKey": "replicaSetLabelVal"}}},
}
RC = {
    "metadata": {"name": "test-replicationcontroller", "namespace": NS},
    "spec": {"selector": {"replicationLabelKey": "replicationLabelVal"}},
}
STATEFUL_SET = {
    "metadata": {"name": "test-statefulset", "namespace": NS},
    "spec": {"selector": {"matchLabels": {"statefulSetLabelKey": "statefulSetLabelVal"}}},
}


def objects_of(**kinds: list[dict[str, Any]]) -> Any:
    return lambda kind: kinds.get(kind, [])


@pytest.mark.parametrize(
    ("pod", "objects", "want"),
    [
        pytest.param(
            make_pod().name("test-pod").namespace(NS).label("podLabelKey", "podLabelVal").info(),
            {},
            {},
            id="DefaultSelector for default case",
        ),
        pytest.param(
            make_pod().name("test-pod").namespace(NS).label("podLabelKey", "podLabelVal").info(),
            {"Service": [SERVICE]},
            {"podLabelKey": "podLabelVal"},
            id="DefaultSelector for no OwnerReference pod case",
        ),
        pytest.param(
            make_pod()
            .name("test-pod")
            .namespace(NS)
            .label("podLabelKey", "podLabelVal")
            .owner("ReplicaSet", "test-replicaset", api_version="apps/v1")
            .info(),
            {"Service": [SERVICE], "ReplicaSet": [REPLICA_SET]},
            {"podLabelKey": "podLabelVal", "replicaSetLabelKey": "replicaSetLabelVal"},
            id="DefaultSelector for ReplicaSet OwnerReference pod case",
        ),
        pytest.param(
            make_pod()
            .name("test-pod")
            .namespace(NS)
            .label("podLabelKey", "podLabelVal")
            .owner("ReplicationController", "test-replicationcontroller", api_version="v1")
            .info(),
            {"Service": [SERVICE], "ReplicationController": [RC]},
            {"podLabelKey": "podLabelVal", "replicationLabelKey": "replicationLabelVal"},
            id="DefaultSelector for ReplicationController OwnerReference pod case",
        ),
        pytest.param(
            make_pod()
            .name("test-pod")
            .namespace(NS)
            .label("podLabelKey", "podLabelVal")
            .owner("StatefulSet", "test-statefulset", api_version="apps/v1")
            .info(),
            {"Service": [SERVICE], "StatefulSet": [STATEFUL_SET]},
            {"podLabelKey": "podLabelVal", "statefulSetLabelKey": "statefulSetLabelVal"},
            id="DefaultSelector for StatefulSet OwnerReference pod case",
        ),
        pytest.param(
            make_pod().name("test-pod").namespace(NS).label("podLabelKey", "podLabelVal").info(),
            {"Service": [{"metadata": {"name": "s", "namespace": NS}, "spec": {}}]},
            {},
            id="a Service with a nil selector selects nothing",
        ),
        pytest.param(
            make_pod().name("test-pod").namespace(NS).label("podLabelKey", "podLabelVal").info(),
            {"Service": [{"metadata": {"name": "s", "namespace": NS}, "spec": {"selector": {}}}], "X": []},
            {},
            id="a Service with an empty selector selects the pod but adds nothing",
        ),
        pytest.param(
            make_pod()
            .name("test-pod")
            .namespace(NS)
            .label("podLabelKey", "podLabelVal")
            .owner("ReplicaSet", "test-replicaset", api_version="apps/v1/extra")
            .info(),
            {"Service": [SERVICE], "ReplicaSet": [REPLICA_SET]},
            {"podLabelKey": "podLabelVal"},
            id="an owner apiVersion that does not parse",
        ),
    ],
)
def test_default_selector(pod: PodInfo, objects: dict[str, list[dict[str, Any]]], want: dict[str, str]) -> None:
    selector = default_selector(pod, objects_of(**objects))
    assert selector == labelselector.from_set(want)


def test_default_selector_keeps_a_replica_sets_expressions() -> None:
    rs = {
        "metadata": {"name": "rs", "namespace": NS},
        "spec": {"selector": {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]}},
    }
    pod = (
        make_pod()
        .name("test-pod")
        .namespace(NS)
        .label("podLabelKey", "podLabelVal")
        .owner("ReplicaSet", "rs", api_version="apps/v1")
        .info()
    )
    selector = default_selector(pod, objects_of(Service=[SERVICE], ReplicaSet=[rs]))
    assert selector.matches({"podLabelKey": "podLabelVal", "tier": "web"})
    assert not selector.matches({"podLabelKey": "podLabelVal", "tier": "db"})
    assert not selector.matches({"tier": "web"})


@pytest.mark.parametrize(
    ("raw", "labels", "want"),
    [
        pytest.param(None, {}, False, id="nil selects nothing"),
        pytest.param({}, {"a": "b"}, True, id="empty selects everything"),
        pytest.param({"matchLabels": {"a": "b"}}, {"a": "b", "c": "d"}, True, id="matchLabels"),
        pytest.param({"matchLabels": {"a": "b"}}, {"a": "c"}, False, id="matchLabels other value"),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["x", "y"]}]}, {"a": "y"}, True, id="In"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["x"]}]}, {}, True, id="NotIn absent"
        ),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True, id="Exists"),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": ""}, False, id="DoesNotExist"
        ),
    ],
)
def test_label_selector_matches(raw: dict[str, Any] | None, labels: dict[str, str], want: bool) -> None:
    assert labelselector.parse(raw).matches(labels) is want


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "In"}]},
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
            id="In without values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            'values: Invalid value: ["x"]: values set must be empty for exists and does not exist',
            id="Exists with values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
            '"Gt" is not a valid label selector operator',
            id="Gt is not a label selector operator",
        ),
    ],
)
def test_label_selector_errors(raw: dict[str, Any], message: str) -> None:
    """Messages as apimachinery v0.36.3 prints them (checked with ``labels.NewRequirement``)."""
    with pytest.raises(labelselector.SelectorError) as info:
        labelselector.parse(raw)
    assert str(info.value) == message


def test_add_keeps_nothing_nothing() -> None:
    extra = labelselector.from_set({"a": "b"}).requirements
    assert labelselector.NOTHING.add(extra) is labelselector.NOTHING
    assert labelselector.EVERYTHING.add(extra) == labelselector.from_set({"a": "b"})
    assert labelselector.EVERYTHING.empty() and not labelselector.NOTHING.empty()


@pytest.mark.parametrize(
    ("selector", "keys", "labels", "matching", "not_matching"),
    [
        pytest.param(
            FOO_SELECTOR,
            ["rev"],
            {"foo": "", "rev": "2"},
            {"foo": "", "rev": "2"},
            {"foo": "", "rev": "1"},
            id="merged",
        ),
        pytest.param(
            FOO_SELECTOR, ["missing"], {"foo": ""}, {"foo": "x"}, {"bar": ""}, id="keys the pod lacks are skipped"
        ),
        pytest.param({}, ["rev"], {"rev": "2"}, {"rev": "2"}, {"rev": "1"}, id="an empty selector gets the keys"),
    ],
)
def test_match_label_keys(
    selector: dict[str, Any],
    keys: list[str],
    labels: dict[str, str],
    matching: dict[str, str],
    not_matching: dict[str, str],
) -> None:
    raw = [spread(1, "zone", "DoNotSchedule", selector, match_label_keys=keys)]
    (constraint,) = filter_constraints(raw, labels, "DoNotSchedule")
    assert constraint.selector.matches(matching)
    assert not constraint.selector.matches(not_matching)


def test_match_label_keys_leave_a_nil_selector_selecting_nothing() -> None:
    (constraint,) = filter_constraints(
        [spread(1, "zone", "DoNotSchedule", None, match_label_keys=["rev"])], {"rev": "2"}, "DoNotSchedule"
    )
    assert constraint.selector is labelselector.NOTHING


def test_counters_recount_only_changed_nodes() -> None:
    """Counts are memoised per node generation: adding a pod to one node updates it alone."""
    snapshot = build_snapshot(
        [node("a", hostname_label=False), node("b", hostname_label=False)],
        [pod("p1", labels={"foo": ""}, node_name="a"), pod("p2", labels={"foo": ""}, node_name="b")],
    )
    selector = labelselector.parse(FOO_SELECTOR)
    rows, per_node = RowCounter(), MatchCounter()
    columns = snapshot.columns
    assert rows.counts(columns, generations(columns), selector, "default").tolist() == [1, 1]
    node_a = snapshot.get("a")
    assert node_a is not None
    memo = per_node.counts_for(selector, "default")
    assert per_node.count(memo, node_a, selector, "default") == 1
    node_a.add_pod(pod_info("p3", labels={"foo": ""}, node_name="a"))
    node_a.add_pod(pod_info("p4", labels={"bar": ""}, node_name="a"))
    node_a.add_pod(pod_info("p5", labels={"foo": ""}, node_name="a", namespace="other"))
    assert rows.counts(columns, generations(columns), selector, "default").tolist() == [2, 1]
    assert per_node.count(memo, node_a, selector, "default") == 2
    assert np.all(rows.counts(columns, generations(columns), labelselector.EVERYTHING, "default") == 0)
