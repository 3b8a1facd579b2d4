"""AddPod/RemovePod, as upstream ``filtering_test.go`` TestPreFilterStateAddRemovePod: adding a
pod to PreFilter's state gives the state PreFilter computes with that pod in the snapshot, and
removing it again gives the original state back."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import CycleState, PodInfo, Status
from scheduler_core.plugins.interpodaffinity.filtering import PreFilterState
from scheduler_core.plugins.interpodaffinity.plugin import PRE_FILTER_STATE_KEY
from tests.unit.plugins.interpodaffinity.helpers import affinity, setup, term
from tests.wrappers import Json, expr, node, pod, selector

LABEL1 = {"region": "r1", "zone": "z11"}
LABEL2 = {"region": "r1", "zone": "z12"}
LABEL3 = {"region": "r2", "zone": "z21"}
SELECTOR1 = {"foo": "bar"}
NODES = [
    node("nodeA", labels=LABEL1, hostname_label=False),
    node("nodeB", labels=LABEL2, hostname_label=False),
    node("nodeC", labels=LABEL3, hostname_label=False),
]

ANTI_FOO_BAR = [term(selector(expr("foo", "In", "bar")), "region")]
COMPLEX = [
    term(selector(expr("foo", "In", "bar", "buzz")), "region"),
    term(selector(expr("service", "NotIn", "bar", "security", "test")), "zone"),
]


def pre_filter_state(pods: list[Json], pending: Json) -> tuple[Any, CycleState, PreFilterState, Any]:
    plugin, snapshot = setup(pods, NODES)
    state = CycleState()
    _, status = plugin.pre_filter(state, PodInfo(pending), snapshot.list())
    assert status is None
    return plugin, state, state.read_as(PRE_FILTER_STATE_KEY, PreFilterState), snapshot


def counts(state: PreFilterState) -> tuple[dict[Any, int], dict[Any, int], dict[Any, int]]:
    return state.existing_anti_affinity_counts, state.affinity_counts, state.anti_affinity_counts


@pytest.mark.parametrize(
    ("pending", "existing_pods", "added", "want_anti", "want_affinity"),
    [
        pytest.param(
            pod("pending", uid="pending", labels=SELECTOR1, affinity=affinity(anti_required=ANTI_FOO_BAR)),
            [
                pod("p1", uid="p1", labels=SELECTOR1, node_name="nodeA"),
                pod("p2", uid="p2", node_name="nodeC", affinity=affinity(anti_required=ANTI_FOO_BAR)),
            ],
            pod(
                "addedPod",
                uid="addedPod",
                labels=SELECTOR1,
                node_name="nodeB",
                affinity=affinity(anti_required=ANTI_FOO_BAR),
            ),
            {("region", "r1"): 2},
            {},
            id="preFilterState anti-affinity terms are updated correctly after adding and removing a pod",
        ),
        pytest.param(
            pod("pending", uid="pending", labels=SELECTOR1, affinity=affinity(anti_required=COMPLEX)),
            [
                pod("p1", uid="p1", labels=SELECTOR1, node_name="nodeA"),
                pod("p2", uid="p2", node_name="nodeC", affinity=affinity(anti_required=ANTI_FOO_BAR)),
            ],
            pod(
                "addedPod",
                uid="addedPod",
                labels=SELECTOR1,
                node_name="nodeA",
                affinity=affinity(anti_required=COMPLEX),
            ),
            {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1},
            {},
            id="preFilterState anti-affinity terms are updated correctly after adding and removing a pod (complex)",
        ),
        pytest.param(
            pod("pending", uid="pending", labels=SELECTOR1, affinity=affinity(required=COMPLEX)),
            [
                pod("p1", uid="p1", labels=SELECTOR1, node_name="nodeA"),
                pod("p2", uid="p2", node_name="nodeC", affinity=affinity(required=COMPLEX, anti_required=ANTI_FOO_BAR)),
            ],
            pod(
                "addedPod",
                uid="addedPod",
                labels=SELECTOR1,
                node_name="nodeA",
                affinity=affinity(anti_required=COMPLEX),
            ),
            {},
            {("region", "r1"): 2, ("zone", "z11"): 2},
            id="preFilterState matching pod affinity and anti-affinity are updated correctly after adding and "
            "removing a pod",
        ),
    ],
)
def test_pre_filter_state_add_remove_pod(
    pending: Json, existing_pods: list[Json], added: Json, want_anti: dict[Any, int], want_affinity: dict[Any, int]
) -> None:
    _, _, all_pods_state, _ = pre_filter_state([*existing_pods, added], pending)
    plugin, cycle_state, state, snapshot = pre_filter_state(existing_pods, pending)
    original = state.clone()
    node = next(info for info in snapshot.list() if info.name == added["spec"]["nodeName"])

    assert plugin.add_pod(cycle_state, PodInfo(pending), PodInfo(added), node) is None
    assert state.anti_affinity_counts == want_anti
    assert state.affinity_counts == want_affinity
    assert counts(state) == counts(all_pods_state)

    assert plugin.remove_pod(cycle_state, PodInfo(pending), PodInfo(added), node) is None
    assert counts(state) == counts(original)


def test_add_remove_pod_change_the_filter_verdict() -> None:
    """A nominated pod that the incoming pod repels makes its zone infeasible; removing a victim
    with anti-affinity against the incoming pod frees its region."""
    pending = pod("pending", uid="pending", labels=SELECTOR1, affinity=affinity(anti_required=ANTI_FOO_BAR))
    victim = pod(
        "victim",
        uid="victim",
        node_name="nodeC",
        affinity=affinity(anti_required=[term(selector(expr("foo", "Exists")), "zone")]),
    )
    plugin, cycle_state, _, snapshot = pre_filter_state([victim], pending)
    node_a, node_b, node_c = snapshot.list()
    incoming = PodInfo(pending)
    assert plugin.filter(cycle_state, incoming, node_c) == Status.unschedulable(
        "node(s) didn't satisfy existing pods anti-affinity rules"
    )
    assert plugin.remove_pod(cycle_state, incoming, PodInfo(victim), node_c) is None
    assert plugin.filter(cycle_state, incoming, node_c) is None

    assert plugin.filter(cycle_state, incoming, node_b) is None
    assert (
        plugin.add_pod(
            cycle_state,
            incoming,
            PodInfo(pod("nominated", uid="nominated", labels=SELECTOR1, node_name="nodeA")),
            node_a,
        )
        is None
    )
    # nodeA and nodeB share region r1.
    assert plugin.filter(cycle_state, incoming, node_b) == Status.unschedulable(
        "node(s) didn't match pod anti-affinity rules"
    )


def test_add_pod_without_pre_filter_state_is_an_error() -> None:
    plugin, snapshot = setup([], NODES)
    incoming = PodInfo(pod("pending", uid="pending"))
    status = plugin.add_pod(CycleState(), incoming, incoming, snapshot.list()[0])
    assert status is not None
    assert status.message() == f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'
