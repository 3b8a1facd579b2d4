"""The nominator (upstream backend/queue/nominator.go; scheduling_queue_test.go
TestPriorityQueue_UpdateNominatedPodForNode, TestPriorityQueue_NominatedPodDeleted)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import PodInfo
from scheduler_core.queue import Nominator
from tests.wrappers import pod_info

from .support import make_queue, names


def nominated(name: str, node: str = "", **kwargs: Any) -> PodInfo:
    info = pod_info(name, **kwargs, uid=f"uid-{name}")
    if node:
        manifest = dict(info.pod)
        manifest["status"] = {"nominatedNodeName": node}
        info = PodInfo(manifest)
    return info


def test_pods_for_a_node_come_in_nomination_order() -> None:
    n = Nominator()
    n.add_nominated_pod(pod_info("low", uid="uid-low", priority=1), "n1")
    n.add_nominated_pod(pod_info("high", uid="uid-high", priority=9), "n1")
    n.add_nominated_pod(pod_info("elsewhere", uid="uid-elsewhere"), "n2")
    assert names(n.nominated_pods_for_node("n1")) == ["low", "high"]
    assert names(n.nominated_pods_for_node("n2")) == ["elsewhere"]
    assert n.nominated_pods_for_node("n3") == []


def test_nominated_node_names_are_the_nodes_with_a_nominated_pod() -> None:
    n = Nominator()
    a, b = pod_info("a", uid="uid-a"), pod_info("b", uid="uid-b")
    n.add_nominated_pod(a, "n1")
    n.add_nominated_pod(b, "n2")
    assert sorted(n.nominated_node_names()) == ["n1", "n2"]
    n.delete_nominated_pod_if_exists(b)
    assert n.nominated_node_names() == ["n1"]


@pytest.mark.parametrize(
    ("status_node", "override", "expected_node"),
    [
        pytest.param("n1", None, "n1", id="noop-uses-status"),
        pytest.param("n1", "n2", "n2", id="override-wins"),
        pytest.param("", None, None, id="no-nomination"),
        pytest.param("n1", "", None, id="override-empty-clears"),
    ],
)
def test_nominating_modes(status_node: str, override: str | None, expected_node: str | None) -> None:
    n = Nominator()
    p = nominated("a", status_node)
    n.add_nominated_pod(p, override)
    assert n.nominated_node_for(p.uid) == expected_node


def test_a_pod_is_nominated_to_one_node_at_most() -> None:
    n = Nominator()
    p = pod_info("a", uid="uid-a")
    n.add_nominated_pod(p, "n1")
    n.add_nominated_pod(p, "n2")
    assert n.nominated_pods_for_node("n1") == []
    assert names(n.nominated_pods_for_node("n2")) == ["a"]


def test_update_keeps_an_in_memory_nomination_the_update_does_not_mention() -> None:
    n = Nominator()
    old = pod_info("a", uid="uid-a")
    n.add_nominated_pod(old, "n1")
    new = pod_info("a", uid="uid-a", labels={"x": "y"})
    n.update_nominated_pod(old, new)
    assert n.nominated_pods_for_node("n1") == [new]


@pytest.mark.parametrize(
    ("old_node", "new_node", "expected"),
    [
        pytest.param("", "n2", "n2", id="nomination-added-by-update"),
        pytest.param("n1", "n2", "n2", id="nomination-changed"),
        pytest.param("n1", "", None, id="nomination-removed"),
    ],
)
def test_update_follows_a_nomination_change(old_node: str, new_node: str, expected: str | None) -> None:
    n = Nominator()
    old = nominated("a", old_node)
    n.add_nominated_pod(old, "n1")
    new = nominated("a", new_node)
    n.update_nominated_pod(old, new)
    assert n.nominated_node_for(new.uid) == expected


def test_the_pod_lister_vetoes_gone_or_bound_pods() -> None:
    bound = pod_info("bound", uid="uid-bound", node_name="n9")
    current = {"alive": pod_info("alive", uid="uid-alive"), "bound": bound}
    n = Nominator(pod_lister=lambda p: current.get(p.name))
    for name in ("alive", "bound", "gone"):
        n.add_nominated_pod(pod_info(name, uid=f"uid-{name}"), "n1")
    assert names(n.nominated_pods_for_node("n1")) == ["alive"]


def test_the_queue_keeps_the_nominator_in_step() -> None:
    q, _ = make_queue()
    p = nominated("a", "n1")
    q.add(p)
    assert names(q.nominator.nominated_pods_for_node("n1")) == ["a"]
    newer = nominated("a", "n1", labels={"v": "2"})
    q.update(p, newer)
    assert q.nominator.nominated_pods_for_node("n1") == [newer]
    q.delete(newer)
    assert q.nominator.nominated_pods_for_node("n1") == []


def test_nominated_pods_resolve_to_the_freshest_queued_version() -> None:
    q, _ = make_queue()
    q.add(pod_info("a", uid="uid-a"))
    q.nominator.add_nominated_pod(pod_info("a", uid="uid-a"), "n1")
    newer = pod_info("a", uid="uid-a", labels={"v": "2"})
    q.update(pod_info("a", uid="uid-a"), newer)
    assert q.nominator.nominated_pods_for_node("n1")[0] is newer


def test_ghosts_are_the_higher_or_equal_priority_pods_of_others_by_node() -> None:
    """addGETNominatedPods: a node's pods of at least the pod's priority count, the pod itself
    not; nodes with none are not in the view."""
    n = Nominator()
    me = pod_info("me", uid="uid-me", priority=5)
    n.add_nominated_pod(pod_info("low", uid="uid-low", priority=1), "n1")
    n.add_nominated_pod(pod_info("equal", uid="uid-equal", priority=5), "n1")
    n.add_nominated_pod(pod_info("high", uid="uid-high", priority=9), "n2")
    n.add_nominated_pod(me, "n3")
    n.add_nominated_pod(pod_info("lower", uid="uid-lower", priority=4), "n4")

    ghosts = n.ghosts_for(me)

    assert sorted(ghosts) == ["n1", "n2"] and len(ghosts) == 2
    assert "n3" not in ghosts and "n4" not in ghosts and ghosts.get("n4") is None
    assert {node: names(pods) for node, pods in ghosts.items()} == {"n1": ["equal"], "n2": ["high"]}


def test_a_nodes_ghosts_are_resolved_when_that_node_is_asked_for_once() -> None:
    """A cycle that finds its pod's nominated node fit asks for one node: the other nominated
    pods are not resolved (each was, for every cycle, before)."""
    n = Nominator()
    for i in range(50):
        n.add_nominated_pod(pod_info(f"p{i}", uid=f"uid-p{i}", priority=5), f"n{i}")
    resolved: list[str] = []
    fresh: dict[str, PodInfo] = {}

    def resolve(pod: PodInfo) -> PodInfo:
        resolved.append(pod.name)
        return fresh.setdefault(pod.name, pod_info(pod.name, uid=pod.uid, priority=pod.priority))

    n.resolve = resolve
    ghosts = n.ghosts_for(pod_info("me", uid="uid-me", priority=5))

    assert len(ghosts) == 50 and resolved == []
    first = ghosts["n7"]
    assert ghosts["n7"] is first and resolved == ["p7"]
    assert first == [fresh["p7"]]  # the freshest version, as the queue holds it
