"""Events from assigned pods (upstream scheduling_queue.go AssignedPodAdded,
AssignedPodUpdated, getUnschedulablePodsWithCrossTopologyTerm; eventhandlers.go
deletePodFromCache)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import ASSIGNED_POD_ADD, ActionType, ClusterEvent, EventResource, PodInfo, affinity
from scheduler_core.plugins.names import INTER_POD_AFFINITY, NODE_RESOURCES_FIT, POD_TOPOLOGY_SPREAD
from tests.wrappers import pod_info

from .support import make_queue, names, pop_and_fail, register

ASSIGNED_ALL = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ALL)


def _affinity(**term: Any) -> dict[str, Any]:
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone", **term}]}}


@pytest.mark.parametrize(
    ("pending", "rejected_by", "assigned", "moves"),
    [
        pytest.param(
            pod_info("p", uid="uid-p", affinity=_affinity(labelSelector={"matchLabels": {"app": "db"}})),
            INTER_POD_AFFINITY,
            pod_info("db", uid="uid-db", node_name="n1", labels={"app": "db"}),
            True,
            id="affinity-term-matches",
        ),
        pytest.param(
            pod_info("p", uid="uid-p", affinity=_affinity(labelSelector={"matchLabels": {"app": "db"}})),
            INTER_POD_AFFINITY,
            pod_info("web", uid="uid-web", node_name="n1", labels={"app": "web"}),
            False,
            id="affinity-term-does-not-match",
        ),
        pytest.param(
            pod_info("p", uid="uid-p", affinity=_affinity(labelSelector={"matchLabels": {"app": "db"}})),
            INTER_POD_AFFINITY,
            pod_info("db", uid="uid-db", namespace="other", node_name="n1", labels={"app": "db"}),
            False,
            id="term-defaults-to-own-namespace",
        ),
        pytest.param(
            pod_info(
                "p", uid="uid-p", affinity=_affinity(labelSelector={"matchLabels": {"app": "db"}}, namespaces=["other"])
            ),
            INTER_POD_AFFINITY,
            pod_info("db", uid="uid-db", namespace="other", node_name="n1", labels={"app": "db"}),
            True,
            id="term-names-namespace",
        ),
        pytest.param(
            pod_info(
                "p",
                uid="uid-p",
                affinity=_affinity(
                    labelSelector={"matchExpressions": [{"key": "app", "operator": "Exists"}]},
                    namespaceSelector={},
                ),
            ),
            INTER_POD_AFFINITY,
            pod_info("any", uid="uid-any", namespace="x", node_name="n1", labels={"app": "anything"}),
            True,
            id="empty-namespace-selector-selects-all",
        ),
        pytest.param(
            pod_info("p", uid="uid-p", affinity=_affinity()),
            INTER_POD_AFFINITY,
            pod_info("db", uid="uid-db", node_name="n1", labels={"app": "db"}),
            False,
            id="nil-label-selector-selects-nothing",
        ),
        pytest.param(
            pod_info("p", uid="uid-p"),
            POD_TOPOLOGY_SPREAD,
            pod_info("x", uid="uid-x", node_name="n1"),
            True,
            id="spread-same-namespace",
        ),
        pytest.param(
            pod_info("p", uid="uid-p"),
            POD_TOPOLOGY_SPREAD,
            pod_info("x", uid="uid-x", namespace="other", node_name="n1"),
            False,
            id="spread-other-ns",
        ),
        pytest.param(
            pod_info("p", uid="uid-p"),
            NODE_RESOURCES_FIT,
            pod_info("x", uid="uid-x", node_name="n1"),
            False,
            id="fit-not-cross-topology",
        ),
    ],
)
def test_assigned_pod_added_moves_only_pods_it_may_unblock(
    pending: PodInfo, rejected_by: str, assigned: PodInfo, moves: bool
) -> None:
    q, clock = make_queue(hints={rejected_by: register(ASSIGNED_ALL)})
    q.add(pending)
    pop_and_fail(q, rejected_by)
    clock.advance(20)
    q.assigned_pod_added(assigned)
    assert names(q.pending()["active" if moves else "unschedulable"]) == ["p"]


def test_namespace_selector_uses_the_namespace_labels() -> None:
    pending = pod_info(
        "p",
        uid="uid-p",
        affinity=_affinity(
            labelSelector={"matchLabels": {"app": "db"}},
            namespaceSelector={"matchLabels": {"team": "a"}},
        ),
    )
    labels = {"team-a-ns": {"team": "a"}}
    q, clock = make_queue(
        hints={INTER_POD_AFFINITY: register(ASSIGNED_ALL)}, namespace_labels=lambda ns: labels.get(ns, {})
    )
    q.add(pending)
    pop_and_fail(q, INTER_POD_AFFINITY)
    clock.advance(20)
    q.assigned_pod_added(pod_info("db", uid="uid-db", namespace="elsewhere", node_name="n1", labels={"app": "db"}))
    assert names(q.pending()["unschedulable"]) == ["p"]
    q.assigned_pod_added(pod_info("db", uid="uid-db", namespace="team-a-ns", node_name="n1", labels={"app": "db"}))
    assert names(q.pending()["active"]) == ["p"]


def test_anti_affinity_terms_are_not_cross_topology_terms() -> None:
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "db"}}}
            ]
        }
    }
    assert affinity.pod_terms(pod_info("p", uid="uid-p", affinity=anti)).required_affinity == ()


def test_assigned_pod_scale_down_moves_every_interested_pod() -> None:
    scale_down = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN)
    q, clock = make_queue(hints={NODE_RESOURCES_FIT: register(scale_down)})
    q.add(pod_info("p", uid="uid-p"))
    pop_and_fail(q, NODE_RESOURCES_FIT)
    clock.advance(20)
    q.assigned_pod_updated(
        pod_info("x", uid="uid-x", node_name="n1", labels={"a": "b"}),
        pod_info("x", uid="uid-x", node_name="n1", labels={"a": "c"}),
    )
    assert names(q.pending()["unschedulable"]) == ["p"]  # a label change is not a scale-down
    q.assigned_pod_updated(
        pod_info("x", uid="uid-x", node_name="n1", cpu="2"), pod_info("x", uid="uid-x", node_name="n1", cpu="1")
    )
    assert names(q.pending()["active"]) == ["p"]


def test_assigned_pod_deleted_moves_every_interested_pod() -> None:
    q, clock = make_queue(hints={NODE_RESOURCES_FIT: register(ASSIGNED_ALL)})
    q.add(pod_info("p", uid="uid-p"))
    pop_and_fail(q, NODE_RESOURCES_FIT)
    clock.advance(20)
    q.assigned_pod_added(pod_info("x", uid="uid-x", node_name="n1"))
    assert names(q.pending()["unschedulable"]) == ["p"]
    q.assigned_pod_deleted(pod_info("x", uid="uid-x", node_name="n1"))
    assert names(q.pending()["active"]) == ["p"]


def test_assigned_pod_add_is_recorded_for_pods_in_flight() -> None:
    q, _ = make_queue(hints={INTER_POD_AFFINITY: register(ASSIGNED_POD_ADD)})
    q.add(pod_info("p", uid="uid-p"))
    qpi = q.pop()
    assert qpi is not None
    q.assigned_pod_added(pod_info("x", uid="uid-x", node_name="n1"))
    qpi.unschedulable_plugins = {INTER_POD_AFFINITY}
    q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle())
    assert names(q.pending()["backoff"]) == ["p"]
