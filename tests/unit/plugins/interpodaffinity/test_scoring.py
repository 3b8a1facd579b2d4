"""PreScore, Score and NormalizeScore, as upstream ``interpodaffinity/scoring_test.go``
(k8s v1.36.3): TestPreferredAffinity and TestPreferredAffinityWithHardPodAffinitySymmetricWeight,
with the same expected scores and statuses. Every score list is also computed with
``score_batch`` + ``normalize_score_batch`` and must be identical."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler_core.cache.snapshot import Snapshot
from scheduler_core.framework import MAX_NODE_SCORE, CycleState, NodeScore, PodInfo, Status
from scheduler_core.plugins.interpodaffinity import InterPodAffinity, InterPodAffinityArgs
from scheduler_core.plugins.interpodaffinity.plugin import PRE_SCORE_STATE_KEY
from scheduler_core.plugins.interpodaffinity.scoring import normalize, normalize_array
from tests.unit.plugins.interpodaffinity.helpers import NAMESPACES, affinity, setup, term, weighted
from tests.wrappers import Json, expr, node, pod, selector

MAX = MAX_NODE_SCORE
CHINA = {"region": "China"}
INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
# node1, node2... labelled as named: the clusters the tables share.
NODES_AZ1_CHINA = [node("node1", labels=AZ1, hostname_label=False), node("node2", labels=CHINA, hostname_label=False)]
NODES_CHINA_CHINA = [
    node("node1", labels=CHINA, hostname_label=False),
    node("node2", labels=CHINA, hostname_label=False),
]
NODES_CHINA_INDIA = [
    node("node1", labels=CHINA, hostname_label=False),
    node("node2", labels=INDIA, hostname_label=False),
]
NODES_CHINA_INDIA_AZ1 = [
    node("node1", labels=CHINA, hostname_label=False),
    node("node2", labels=INDIA, hostname_label=False),
    node("node3", labels=AZ1, hostname_label=False),
]
AZ2 = {"az": "az2"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
S1 = {"security": "S1"}
S2 = {"security": "S2"}


def security_in(value: str) -> Json:
    return selector(expr("security", "In", value))


TEAM1 = selector(expr("team", "In", "team1"))
STAY_WITH_S1_IN_REGION = affinity(preferred=[weighted(5, term(security_in("S1"), "region"))])
STAY_WITH_S2_IN_REGION = affinity(preferred=[weighted(6, term(security_in("S2"), "region"))])
AFFINITY3 = affinity(
    preferred=[
        weighted(8, term(selector(expr("security", "NotIn", "S1"), expr("security", "In", "S2")), "region")),
        weighted(2, term(selector(expr("security", "Exists"), expr("wrongkey", "DoesNotExist")), "region")),
    ]
)
HARD_AFFINITY = affinity(
    required=[
        term(selector(expr("security", "In", "S1", "value2")), "region"),
        term(selector(expr("security", "Exists"), expr("wrongkey", "DoesNotExist")), "region"),
    ]
)
AWAY_FROM_S1_IN_AZ = affinity(anti_preferred=[weighted(5, term(security_in("S1"), "az"))])
AWAY_FROM_S2_IN_AZ = affinity(anti_preferred=[weighted(5, term(security_in("S2"), "az"))])
STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ = affinity(
    preferred=[weighted(8, term(security_in("S1"), "region"))],
    anti_preferred=[weighted(5, term(security_in("S2"), "az"))],
)
_NS_TERM = term(security_in("S1"), "region", namespaces=["subteam2.team2"], namespace_selector=TEAM1)
AFFINITY_NAMESPACE_SELECTOR = affinity(preferred=[weighted(5, _NS_TERM)])
ANTI_AFFINITY_NAMESPACE_SELECTOR = affinity(anti_preferred=[weighted(5, _NS_TERM)])
INVALID_AFFINITY_LABELS = affinity(preferred=[weighted(8, term(security_in("{{.bad-value.}}"), "region"))])
INVALID_ANTI_AFFINITY_LABELS = affinity(anti_preferred=[weighted(5, term(security_in("{{.bad-value.}}"), "az"))])


def run_scores(
    plugin: InterPodAffinity, snapshot: Snapshot, pod: Json
) -> tuple[Status | None, list[NodeScore], CycleState]:
    """PreScore, then Score and NormalizeScore over every node; batch forms must agree."""
    state = CycleState()
    incoming = PodInfo(pod)
    infos = [info for info in snapshot.list() if info.node is not None]
    status = plugin.pre_score(state, incoming, infos)
    if status is not None:
        return status, [], state
    scores = []
    for info in infos:
        value, score_status = plugin.score(state, incoming, info)
        assert score_status is None
        scores.append(NodeScore(info.name, value))
    rows = np.array([info.row for info in infos], dtype=np.int64)
    batch = plugin.score_batch(state, incoming, snapshot.columns, rows)
    assert batch is not None
    assert batch.tolist() == [s.score for s in scores]
    assert plugin.normalize_score(state, incoming, scores) is None
    assert plugin.normalize_score_batch(state, incoming, batch) is None
    assert batch.tolist() == [s.score for s in scores]
    return None, scores, state


PREFERRED = [
    pytest.param(
        pod(labels=S1),
        [],
        NODES_CHINA_INDIA_AZ1,
        False,
        Status.skip(),
        None,
        id="all nodes are same priority as Affinity is nil",
    ),
    pytest.param(
        pod(labels=S1, affinity=STAY_WITH_S1_IN_REGION),
        [pod(node_name="node1", labels=S1), pod(node_name="node2", labels=S2), pod(node_name="node3", labels=S1)],
        NODES_CHINA_INDIA_AZ1,
        False,
        None,
        [MAX, 0, 0],
        id="Affinity: pod that matches topology key & pods in nodes will get high score comparing to others",
    ),
    pytest.param(
        pod(affinity=STAY_WITH_S1_IN_REGION),
        [pod(node_name="node1", labels=S1)],
        [
            node("node1", labels=CHINA, hostname_label=False),
            node("node2", labels=CHINA_AZ1, hostname_label=False),
            node("node3", labels=INDIA, hostname_label=False),
        ],
        False,
        None,
        [MAX, MAX, 0],
        id="All the nodes that have the same topology key & label value with one of them has an existing pod that "
        "match the affinity rules, have the same score",
    ),
    pytest.param(
        pod(labels=S1, affinity=STAY_WITH_S2_IN_REGION),
        [
            pod(node_name="node1", labels=S2),
            pod(node_name="node1", labels=S2),
            pod(node_name="node2", labels=S2),
            pod(node_name="node3", labels=S2),
            pod(node_name="node4", labels=S2),
            pod(node_name="node5", labels=S2),
        ],
        [
            node("node1", labels=CHINA, hostname_label=False),
            node("node2", labels=INDIA, hostname_label=False),
            node("node3", labels=CHINA, hostname_label=False),
            node("node4", labels=CHINA, hostname_label=False),
            node("node5", labels=INDIA, hostname_label=False),
        ],
        False,
        None,
        [MAX, 0, MAX, MAX, 0],
        id="Affinity: nodes in one region has more matching pods comparing to other region, so the region which has "
        "more matches will get high score",
    ),
    pytest.param(
        pod(labels=S1, affinity=AFFINITY3),
        [pod(node_name="node1", labels=S1), pod(node_name="node2", labels=S2), pod(node_name="node3", labels=S1)],
        NODES_CHINA_INDIA_AZ1,
        False,
        None,
        [20, MAX, 0],
        id="Affinity: different Label operators and values for pod affinity scheduling preference, including some "
        "match failures",
    ),
    pytest.param(
        pod(labels=S2),
        [
            pod(node_name="node1", labels=S1, affinity=STAY_WITH_S1_IN_REGION),
            pod(node_name="node2", labels=S2, affinity=STAY_WITH_S2_IN_REGION),
        ],
        NODES_CHINA_INDIA_AZ1,
        False,
        None,
        [0, MAX, 0],
        id="Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity "
        "symmetry",
    ),
    pytest.param(
        pod(namespace="subteam1.team1", labels=S1),
        [
            pod(node_name="node1", labels=S1, affinity=AFFINITY_NAMESPACE_SELECTOR),
            pod(node_name="node2", labels=S2, affinity=STAY_WITH_S2_IN_REGION),
        ],
        NODES_CHINA_INDIA_AZ1,
        False,
        None,
        [MAX, 0, 0],
        id="Affinity symmetry with namespace selector",
    ),
    pytest.param(
        pod(namespace="subteam1.team1", labels=S1),
        [
            pod(node_name="node1", labels=S1, affinity=ANTI_AFFINITY_NAMESPACE_SELECTOR),
            pod(node_name="node2", labels=S2, affinity=STAY_WITH_S2_IN_REGION),
        ],
        NODES_CHINA_INDIA_AZ1,
        False,
        None,
        [0, MAX, MAX],
        id="AntiAffinity symmetry with namespace selector",
    ),
    pytest.param(
        pod(labels=S1),
        [
            pod(node_name="node1", labels=S1, affinity=HARD_AFFINITY),
            pod(node_name="node2", labels=S2, affinity=HARD_AFFINITY),
        ],
        NODES_CHINA_INDIA_AZ1,
        False,
        None,
        [MAX, MAX, 0],
        id="Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
    ),
    pytest.param(
        pod(labels=S1, affinity=AWAY_FROM_S1_IN_AZ),
        [pod(node_name="node1", labels=S1), pod(node_name="node2", labels=S2)],
        NODES_AZ1_CHINA,
        False,
        None,
        [0, MAX],
        id="Anti Affinity: pod that does not match existing pods in node will get high score",
    ),
    pytest.param(
        pod(labels=S1, affinity=AWAY_FROM_S1_IN_AZ),
        [pod(node_name="node1", labels=S1), pod(node_name="node2", labels=S1)],
        NODES_AZ1_CHINA,
        False,
        None,
        [0, MAX],
        id="Anti Affinity: pod that does not match topology key & match the pods in nodes will get higher score "
        "comparing to others",
    ),
    pytest.param(
        pod(labels=S1, affinity=AWAY_FROM_S1_IN_AZ),
        [pod(node_name="node1", labels=S1), pod(node_name="node1", labels=S1), pod(node_name="node2", labels=S2)],
        [node("node1", labels=AZ1, hostname_label=False), node("node2", labels=INDIA, hostname_label=False)],
        False,
        None,
        [0, MAX],
        id="Anti Affinity: one node has more matching pods comparing to other node, so the node which has more "
        "unmatches will get high score",
    ),
    pytest.param(
        pod(labels=S2),
        [
            pod(node_name="node1", labels=S1, affinity=AWAY_FROM_S2_IN_AZ),
            pod(node_name="node2", labels=S2, affinity=AWAY_FROM_S1_IN_AZ),
        ],
        [node("node1", labels=AZ1, hostname_label=False), node("node2", labels=AZ2, hostname_label=False)],
        False,
        None,
        [0, MAX],
        id="Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
    ),
    pytest.param(
        pod(labels=S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [pod(node_name="node1", labels=S1), pod(node_name="node2", labels=S1)],
        [node("node1", labels=CHINA, hostname_label=False), node("node2", labels=AZ1, hostname_label=False)],
        False,
        None,
        [MAX, 0],
        id="Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod "
        "affinity & anti affinity",
    ),
    pytest.param(
        pod(labels=S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [
            pod(node_name="node1", labels=S1),
            pod(node_name="node1", labels=S1),
            pod(node_name="node2", labels=S1),
            pod(node_name="node3", labels=S1),
            pod(node_name="node3", labels=S1),
            pod(node_name="node4", labels=S1),
            pod(node_name="node5", labels=S1),
        ],
        [
            node("node1", labels=CHINA_AZ1, hostname_label=False),
            node("node2", labels=INDIA, hostname_label=False),
            node("node3", labels=CHINA, hostname_label=False),
            node("node4", labels=CHINA, hostname_label=False),
            node("node5", labels=INDIA, hostname_label=False),
        ],
        False,
        None,
        [MAX, 0, MAX, MAX, 0],
        id="Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and existing "
        "pods have the same labels",
    ),
    pytest.param(
        pod(labels=S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [
            pod(node_name="node1", labels=S1),
            pod(node_name="node2", labels=S2),
            pod(node_name="node3", affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            pod(node_name="node4", affinity=AWAY_FROM_S1_IN_AZ),
        ],
        [
            node("node1", labels=CHINA, hostname_label=False),
            node("node2", labels=AZ1, hostname_label=False),
            node("node3", labels=INDIA, hostname_label=False),
            node("node4", labels=AZ2, hostname_label=False),
        ],
        False,
        None,
        [MAX, 0, MAX, 0],
        id="Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution "
        "in both pod affinity & anti affinity & symmetry",
    ),
    pytest.param(
        pod(labels=S1),
        [pod(node_name="node1", labels=S1), pod(node_name="node2", affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ)],
        NODES_CHINA_CHINA,
        False,
        None,
        [0, 0],
        id="Avoid panic when partial nodes in a topology don't have pods with affinity",
    ),
    pytest.param(
        pod(namespace="subteam1.team1", labels=S1, affinity=AFFINITY_NAMESPACE_SELECTOR),
        [
            pod(node_name="node1", labels=S1, namespace="subteam1.team1"),
            pod(node_name="node1", labels=S1, namespace="subteam1.team1"),
            pod(node_name="node1", labels=S1, namespace="subteam1.team2"),
            pod(node_name="node2", labels=S1, namespace="subteam2.team1"),
        ],
        NODES_CHINA_INDIA,
        False,
        None,
        [MAX, 0],
        id="Affinity with pods matching NamespaceSelector",
    ),
    pytest.param(
        pod(namespace="subteam1.team1", labels=S1, affinity=AFFINITY_NAMESPACE_SELECTOR),
        [
            pod(node_name="node1", labels=S1, namespace="subteam1.team1"),
            pod(node_name="node1", labels=S1, namespace="subteam1.team1"),
            pod(node_name="node1", labels=S1, namespace="subteam2.team2"),
            pod(node_name="node2", labels=S1, namespace="subteam2.team1"),
        ],
        NODES_CHINA_INDIA,
        False,
        None,
        [MAX, 0],
        id="Affinity with pods matching both NamespaceSelector and Namespaces fields",
    ),
    pytest.param(
        pod(namespace="subteam1.team1", labels=S1, affinity=ANTI_AFFINITY_NAMESPACE_SELECTOR),
        [
            pod(node_name="node1", labels=S1, namespace="subteam1.team1"),
            pod(node_name="node1", labels=S1, namespace="subteam1.team1"),
            pod(node_name="node1", labels=S1, namespace="subteam1.team2"),
            pod(node_name="node2", labels=S1, namespace="subteam2.team1"),
        ],
        NODES_CHINA_INDIA,
        False,
        None,
        [0, MAX],
        id="Anti-affinity with pods matching NamespaceSelector",
    ),
    pytest.param(
        pod(namespace="subteam1.team1", labels=S1, affinity=ANTI_AFFINITY_NAMESPACE_SELECTOR),
        [
            pod(node_name="node1", labels=S1, namespace="subteam1.team1"),
            pod(node_name="node1", labels=S1, namespace="subteam1.team1"),
            pod(node_name="node1", labels=S1, namespace="subteam2.team2"),
            pod(node_name="node2", labels=S1, namespace="subteam2.team1"),
        ],
        NODES_CHINA_INDIA,
        False,
        None,
        [0, MAX],
        id="Anti-affinity with pods matching both NamespaceSelector and Namespaces fields",
    ),
    pytest.param(
        pod(labels=S2),
        [
            pod(node_name="node1", labels=S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            pod(node_name="node2", labels=S2, affinity=STAY_WITH_S2_IN_REGION),
        ],
        NODES_CHINA_INDIA,
        True,
        Status.skip(),
        None,
        id="Ignore preferred terms of existing pods",
    ),
    pytest.param(
        pod(labels=S2),
        [
            pod(node_name="node1", labels=S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            pod(node_name="node2", labels=S2, affinity=STAY_WITH_S2_IN_REGION),
        ],
        NODES_CHINA_INDIA,
        False,
        None,
        [0, MAX],
        id="Do not ignore preferred terms of existing pods",
    ),
    pytest.param(pod(labels=S2), [], [], False, Status.skip(), None, id="No nodes to score"),
]


@pytest.mark.parametrize(("pod", "pods", "node_list", "ignore", "want_status", "want_scores"), PREFERRED)
def test_preferred_affinity(
    pod: Json,
    pods: list[Json],
    node_list: list[Json],
    ignore: bool,
    want_status: Status | None,
    want_scores: list[int] | None,
) -> None:
    args = InterPodAffinityArgs(hard_pod_affinity_weight=1, ignore_preferred_terms_of_existing_pods=ignore)
    plugin, snapshot = setup(pods, node_list, namespaces=NAMESPACES, args=args)
    status, scores, _ = run_scores(plugin, snapshot, pod)
    assert status == want_status
    if status is None:
        assert [s.score for s in scores] == want_scores


@pytest.mark.parametrize(
    "aff",
    [
        pytest.param(INVALID_AFFINITY_LABELS, id="invalid Affinity fails PreScore"),
        pytest.param(INVALID_ANTI_AFFINITY_LABELS, id="invalid AntiAffinity fails PreScore"),
    ],
)
def test_invalid_preferred_terms_fail_pre_score(aff: Json) -> None:
    plugin, snapshot = setup([], NODES_CHINA_CHINA)
    status, _, _ = run_scores(plugin, snapshot, pod(affinity=aff))
    assert status is not None
    assert status.code.upstream_name == "Error"
    assert 'Invalid value: "{{.bad-value.}}"' in status.message()
    assert status.message().startswith("failed to parse pod: preferred")


# -- TestPreferredAffinityWithHardPodAffinitySymmetricWeight --------------------------------------

SERVICE_S1 = {"service": "S1"}
HARD_POD_AFFINITY = affinity(
    required=[
        term(
            selector(expr("service", "In", "S1")),
            "region",
            namespaces=["default", "subteam2.team2"],
            namespace_selector=TEAM1,
        )
    ]
)
HARD_NODES = NODES_CHINA_INDIA_AZ1


@pytest.mark.parametrize(
    ("namespace", "weight", "want_status", "want_scores"),
    [
        pytest.param("", 1, None, [MAX, MAX, 0], id="with default weight"),
        pytest.param("", 0, Status.skip(), None, id="with zero weight"),
        pytest.param("subteam1.team2", 1, Status.skip(), None, id="with no matching namespace"),
        pytest.param("subteam1.team1", 1, None, [MAX, MAX, 0], id="with matching NamespaceSelector"),
        pytest.param("subteam2.team2", 1, None, [MAX, MAX, 0], id="with matching Namespaces"),
    ],
)
def test_preferred_affinity_with_hard_pod_affinity_symmetric_weight(
    namespace: str, weight: int, want_status: Status | None, want_scores: list[int] | None
) -> None:
    # Upstream's pods have namespace "" and its term lists ""; a pod without a namespace is in
    # "default" here (as the API server would put it), so the term lists "default" instead.
    pods = [pod(node_name="node1", affinity=HARD_POD_AFFINITY), pod(node_name="node2", affinity=HARD_POD_AFFINITY)]
    plugin, snapshot = setup(pods, HARD_NODES, args=InterPodAffinityArgs(hard_pod_affinity_weight=weight))
    status, scores, _ = run_scores(plugin, snapshot, pod(namespace=namespace, labels=SERVICE_S1))
    assert status == want_status
    if status is None:
        assert [s.score for s in scores] == want_scores


def test_score_without_pre_score_state_is_an_error() -> None:
    plugin, snapshot = setup([], [node("node1", labels=CHINA, hostname_label=False)])
    score, status = plugin.score(CycleState(), PodInfo(pod()), snapshot.list()[0])
    assert score == 0
    assert status is not None
    assert status.message() == f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found'


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        pytest.param([], [], id="no nodes"),
        pytest.param([7, 7, 7], [0, 0, 0], id="all equal: all zero"),
        pytest.param([-5, 0, 5], [0, 50, 100], id="negative scores shift to zero"),
        pytest.param([0, 1, 3], [0, 33, 100], id="truncated toward zero"),
        pytest.param([0, 7, 10, 100], [0, 7, 10, 100], id="0..100 unchanged"),
        # float64(100) * (float64(29) / float64(100)) = 28.999999999999996 in IEEE doubles.
        pytest.param([0, 29, 100], [0, 28, 100], id="Go float64 order: 100*(29/100) truncates to 28"),
        pytest.param([-8, 2, 8, -5], [0, 62, 100, 18], id="mixed signs"),
    ],
)
def test_normalize_matches_go_float64(raw: list[int], want: list[int]) -> None:
    assert normalize(raw) == want
    array = np.array(raw, dtype=np.int64)
    normalize_array(array)
    assert array.tolist() == want
