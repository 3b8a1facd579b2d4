"""Affinity terms and label selectors as upstream parses and matches them:
``kube-scheduler/framework/types.go`` (TestGetNamespacesFromPodAffinityTerm, ``AffinityTerm.Matches``),
``apimachinery`` ``LabelSelectorAsSelector``/``NewRequirement`` messages, and the plugin's
namespaceSelector handling (``mergeAffinityTermNamespacesIfNotEmpty``,
``GetNamespaceLabelsSnapshot``)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from scheduler_core.cache.snapshot import Snapshot
from scheduler_core.framework import CycleState, Handle, PodInfo, Status
from scheduler_core.framework import labels as sel
from scheduler_core.framework.affinity import (
    merge_namespaces,
    namespaces_from_term,
    new_affinity_term,
    pod_terms,
)
from scheduler_core.plugins.interpodaffinity import InterPodAffinity
from scheduler_core.plugins.interpodaffinity.filtering import PreFilterState
from scheduler_core.plugins.interpodaffinity.plugin import PRE_FILTER_STATE_KEY
from tests.unit.plugins.interpodaffinity.helpers import NAMESPACES, FakeHandle, affinity, setup, term
from tests.wrappers import expr, make_pod, node, node_infos, pod, pod_info, selector

# -- label selectors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "labels", "want"),
    [
        pytest.param(None, {"a": "b"}, False, id="nil selector selects nothing"),
        pytest.param({}, {}, True, id="empty selector selects everything"),
        pytest.param({"matchLabels": {"a": "b"}}, {"a": "b", "c": "d"}, True, id="matchLabels equal"),
        pytest.param({"matchLabels": {"a": "b"}}, {"a": "c"}, False, id="matchLabels different value"),
        pytest.param({"matchLabels": {"a": "b"}}, {}, False, id="matchLabels missing key"),
        pytest.param(selector(expr("a", "In", "x", "y")), {"a": "y"}, True, id="In"),
        pytest.param(selector(expr("a", "In", "x")), {}, False, id="In without the key"),
        pytest.param(selector(expr("a", "NotIn", "x")), {}, True, id="NotIn without the key"),
        pytest.param(selector(expr("a", "NotIn", "x")), {"a": "x"}, False, id="NotIn with the value"),
        pytest.param(selector(expr("a", "Exists")), {"a": ""}, True, id="Exists with an empty value"),
        pytest.param(selector(expr("a", "DoesNotExist")), {"a": ""}, False, id="DoesNotExist with the key"),
        pytest.param(
            selector(expr("a", "Exists"), match_labels={"b": "c"}), {"a": "1"}, False, id="requirements are ANDed"
        ),
    ],
)
def test_selector_matches(raw: Any, labels: dict[str, str], want: bool) -> None:
    assert sel.parse(raw).matches(labels) is want


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            selector(expr("a", "Gt", "1")), '"Gt" is not a valid label selector operator', id="unknown operator"
        ),
        # apimachinery v0.36.3 prints the values as JSON (checked with labels.NewRequirement in Go).
        pytest.param(
            selector(expr("a", "In")),
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
            id="In without values",
        ),
        pytest.param(
            selector({"key": "a", "operator": "Exists", "values": ["x"]}),
            'values: Invalid value: ["x"]: values set must be empty for exists and does not exist',
            id="Exists with values",
        ),
        pytest.param(
            selector(expr("a b", "Exists")),
            "key: Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
            "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            id="bad key",
        ),
    ],
)
def test_selector_errors(raw: Any, message: str) -> None:
    with pytest.raises(sel.SelectorError) as info:
        sel.parse(raw)
    assert str(info.value) == message


# -- terms ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        pytest.param({}, {"ns"}, id="podAffinityTerm_namespace_empty_set"),
        pytest.param({"namespaces": ["n1", "n2"]}, {"n1", "n2"}, id="podAffinityTerm_namespace_not_empty"),
        pytest.param({"namespaceSelector": {}}, set(), id="podAffinityTerm_namespace_selector_not_nil"),
    ],
)
def test_namespaces_from_term(raw: dict[str, Any], want: set[str]) -> None:
    """TestGetNamespacesFromPodAffinityTerm (kube-scheduler/framework/types_test.go)."""
    assert namespaces_from_term(PodInfo(pod(namespace="ns")), raw) == want


def test_pod_without_affinity_has_no_terms_and_no_error() -> None:
    terms = pod_terms(PodInfo(pod()))
    assert not terms.required_affinity and not terms.preferred_anti_affinity
    assert terms.error() is None


def test_a_bad_term_drops_its_whole_list_only() -> None:
    """GetAffinityTerms returns no terms when one fails; the other lists still parse."""
    pod = (
        make_pod()
        .pod_affinity_in("a", "zone", ["ok"])
        .pod_affinity_in("a", "zone", ["{{bad}}"])
        .pod_anti_affinity_exists("b", "zone")
        .obj()
    )
    terms = pod_terms(PodInfo(pod))
    assert terms.required_affinity == ()
    assert len(terms.required_anti_affinity) == 1
    error = terms.error()
    assert error is not None and error.startswith("requiredAffinityTerms: values[0][a]: Invalid value: ")


def test_errors_of_several_lists_aggregate() -> None:
    pod = (
        make_pod().pod_affinity_in("a", "zone", ["{{bad}}"]).pod_anti_affinity("zone", selector(expr("b", "Bad"))).obj()
    )
    assert pod_terms(PodInfo(pod)).error() == (
        '[requiredAffinityTerms: values[0][a]: Invalid value: "{{bad}}": '
        + (
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
            "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        )
        + ', requiredAntiAffinityTerms: "Bad" is not a valid label selector operator]'
    )


def test_pre_filter_fails_on_a_bad_preferred_term() -> None:
    """PreFilter parses the whole pod (NewPodInfo): a bad preferred term fails it too."""
    plugin, snapshot = setup([], [node("n", labels={"zone": "z"}, hostname_label=False)])
    pod = make_pod().pod_affinity_in("a", "zone", ["{{bad}}"], kind="preferred").obj()
    _, status = plugin.pre_filter(CycleState(), PodInfo(pod), snapshot.list())
    assert status is not None
    assert status.code is Status.unresolvable().code
    assert status.message().startswith("parsing pod: preferredAffinityTerms: values[0][a]: Invalid value:")


# -- namespaceSelector ----------------------------------------------------------------------------


def test_merge_namespaces_unrolls_a_selector() -> None:
    pod = pod_info(namespace="x")
    raw = term(
        selector(expr("app", "Exists")),
        "zone",
        namespaces=["listed"],
        namespace_selector=selector(expr("team", "In", "team1")),
    )
    merged = merge_namespaces(new_affinity_term(pod, raw), NAMESPACES)
    assert merged.namespaces == {"listed", "subteam1.team1", "subteam2.team1"}
    assert merged.namespace_selector.nothing
    everything = new_affinity_term(pod, term(None, "zone", namespace_selector={}))
    assert merge_namespaces(everything, NAMESPACES) is everything


ZONE = {"zone": "z1"}


@pytest.mark.parametrize(
    ("incoming_ns", "existing_ns", "namespace_selector", "want"),
    [
        pytest.param("subteam1.team1", "subteam2.team1", selector(expr("team", "In", "team1")), False, id="selected"),
        pytest.param(
            "subteam1.team1", "subteam1.team2", selector(expr("team", "In", "team1")), True, id="not selected"
        ),
        pytest.param("subteam1.team1", "unknown", {}, False, id="empty selector selects every namespace"),
        pytest.param(
            "subteam1.team1",
            "unknown",
            selector(expr("team", "DoesNotExist")),
            True,
            id="a namespace the informer does not know is not listed",
        ),
    ],
)
def test_incoming_anti_affinity_namespace_selector(
    incoming_ns: str, existing_ns: str, namespace_selector: Any, want: bool
) -> None:
    """The incoming pod's selector is matched against the namespaces known to the handle."""
    incoming = pod(
        namespace=incoming_ns,
        affinity=affinity(
            anti_required=[term(selector(expr("app", "Exists")), "zone", namespace_selector=namespace_selector)]
        ),
    )
    plugin, snapshot = setup(
        [pod(namespace=existing_ns, node_name="n1", labels={"app": "a"})],
        [node("n1", labels=ZONE, hostname_label=False)],
    )
    state = CycleState()
    _, status = plugin.pre_filter(state, PodInfo(incoming), snapshot.list())
    assert status is None
    assert (plugin.filter(state, PodInfo(incoming), snapshot.list()[0]) is None) is want


@pytest.mark.parametrize(
    ("incoming_ns", "want_blocked"),
    [
        pytest.param("subteam1.team1", True, id="incoming pod's namespace labels match the existing term"),
        pytest.param("subteam1.team2", False, id="incoming pod's namespace labels do not match"),
        pytest.param("not-a-namespace", False, id="unknown namespace: no labels"),
    ],
)
def test_existing_anti_affinity_reads_incoming_namespace_labels(incoming_ns: str, want_blocked: bool) -> None:
    existing = pod(
        namespace="other",
        node_name="n1",
        affinity=affinity(
            anti_required=[
                term(selector(expr("app", "Exists")), "zone", namespace_selector=selector(expr("team", "In", "team1")))
            ]
        ),
    )
    plugin, snapshot = setup([existing], [node("n1", labels=ZONE, hostname_label=False)])
    state = CycleState()
    incoming = PodInfo(pod(namespace=incoming_ns, labels={"app": "x"}))
    _, status = plugin.pre_filter(state, incoming, snapshot.list())
    if not want_blocked:
        assert status == Status.skip()
        return
    assert status is None
    assert state.read_as(PRE_FILTER_STATE_KEY, PreFilterState).namespace_labels == {"team": "team1"}
    assert plugin.filter(state, incoming, snapshot.list()[0]) == Status.unschedulable(
        "node(s) didn't satisfy existing pods anti-affinity rules"
    )


# -- cost of pods without affinity ----------------------------------------------------------------


class CountingHandle(FakeHandle):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.object_calls = 0

    def objects(self, kind: str) -> list[Any]:
        self.object_calls += 1
        return super().objects(kind)


def test_pod_without_affinity_skips_without_reading_namespaces() -> None:
    pods = [pod(node_name="n1", labels={"app": "a"}), pod(node_name="n1", labels={"app": "b"})]
    snapshot = Snapshot(node_infos([node("n1", labels=ZONE, hostname_label=False)], pods))
    handle = CountingHandle(snapshot, NAMESPACES)
    plugin = InterPodAffinity(None, cast(Handle, handle))
    state = CycleState()
    incoming = PodInfo(pod(labels={"app": "a"}))
    assert plugin.pre_filter(state, incoming, snapshot.list()) == (None, Status.skip())
    assert plugin.pre_score(state, incoming, snapshot.list()) == Status.skip()
    assert handle.object_calls == 0
