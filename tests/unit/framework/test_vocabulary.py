"""Direct tests of the framework's shared vocabulary: NodeToStatus, Diagnosis/FitError, label
selectors, Go math, NodeInfo.of and the typed extension-point sets.

Upstream (k8s.io/kubernetes v1.36.3): ``pkg/scheduler/framework/types.go`` (NodeToStatus,
FitError.Error), ``k8s.io/apimachinery/pkg/labels`` and ``apis/meta/v1/helpers.go``
(LabelSelectorAsSelector).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import Code, NodeInfo, NodeToStatus, PodInfo, Status, labels
from scheduler_core.framework.diagnosis import Diagnosis, FitError, reasons_histogram
from scheduler_core.framework.extension_points import FILTER, SCORE, ExtensionPointSets
from tests.wrappers import make_node, make_pod, selector

U = Status(Code.UNSCHEDULABLE, "too busy")
UU = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "wrong zone")


@pytest.mark.parametrize(
    ("statuses", "absent", "node", "want"),
    [
        pytest.param({"a": U}, None, "a", U, id="listed"),
        pytest.param({"a": U}, None, "b", Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), id="absent-default"),
        pytest.param({"a": U}, U, "b", U, id="absent-given"),
    ],
)
def test_node_to_status_get(statuses: dict[str, Status], absent: Status | None, node: str, want: Status) -> None:
    assert NodeToStatus(statuses, absent).status_of(node) == want


def test_node_to_status_copy_keeps_the_absent_status() -> None:
    assert NodeToStatus(NodeToStatus({}, U)).absent() == U


@pytest.mark.parametrize(
    ("statuses", "absent", "want"),
    [
        pytest.param({"b": U, "a": UU}, None, ["b"], id="listed-nodes-with-the-code-in-map-order"),
        pytest.param({}, U, ["a", "b", "c"], id="all-absent-with-the-code"),
        pytest.param({"b": UU}, U, ["a", "c"], id="absent-have-the-code-listed-do-not"),
    ],
)
def test_nodes_for_status_code(statuses: dict[str, Status], absent: Status | None, want: list[str]) -> None:
    nodes = [make_node().name(n).info() for n in ("a", "b", "c")]
    got = NodeToStatus(statuses, absent).nodes_for_status_code(nodes, Code.UNSCHEDULABLE)
    assert [n.name for n in got] == want


def test_fit_error_message_is_upstreams() -> None:
    diagnosis = Diagnosis(node_to_status={"a": U, "b": U}, absent_status=UU)
    assert str(FitError(make_pod().info(), 3, diagnosis)) == "0/3 nodes are available: 1 wrong zone, 2 too busy."
    diagnosis.post_filter_msg = "preemption: not eligible."
    assert str(FitError(make_pod().info(), 3, diagnosis)).endswith("2 too busy. preemption: not eligible.")
    diagnosis.pre_filter_msg = "node(s) didn't match"
    assert str(FitError(make_pod().info(), 3, diagnosis)).startswith("0/3 nodes are available: node(s) didn't match.")


def test_reasons_histogram_without_absent_reasons() -> None:
    assert reasons_histogram(2, {"a": U}, None) == "0/2 nodes are available: 1 too busy."
    assert reasons_histogram(2, {}, None) == "0/2 nodes are available:"


@pytest.mark.parametrize(
    ("raw", "labels_", "want"),
    [
        pytest.param(None, {"a": "b"}, False, id="null-selects-nothing"),
        pytest.param({}, {"a": "b"}, True, id="empty-selects-everything"),
        pytest.param({"matchLabels": {"a": "b"}}, {"a": "b"}, True, id="match-labels"),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["b"]}]}, {}, True, id="notin"),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": ""}, False, id="dne"),
    ],
)
def test_label_selector_matches(raw: dict[str, Any] | None, labels_: dict[str, str], want: bool) -> None:
    assert labels.parse(raw).matches(labels_) is want


def test_label_selector_error_is_upstreams() -> None:
    with pytest.raises(labels.SelectorError, match=r'^"Gt" is not a valid label selector operator$'):
        labels.parse({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})


def test_node_info_of_converts_manifests_and_keeps_node_infos() -> None:
    info = make_node().name("n").info()
    assert NodeInfo.of(info) is info
    assert NodeInfo.of(make_node().name("m").obj()).name == "m"
    assert NodeInfo.of_optional(None) is None
    with pytest.raises(TypeError, match="expected a Node, got int"):
        NodeInfo.of(3)
    assert PodInfo.of(make_pod().name("p").obj()).name == "p"


class _Filter:
    name = "F"

    def filter(self, state: Any, pod: Any, node: Any) -> None:
        return None


class _Score:
    name = "S"

    def score(self, state: Any, pod: Any, node: Any) -> tuple[int, None]:
        return 0, None


def test_extension_point_sets_select_plugins_by_method() -> None:
    f, s = _Filter(), _Score()
    sets = ExtensionPointSets.of({"filter": [f, s], "score": [s]})
    assert sets.filter == [f] and sets.score == [s] and sets.bind == []
    assert FILTER.serves(f) and not SCORE.serves(f)


def test_cycle_state_read_optional() -> None:
    from scheduler_core.framework import CycleState

    class Data:
        def clone(self) -> Data:
            return self

    state = CycleState()
    assert state.read_optional("k", Data) is None
    data = Data()
    state.write("k", data)
    assert state.read_optional("k", Data) is data
    with pytest.raises(TypeError, match="is not a int"):
        state.read_optional("k", int)


def test_affinity_terms_are_parsed_once_and_kept_on_the_pod() -> None:
    pod = (
        make_pod()
        .pod_affinity("zone", selector(match_labels={"app": "db"}))
        .pod_anti_affinity("zone", selector(match_labels={"app": "web"}))
        .info()
    )
    terms = pod.affinity_terms
    assert terms is pod.affinity_terms
    assert [t.topology_key for t in terms.required_affinity] == ["zone"]
    assert terms.required_anti_affinity[0].selector.matches({"app": "web"})
    assert make_pod().info().affinity_terms.required_affinity == ()
