"""PreFilter and Filter, as upstream ``interpodaffinity/filtering_test.go`` (k8s v1.36.3):
TestRequiredAffinitySingleNode, TestRequiredAffinityMultipleNodes, TestPreFilterDisabled and
TestGetTPMapMatchingIncomingAffinityAntiAffinity, with the same expected statuses. Every Filter
verdict is also checked against ``filter_batch`` over the snapshot's columns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from scheduler_core.cache.snapshot import Snapshot
from scheduler_core.framework import CycleState, PodInfo, Status
from scheduler_core.framework.affinity import pod_terms
from scheduler_core.plugins.interpodaffinity import InterPodAffinity
from scheduler_core.plugins.interpodaffinity.filtering import (
    PreFilterState,
    filter_mask,
    incoming_affinity_counts,
    satisfies_existing_pods_anti_affinity,
    satisfies_pod_anti_affinity,
)
from scheduler_core.plugins.interpodaffinity.plugin import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    PRE_FILTER_STATE_KEY,
)
from tests.unit.plugins.interpodaffinity.helpers import NAMESPACES, affinity, setup, term
from tests.wrappers import Json, expr, make_pod, node, node_infos, pod, selector

AFF = Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
ANTI = Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
EXISTING = Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
SKIP = Status.skip()
BAD_VALUE = (
    'parsing pod: requiredAffinityTerms: values[0][service]: Invalid value: "{{.bad-value.}}": a valid label '
    "must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def run_filter(
    plugin: InterPodAffinity, snapshot: Snapshot, pod: Json
) -> tuple[Status | None, CycleState, dict[str, Status | None]]:
    """PreFilter, then Filter on every node (when PreFilter succeeded); checks filter_batch."""
    state = CycleState()
    incoming = PodInfo(pod)
    _, status = plugin.pre_filter(state, incoming, snapshot.list())
    if status is not None:
        return status, state, {}
    statuses: dict[str, Status | None] = {
        info.name: plugin.filter(state, incoming, info) for info in snapshot.list() if info.node
    }
    mask = plugin.filter_batch(state, incoming, snapshot.columns)
    assert mask is not None
    by_row = {name: bool(mask[row]) for row, name in enumerate(snapshot.columns.names)}
    assert {name: s is None for name, s in statuses.items()} == {name: by_row[name] for name in statuses}
    return None, state, statuses


# -- TestRequiredAffinitySingleNode --------------------------------------------------------------

POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
NODE1 = node("node1", labels={"region": "r1", "zone": "z11"}, hostname_label=False)


def existing() -> Json:
    return make_pod().labels(POD_LABEL).node("node1").obj()


def service_in(*values: str) -> Json:
    return selector(expr("service", "In", *values))


TEAM1 = selector(expr("team", "In", "team1"))

SINGLE_NODE = [
    pytest.param(
        pod(),
        [],
        SKIP,
        None,
        id="A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
    ),
    pytest.param(
        make_pod().labels(POD_LABEL2).pod_affinity_in("service", "region", ["securityscan", "value2"]).obj(),
        [existing()],
        None,
        None,
        id="satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator",
    ),
    pytest.param(
        make_pod().labels(POD_LABEL2).pod_affinity_not_in("service", "region", ["securityscan3", "value3"]).obj(),
        [existing()],
        None,
        None,
        id="satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in",
    ),
    pytest.param(
        pod(
            labels=POD_LABEL2,
            affinity=affinity(required=[term(service_in("securityscan", "value2"), namespaces=["DiffNameSpace"])]),
        ),
        [make_pod().namespace("ns").label("service", "securityscan").node("node1").obj()],
        None,
        AFF,
        id="Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
    ),
    pytest.param(
        make_pod().labels(POD_LABEL).pod_affinity_in("service", "", ["antivirusscan", "value2"]).obj(),
        [existing()],
        None,
        AFF,
        id="Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
    ),
    pytest.param(
        pod(
            labels=POD_LABEL2,
            affinity=affinity(
                required=[
                    term(selector(expr("service", "Exists"), expr("wrongkey", "DoesNotExist")), "region"),
                    term(
                        selector(expr("service", "In", "securityscan"), expr("service", "NotIn", "WrongValue")),
                        "region",
                    ),
                ]
            ),
        ),
        [existing()],
        None,
        None,
        id="satisfies the PodAffinity with different label Operators in multiple RequiredDuringScheduling terms",
    ),
    pytest.param(
        pod(
            labels=POD_LABEL2,
            affinity=affinity(
                required=[
                    term(selector(expr("service", "Exists"), expr("wrongkey", "DoesNotExist")), "region"),
                    term(
                        selector(expr("service", "In", "securityscan2"), expr("service", "NotIn", "WrongValue")),
                        "region",
                    ),
                ]
            ),
        ),
        [existing()],
        None,
        AFF,
        id="The labelSelector requirements(items of matchExpressions) are ANDed",
    ),
    pytest.param(
        make_pod()
        .labels(POD_LABEL2)
        .pod_affinity_in("service", "region", ["securityscan", "value2"])
        .pod_anti_affinity_in("service", "node", ["antivirusscan", "value2"])
        .obj(),
        [existing()],
        None,
        None,
        id="satisfies the PodAffinity and PodAntiAffinity with the existing pod",
    ),
    pytest.param(
        make_pod()
        .labels(POD_LABEL2)
        .pod_affinity_in("service", "region", ["securityscan", "value2"])
        .pod_anti_affinity_in("service", "node", ["antivirusscan", "value2"])
        .obj(),
        [
            make_pod()
            .node("node1")
            .labels(POD_LABEL)
            .pod_anti_affinity_in("service", "node", ["antivirusscan", "value2"])
            .obj()
        ],
        None,
        None,
        id="satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
    ),
    pytest.param(
        make_pod()
        .labels(POD_LABEL2)
        .pod_affinity_in("service", "region", ["securityscan", "value2"])
        .pod_anti_affinity_in("service", "zone", ["securityscan", "value2"])
        .obj(),
        [existing()],
        None,
        ANTI,
        id="satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
    ),
    pytest.param(
        make_pod()
        .labels(POD_LABEL)
        .pod_affinity_in("service", "region", ["securityscan", "value2"])
        .pod_anti_affinity_in("service", "node", ["antivirusscan", "value2"])
        .obj(),
        [
            make_pod()
            .labels(POD_LABEL)
            .node("node1")
            .pod_anti_affinity_in("service", "zone", ["securityscan", "value2"])
            .obj()
        ],
        None,
        EXISTING,
        id="satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry",
    ),
    pytest.param(
        make_pod().labels(POD_LABEL).pod_affinity_not_in("service", "region", ["securityscan", "value2"]).obj(),
        [make_pod().label("service", "securityscan").node("node2").obj()],
        None,
        AFF,
        id="pod matches its own Label in PodAffinity and that matches the existing pod Labels",
    ),
    pytest.param(
        make_pod().labels(POD_LABEL).obj(),
        [
            make_pod()
            .node("node1")
            .labels(POD_LABEL)
            .pod_anti_affinity_in("service", "zone", ["securityscan", "value2"])
            .obj()
        ],
        None,
        EXISTING,
        id="verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. "
        "doesn't satisfy",
    ),
    pytest.param(
        make_pod().labels(POD_LABEL).obj(),
        [
            make_pod()
            .node("node1")
            .labels(POD_LABEL)
            .pod_anti_affinity_not_in("service", "zone", ["securityscan", "value2"])
            .obj()
        ],
        SKIP,
        None,
        id="verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. "
        "satisfy",
    ),
    pytest.param(
        make_pod()
        .labels(POD_LABEL)
        .pod_anti_affinity_exists("service", "region")
        .pod_anti_affinity_exists("security", "region")
        .obj(),
        [make_pod().node("node1").labels(POD_LABEL2).pod_anti_affinity_exists("security", "zone").obj()],
        None,
        ANTI,
        id="satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with incoming",
    ),
    pytest.param(
        make_pod()
        .labels(POD_LABEL)
        .pod_anti_affinity_exists("service", "zone")
        .pod_anti_affinity_exists("security", "zone")
        .obj(),
        [make_pod().node("node1").labels(POD_LABEL2).pod_anti_affinity_exists("security", "zone").obj()],
        None,
        ANTI,
        id="PodAntiAffinity symmetry check a1",
    ),
    pytest.param(
        make_pod().labels(POD_LABEL2).pod_anti_affinity_exists("security", "zone").obj(),
        [
            make_pod()
            .node("node1")
            .labels(POD_LABEL)
            .pod_anti_affinity_exists("service", "zone")
            .pod_anti_affinity_exists("security", "zone")
            .obj()
        ],
        None,
        EXISTING,
        id="PodAntiAffinity symmetry check a2",
    ),
    pytest.param(
        make_pod()
        .labels({"abc": "", "xyz": ""})
        .pod_anti_affinity_exists("abc", "zone")
        .pod_anti_affinity_exists("def", "zone")
        .obj(),
        [
            make_pod()
            .node("node1")
            .labels({"def": "", "xyz": ""})
            .pod_anti_affinity_exists("abc", "zone")
            .pod_anti_affinity_exists("def", "zone")
            .obj()
        ],
        None,
        ANTI,
        id="PodAntiAffinity symmetry check b1",
    ),
    pytest.param(
        make_pod()
        .labels({"def": "", "xyz": ""})
        .pod_anti_affinity_exists("abc", "zone")
        .pod_anti_affinity_exists("def", "zone")
        .obj(),
        [
            make_pod()
            .node("node1")
            .labels({"abc": "", "xyz": ""})
            .pod_anti_affinity_exists("abc", "zone")
            .pod_anti_affinity_exists("def", "zone")
            .obj()
        ],
        None,
        ANTI,
        id="PodAntiAffinity symmetry check b2",
    ),
    pytest.param(
        make_pod()
        .labels(POD_LABEL)
        .pod_affinity_in("service", "region", ["{{.bad-value.}}"])
        .pod_affinity_in("service", "node", ["antivirusscan", "value2"])
        .obj(),
        [],
        Status.unresolvable(BAD_VALUE),
        None,
        id="PodAffinity fails PreFilter with an invalid affinity label syntax",
    ),
    pytest.param(
        make_pod()
        .labels(POD_LABEL)
        .pod_affinity_in("service", "region", ["foo"])
        .pod_affinity_in("service", "node", ["{{.bad-value.}}"])
        .obj(),
        [],
        Status.unresolvable(BAD_VALUE),
        None,
        id="PodAntiAffinity fails PreFilter with an invalid antiaffinity label syntax",
    ),
    pytest.param(
        pod(
            labels=POD_LABEL2,
            affinity=affinity(
                required=[term(service_in("securityscan", "value2"), "region", namespace_selector=TEAM1)]
            ),
        ),
        [pod(namespace="subteam1.team1", node_name="node1", labels=POD_LABEL)],
        None,
        None,
        id="affinity with NamespaceSelector",
    ),
    pytest.param(
        pod(
            labels=POD_LABEL2,
            affinity=affinity(
                required=[term(service_in("securityscan", "value2"), "region", namespace_selector=TEAM1)]
            ),
        ),
        [pod(namespace="subteam1.team2", node_name="node1", labels=POD_LABEL)],
        None,
        AFF,
        id="affinity with non-matching NamespaceSelector",
    ),
    pytest.param(
        pod(
            namespace="subteam1.team1",
            labels=POD_LABEL2,
            affinity=affinity(
                anti_required=[term(service_in("securityscan", "value2"), "zone", namespace_selector=TEAM1)]
            ),
        ),
        [pod(namespace="subteam2.team1", node_name="node1", labels=POD_LABEL)],
        None,
        ANTI,
        id="anti-affinity with matching NamespaceSelector",
    ),
    pytest.param(
        pod(
            namespace="subteam1.team1",
            labels=POD_LABEL2,
            affinity=affinity(
                anti_required=[term(service_in("securityscan", "value2"), "zone", namespace_selector={})]
            ),
        ),
        [pod(namespace="subteam2.team1", node_name="node1", labels=POD_LABEL)],
        None,
        ANTI,
        id="anti-affinity with matching all NamespaceSelector",
    ),
    pytest.param(
        pod(
            namespace="subteam1.team1",
            labels=POD_LABEL2,
            affinity=affinity(
                anti_required=[term(service_in("securityscan", "value2"), "zone", namespace_selector=TEAM1)]
            ),
        ),
        [pod(namespace="subteam1.team2", node_name="node1", labels=POD_LABEL)],
        None,
        None,
        id="anti-affinity with non-matching NamespaceSelector",
    ),
]


@pytest.mark.parametrize(("pod", "pods", "want_pre_filter", "want_filter"), SINGLE_NODE)
def test_required_affinity_single_node(
    pod: Json, pods: list[Json], want_pre_filter: Status | None, want_filter: Status | None
) -> None:
    plugin, snapshot = setup(pods, [NODE1], namespaces=NAMESPACES)
    status, _, statuses = run_filter(plugin, snapshot, pod)
    assert status == want_pre_filter
    if status is None:
        assert statuses["node1"] == want_filter


# -- TestRequiredAffinityMultipleNodes -----------------------------------------------------------

CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}


R1Z1 = [node("nodeA", labels={"region": "r1", "zone": "z1", "hostname": "nodeA"}, hostname_label=False)]
TWO_ZONES = [*R1Z1, node("nodeB", labels={"region": "r1", "zone": "z2", "hostname": "nodeB"}, hostname_label=False)]
SAME_ZONE = [*R1Z1, node("nodeB", labels={"region": "r1", "zone": "z1", "hostname": "nodeB"}, hostname_label=False)]

MULTIPLE_NODES = [
    pytest.param(
        make_pod().pod_affinity_in("foo", "region", ["bar"]).obj(),
        [make_pod().name("p1").node("node1").labels({"foo": "bar"}).obj()],
        [
            node("node1", labels=CHINA, hostname_label=False),
            node("node2", labels=CHINA_AZ1, hostname_label=False),
            node("node3", labels=INDIA, hostname_label=False),
        ],
        None,
        [None, None, AFF],
        id="A pod can be scheduled onto all the nodes that have the same topology key & label value",
    ),
    pytest.param(
        make_pod()
        .labels({"foo": "bar", "service": "securityscan"})
        .pod_affinity_in("foo", "zone", ["bar"])
        .pod_affinity_in("service", "zone", ["securityscan"])
        .obj(),
        [make_pod().name("p1").node("nodeA").labels({"foo": "bar"}).obj()],
        [
            node("nodeA", labels={"zone": "az1", "hostname": "h1"}, hostname_label=False),
            node("nodeB", labels={"zone": "az2", "hostname": "h2"}, hostname_label=False),
        ],
        None,
        [None, None],
        id="The first pod of the collection should not be blocked from being scheduled onto any node",
    ),
    pytest.param(
        make_pod()
        .labels({"foo": "bar", "service": "securityscan"})
        .pod_affinity_in("foo", "zone", ["bar"])
        .pod_affinity_in("service", "zone", ["securityscan"])
        .obj(),
        [make_pod().name("p1").node("nodeA").labels({"foo": "bar"}).obj()],
        [
            node("nodeA", labels={"zoneLabel": "az1", "hostname": "h1"}, hostname_label=False),
            node("nodeB", labels={"zoneLabel": "az2", "hostname": "h2"}, hostname_label=False),
        ],
        None,
        [AFF, AFF],
        id="The first pod of the collection can only be scheduled on nodes labelled with the requested topology keys",
    ),
    pytest.param(
        make_pod().pod_anti_affinity_in("foo", "region", ["abc"]).obj(),
        [make_pod().node("nodeA").labels({"foo": "abc"}).obj()],
        [
            node("nodeA", labels={"region": "r1", "hostname": "nodeA"}, hostname_label=False),
            node("nodeB", labels={"region": "r1", "hostname": "nodeB"}, hostname_label=False),
        ],
        None,
        [ANTI, ANTI],
        id="NodeA and nodeB have same topologyKey and label value. The pod can not be scheduled onto nodeA and nodeB.",
    ),
    pytest.param(
        make_pod()
        .pod_anti_affinity_in("foo", "region", ["abc"])
        .pod_anti_affinity_in("service", "zone", ["securityscan"])
        .obj(),
        [make_pod().node("nodeA").labels({"foo": "abc", "service": "securityscan"}).obj()],
        [
            node("nodeA", labels={"region": "r1", "zone": "z1", "hostname": "nodeA"}, hostname_label=False),
            node("nodeB", labels={"region": "r1", "zone": "z2", "hostname": "nodeB"}, hostname_label=False),
        ],
        None,
        [ANTI, ANTI],
        id="This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches a pod.",
    ),
    pytest.param(
        make_pod().pod_anti_affinity_in("foo", "region", ["abc"]).obj(),
        [make_pod().node("nodeA").labels({"foo": "abc"}).obj()],
        [
            node("nodeA", labels=CHINA, hostname_label=False),
            node("nodeB", labels=CHINA_AZ1, hostname_label=False),
            node("nodeC", labels=INDIA, hostname_label=False),
        ],
        None,
        [ANTI, ANTI, None],
        id="The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto nodeC",
    ),
    pytest.param(
        make_pod().namespace("NS1").labels({"foo": "123"}).pod_anti_affinity_in("foo", "region", ["bar"]).obj(),
        [
            make_pod().node("nodeA").namespace("NS1").labels({"foo": "bar"}).obj(),
            make_pod().node("nodeC").namespace("NS2").pod_anti_affinity_in("foo", "region", ["123"]).obj(),
        ],
        [
            node("nodeA", labels=CHINA, hostname_label=False),
            node("nodeB", labels=CHINA_AZ1, hostname_label=False),
            node("nodeC", labels=INDIA, hostname_label=False),
        ],
        None,
        [ANTI, ANTI, None],
        id="NodeC has an existing pod that match the inter pod affinity rule but in different namespace",
    ),
    pytest.param(
        make_pod().label("foo", "").obj(),
        [make_pod().node("nodeA").pod_anti_affinity_exists("foo", "invalid-node-label").obj()],
        SAME_ZONE,
        SKIP,
        [None, None],
        id="Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, "
        "labelSelector of the term is firstly checked, and then topologyKey of the term is also checked",
    ),
    pytest.param(
        make_pod().node("nodeA").pod_anti_affinity_exists("foo", "invalid-node-label").obj(),
        [make_pod().node("nodeA").labels({"foo": ""}).obj()],
        SAME_ZONE,
        None,
        [None, None],
        id="Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey matches",
    ),
    pytest.param(
        make_pod().label("foo", "").label("bar", "").obj(),
        [
            make_pod().node("nodeA").pod_anti_affinity_exists("foo", "zone").obj(),
            make_pod().node("nodeA").pod_anti_affinity_exists("bar", "region").obj(),
        ],
        TWO_ZONES,
        None,
        [EXISTING, EXISTING],
        id="Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each "
        "existingPod's terms on all nodes",
    ),
    pytest.param(
        make_pod().pod_anti_affinity_exists("foo", "zone").pod_anti_affinity_exists("bar", "region").obj(),
        [
            make_pod().node("nodeA").labels({"foo": ""}).obj(),
            make_pod().node("nodeB").labels({"bar": ""}).obj(),
        ],
        TWO_ZONES,
        None,
        [ANTI, ANTI],
        id="Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least violates one "
        "anti-affinity rule of existingPod",
    ),
    pytest.param(
        make_pod().label("foo", "").label("bar", "").obj(),
        [
            make_pod()
            .node("nodeA")
            .pod_anti_affinity_exists("foo", "invalid-node-label")
            .pod_anti_affinity_exists("bar", "zone")
            .obj()
        ],
        TWO_ZONES,
        None,
        [EXISTING, None],
        id="Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
        "single term match - case when one term has invalid topologyKey",
    ),
    pytest.param(
        make_pod().pod_anti_affinity_exists("foo", "invalid-node-label").pod_anti_affinity_exists("bar", "zone").obj(),
        [make_pod().name("podA").node("nodeA").labels({"foo": "", "bar": ""}).obj()],
        TWO_ZONES,
        None,
        [ANTI, None],
        id="Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
        "single term match - case when one term has invalid topologyKey",
    ),
    pytest.param(
        make_pod().label("foo", "").label("bar", "").obj(),
        [
            make_pod()
            .node("nodeA")
            .pod_anti_affinity_exists("foo", "region")
            .pod_anti_affinity_exists("bar", "zone")
            .obj()
        ],
        TWO_ZONES,
        None,
        [EXISTING, EXISTING],
        id="Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
        "single term match - case when all terms have valid topologyKey",
    ),
    pytest.param(
        make_pod().pod_anti_affinity_exists("foo", "region").pod_anti_affinity_exists("bar", "zone").obj(),
        [make_pod().node("nodeA").labels({"foo": "", "bar": ""}).obj()],
        TWO_ZONES,
        None,
        [ANTI, ANTI],
        id="Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
        "single term match - case when all terms have valid topologyKey",
    ),
    pytest.param(
        make_pod().label("foo", "").label("bar", "").obj(),
        [
            make_pod()
            .node("nodeA")
            .pod_anti_affinity_exists("foo", "zone")
            .pod_anti_affinity_exists("labelA", "zone")
            .obj(),
            make_pod()
            .node("nodeB")
            .pod_anti_affinity_exists("bar", "zone")
            .pod_anti_affinity_exists("labelB", "zone")
            .obj(),
        ],
        [*TWO_ZONES, node("nodeC", labels={"region": "r1", "zone": "z3", "hostname": "nodeC"}, hostname_label=False)],
        None,
        [EXISTING, EXISTING, None],
        id="Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity term "
        "matches incoming pod, so incoming pod can only be scheduled to nodeC",
    ),
    pytest.param(
        make_pod().pod_affinity_exists("foo", "region").pod_affinity_exists("bar", "zone").obj(),
        [make_pod().name("pod1").labels({"foo": "", "bar": ""}).node("nodeA").obj()],
        SAME_ZONE,
        None,
        [None, None],
        id="Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all "
        "topologyKeys match",
    ),
    pytest.param(
        make_pod().pod_affinity_exists("foo", "region").pod_affinity_exists("bar", "zone").obj(),
        [
            make_pod().node("nodeA").name("pod1").labels({"foo": ""}).obj(),
            make_pod().node("nodeB").name("pod2").labels({"bar": ""}).obj(),
        ],
        TWO_ZONES,
        None,
        [AFF, AFF],
        id="Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all "
        "topologyKeys match, and the match logic should be satisfied on the same pod",
    ),
]


@pytest.mark.parametrize(("pod", "pods", "nodes", "want_pre_filter", "want_filters"), MULTIPLE_NODES)
def test_required_affinity_multiple_nodes(
    pod: Json,
    pods: list[Json],
    nodes: list[Json],
    want_pre_filter: Status | None,
    want_filters: Sequence[Status | None],
) -> None:
    plugin, snapshot = setup(pods, nodes, namespaces=[{"metadata": {"name": "NS1"}}])
    status, _, statuses = run_filter(plugin, snapshot, pod)
    assert status == want_pre_filter
    if status is None:
        names = [n["metadata"]["name"] for n in nodes]
        assert [statuses[name] for name in names] == list(want_filters)


# -- TestPreFilterDisabled ------------------------------------------------------------------------


def test_filter_without_pre_filter_state_is_an_error() -> None:
    """TestPreFilterDisabled: Filter without PreFilter's state fails with an Error."""
    plugin, snapshot = setup([], [node("n", hostname_label=False)])
    status = plugin.filter(CycleState(), PodInfo(pod()), snapshot.list()[0])
    assert status is not None
    assert status.code.upstream_name == "Error"
    assert status.message() == f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'
    assert plugin.filter_batch(CycleState(), PodInfo(pod()), snapshot.columns) is None


# -- TestGetTPMapMatchingIncomingAffinityAntiAffinity ---------------------------------------------


HOSTNAME_A = {("hostname", "nodeA"): 1}
HOSTNAME_A2 = {("hostname", "nodeA"): 2}

INCOMING_COUNTS = [
    pytest.param([], make_pod().name("aaa-normal").obj(), {}, {}, id="nil test"),
    pytest.param(
        [pod("normal", node_name="nodeA", labels={"aaa": ""})],
        make_pod().name("aaa-normal").obj(),
        {},
        {},
        id="incoming pod without affinity/anti-affinity causes a no-op",
    ),
    pytest.param(
        [pod("normal", node_name="nodeA", labels={"bbb": ""})],
        make_pod()
        .name("aaa-anti")
        .pod_affinity_exists("aaa", "hostname")
        .pod_anti_affinity_exists("aaa", "hostname")
        .obj(),
        {},
        {},
        id="no pod has label that violates incoming pod's affinity and anti-affinity",
    ),
    pytest.param(
        [pod("normal", node_name="nodeA", labels={"aaa": ""})],
        make_pod()
        .name("affi-antiaffi")
        .pod_affinity_exists("aaa", "hostname")
        .pod_anti_affinity_exists("aaa", "hostname")
        .obj(),
        HOSTNAME_A,
        HOSTNAME_A,
        id="existing pod matches incoming pod's affinity and anti-affinity - single term case",
    ),
    pytest.param(
        [pod("normal", node_name="nodeA", labels={"aaa": "", "bbb": ""})],
        make_pod()
        .name("affi-antiaffi")
        .pod_affinity_exists("aaa", "hostname")
        .pod_affinity_exists("bbb", "hostname")
        .pod_anti_affinity_exists("aaa", "hostname")
        .obj(),
        HOSTNAME_A2,
        HOSTNAME_A,
        id="existing pod matches incoming pod's affinity and anti-affinity - multiple terms case",
    ),
    pytest.param(
        [pod("normal", node_name="nodeA", labels={"aaa": ""})],
        make_pod()
        .name("affi-antiaffi")
        .pod_affinity_exists("aaa", "hostname")
        .pod_affinity_exists("bbb", "hostname")
        .pod_anti_affinity_exists("aaa", "hostname")
        .pod_anti_affinity_exists("bbb", "hostname")
        .obj(),
        {},
        HOSTNAME_A,
        id="existing pod not match incoming pod's affinity but matches anti-affinity",
    ),
    pytest.param(
        [pod("normal", node_name="nodeA", labels={"aaa": "", "bbb": ""})],
        make_pod()
        .name("anaffi-antiaffiti")
        .pod_affinity_exists("aaa", "hostname")
        .pod_affinity_exists("ccc", "hostname")
        .pod_anti_affinity_exists("aaa", "hostname")
        .pod_anti_affinity_exists("ccc", "hostname")
        .obj(),
        {},
        HOSTNAME_A,
        id="incoming pod's anti-affinity has more than one term - existing pod violates partial term - case 1",
    ),
    pytest.param(
        [pod("normal", node_name="nodeA", labels={"bbb": ""})],
        make_pod()
        .name("affi-antiaffi")
        .pod_affinity_exists("aaa", "hostname")
        .pod_affinity_exists("bbb", "hostname")
        .pod_anti_affinity_exists("aaa", "hostname")
        .pod_anti_affinity_exists("bbb", "hostname")
        .obj(),
        {},
        HOSTNAME_A,
        id="incoming pod's anti-affinity has more than one term - existing pod violates partial term - case 2",
    ),
]


@pytest.mark.parametrize(("existing_pods", "pod", "want_affinity", "want_anti"), INCOMING_COUNTS)
def test_incoming_affinity_anti_affinity_counts(
    existing_pods: list[Json], pod: Json, want_affinity: dict[Any, int], want_anti: dict[Any, int]
) -> None:
    _, snapshot = setup(existing_pods, [node("nodeA", labels={"hostname": "nodeA"}, hostname_label=False)])
    parsed = pod_terms(PodInfo(pod))
    affinity, anti = incoming_affinity_counts(parsed.required_affinity, parsed.required_anti_affinity, snapshot.list())
    assert affinity == want_affinity
    assert anti == want_anti


def test_pre_filter_state_clone_is_deep() -> None:
    """TestPreFilterStateClone: the clone's counts are equal and independent."""
    source = PreFilterState(
        {("name", "node1"): 1, ("name", "node2"): 1},
        {("name", "nodeA"): 1, ("name", "nodeC"): 2},
        {("name", "nodeN"): 3, ("name", "nodeM"): 1},
        PodInfo(pod()),
        (),
        (),
        {},
        False,
    )
    clone = source.clone()
    assert clone is not source
    assert clone == source
    clone.affinity_counts[("name", "nodeA")] = 5
    clone.anti_affinity_counts.clear()
    clone.existing_anti_affinity_counts.clear()
    assert source.affinity_counts[("name", "nodeA")] == 1
    assert source.anti_affinity_counts and source.existing_anti_affinity_counts


# -- filter_mask over hand-made counts (what AddPod/RemovePod can leave) ---------------------------

MASK_NODES = [
    node("m1", labels={"zone": "z1", "kubernetes.io/hostname": "m1"}, hostname_label=False),
    node("m2", labels={"zone": "z1", "kubernetes.io/hostname": "m2"}, hostname_label=False),
    node("m3", labels={"zone": "z2", "kubernetes.io/hostname": "m3"}, hostname_label=False),
    node("m4", labels={"kubernetes.io/hostname": "m4"}, hostname_label=False),
]


@pytest.mark.parametrize(
    "existing",
    [
        pytest.param({}, id="none"),
        pytest.param({("kubernetes.io/hostname", "m2"): 1, ("kubernetes.io/hostname", "m4"): 3}, id="one-key"),
        pytest.param({("zone", "z1"): 1, ("kubernetes.io/hostname", "m3"): 2}, id="two-keys"),
        pytest.param({("zone", "z1"): 0, ("zone", "z2"): -1, ("kubernetes.io/hostname", "m1"): 1}, id="not-positive"),
        pytest.param({("zone", "z9"): 2, ("kubernetes.io/hostname", "gone"): 1}, id="values-no-node-has"),
    ],
)
def test_filter_mask_agrees_with_the_per_node_checks(existing: dict[tuple[str, str], int]) -> None:
    anti = {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "zone"}
    pod = {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [anti]}}},
    }
    (anti_term,) = pod_terms(PodInfo(pod)).required_anti_affinity
    state = PreFilterState(
        dict(existing), {}, {("zone", "z2"): 1, ("zone", "z3"): -1}, PodInfo(pod), (), (anti_term,), {}, False
    )
    snapshot = Snapshot(node_infos(MASK_NODES))
    mask = filter_mask(state, snapshot.columns)
    for row, info in enumerate(snapshot.list()):
        expected = satisfies_pod_anti_affinity(state, info.labels) and satisfies_existing_pods_anti_affinity(
            state, info.labels
        )
        assert bool(mask[row]) == expected, info.name
