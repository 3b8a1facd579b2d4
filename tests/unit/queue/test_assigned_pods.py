"""Events from assigned pods (upstream eventhandlers.go addAssignedPodToCache,
updateAssignedPodInCache, deletePodFromCache: with SchedulerQueueingHints locked on, each is
MoveAllToActiveOrBackoffQueue and the hints decide)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import (
    ASSIGNED_POD_ADD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    PodInfo,
    QueueingHint,
    affinity,
)
from scheduler_core.plugins.names import INTER_POD_AFFINITY, NODE_RESOURCES_FIT
from tests.unit.plugins.interpodaffinity.helpers import setup
from tests.wrappers import pod_info

from .support import hint_always, make_queue, names, pop_and_fail, register

ASSIGNED_ALL = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ALL)


def _affinity(**term: Any) -> dict[str, Any]:
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone", **term}]}}


def _inter_pod_affinity() -> list[ClusterEventWithHint]:
    return setup([], [])[0].events_to_register()


@pytest.mark.parametrize(
    ("pending", "assigned", "moves"),
    [
        pytest.param(
            pod_info("p", uid="uid-p", affinity=_affinity(labelSelector={"matchLabels": {"app": "db"}})),
            pod_info("db", uid="uid-db", node_name="n1", labels={"app": "db"}),
            True,
            id="affinity-term-matches",
        ),
        pytest.param(
            pod_info("p", uid="uid-p", affinity=_affinity(labelSelector={"matchLabels": {"app": "db"}})),
            pod_info("web", uid="uid-web", node_name="n1", labels={"app": "web"}),
            False,
            id="affinity-term-does-not-match",
        ),
        pytest.param(
            pod_info("p", uid="uid-p", affinity=_affinity(labelSelector={"matchLabels": {"app": "db"}})),
            pod_info("db", uid="uid-db", namespace="other", node_name="n1", labels={"app": "db"}),
            False,
            id="term-defaults-to-own-namespace",
        ),
        pytest.param(
            pod_info(
                "p", uid="uid-p", affinity=_affinity(labelSelector={"matchLabels": {"app": "db"}}, namespaces=["other"])
            ),
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
            pod_info("any", uid="uid-any", namespace="x", node_name="n1", labels={"app": "anything"}),
            True,
            id="empty-namespace-selector-selects-all",
        ),
        pytest.param(
            pod_info("p", uid="uid-p", affinity=_affinity()),
            pod_info("db", uid="uid-db", node_name="n1", labels={"app": "db"}),
            False,
            id="nil-label-selector-selects-nothing",
        ),
    ],
)
def test_an_assigned_pod_added_moves_the_pods_inter_pod_affinity_s_hint_queues(
    pending: PodInfo, assigned: PodInfo, moves: bool
) -> None:
    q, clock = make_queue(hints={INTER_POD_AFFINITY: _inter_pod_affinity()})
    q.add(pending)
    pop_and_fail(q, INTER_POD_AFFINITY)
    clock.advance(20)
    q.assigned_pod_added(assigned)
    assert names(q.pending()["active" if moves else "unschedulable"]) == ["p"]


@pytest.mark.parametrize(("hint", "moves"), [(QueueingHint.QUEUE, True), (QueueingHint.SKIP, False)])
def test_an_assigned_pod_add_runs_the_hint_of_every_interested_plugin(hint: QueueingHint, moves: bool) -> None:
    """MoveAllToActiveOrBackoffQueue(EventAssignedPodAdd) (eventhandlers.go
    addAssignedPodToCache, hints locked on): a pod no cross-topology term ties to the added
    pod moves when its rejecting plugin registered the event and the hint queues."""
    q, clock = make_queue(hints={"Custom": register(ASSIGNED_ALL, hint_always(hint))})
    q.add(pod_info("p", uid="uid-p"))
    pop_and_fail(q, "Custom")
    clock.advance(20)
    q.assigned_pod_added(pod_info("x", uid="uid-x", node_name="n1"))
    assert names(q.pending()["active" if moves else "unschedulable"]) == ["p"]


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
    def on_delete(_pod: PodInfo, _old: object, new: object) -> QueueingHint:
        return QueueingHint.QUEUE if new is None else QueueingHint.SKIP

    q, clock = make_queue(hints={NODE_RESOURCES_FIT: register(ASSIGNED_ALL, on_delete)})
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


def test_an_assigned_pod_losing_the_label_an_anti_affinity_term_selects_requeues_its_pod() -> None:
    """Upstream v1.36.3 has SchedulerQueueingHints GA and locked on, so eventhandlers.go
    updateAssignedPodInCache calls MoveAllToActiveOrBackoffQueue for each event and never
    AssignedPodUpdated's pre-filter (which looks only at required *affinity* terms): the
    InterPodAffinity hint decides, and it queues a pod whose anti-affinity term the updated pod
    no longer matches."""
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "db"}}}
            ]
        }
    }
    q, clock = make_queue(hints={INTER_POD_AFFINITY: _inter_pod_affinity()})
    q.add(pod_info("p", uid="uid-p", affinity=anti))
    pop_and_fail(q, INTER_POD_AFFINITY)
    clock.advance(20)
    blocker = pod_info("db", uid="uid-db", node_name="n1", labels={"app": "db"})
    q.assigned_pod_updated(blocker, pod_info("db", uid="uid-db", node_name="n1", labels={"app": "db", "v": "2"}))
    assert names(q.pending()["unschedulable"]) == ["p"]  # still matches the term: the hint skips
    q.assigned_pod_updated(blocker, pod_info("db", uid="uid-db", node_name="n1", labels={"app": "web"}))
    assert names(q.pending()["active"]) == ["p"]
