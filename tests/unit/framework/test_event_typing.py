"""A queueing hint is typed by its event's kind: mypy (run on the tests, with
``warn_unused_ignores``) checks this file, so each ``type: ignore`` below is an assertion that
mypy refuses that registration, and each ``assert_type`` one that it infers that kind's type.
The runtime part checks that the typing costs nothing: events stay equal and hashable by value.
"""

from __future__ import annotations

from typing import assert_type

from scheduler_core.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventObject,
    EventResource,
    Manifest,
    NodeInfo,
    PodInfo,
    QueueingHint,
)


def node_hint(pod: PodInfo, old: NodeInfo | None, new: NodeInfo | None) -> QueueingHint:
    return QueueingHint.QUEUE if new is not None and new.labels else QueueingHint.SKIP


def pod_hint(pod: PodInfo, old: PodInfo | None, new: PodInfo | None) -> QueueingHint:
    return QueueingHint.QUEUE if new is not None and new.uid == pod.uid else QueueingHint.SKIP


def claim_hint(pod: PodInfo, old: Manifest | None, new: Manifest | None) -> QueueingHint:
    return QueueingHint.QUEUE if new is not None and new.get("status") else QueueingHint.SKIP


def any_hint(pod: PodInfo, old: EventObject, new: EventObject) -> QueueingHint:
    return QueueingHint.QUEUE


NODE = ClusterEvent(EventResource.NODE, ActionType.ADD)
POD = ClusterEvent(EventResource.POD, ActionType.UPDATE)
ASSIGNED_POD = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE)
CLAIM = ClusterEvent(EventResource.RESOURCE_CLAIM, ActionType.ADD)
WILDCARD = ClusterEvent(EventResource.WILDCARD, ActionType.ALL)


def test_each_kind_types_its_hint() -> None:
    assert_type(NODE, ClusterEvent[NodeInfo])
    assert_type(POD, ClusterEvent[PodInfo])
    assert_type(ASSIGNED_POD, ClusterEvent[PodInfo])
    assert_type(CLAIM, ClusterEvent[Manifest])
    assert_type(WILDCARD, ClusterEvent[EventObject])
    registered: list[ClusterEventWithHint] = [
        ClusterEventWithHint(NODE, node_hint),
        ClusterEventWithHint(POD, pod_hint),
        ClusterEventWithHint(ASSIGNED_POD, pod_hint),
        ClusterEventWithHint(CLAIM, claim_hint),
        ClusterEventWithHint(NODE, any_hint),  # a hint over every kind fits any event
        ClusterEventWithHint(WILDCARD, any_hint),
        ClusterEventWithHint(CLAIM),
    ]
    assert [r.hint for r in registered] == [node_hint, pod_hint, pod_hint, claim_hint, any_hint, any_hint, None]


def test_a_hint_of_another_kind_is_refused() -> None:
    refused = [
        ClusterEventWithHint(NODE, pod_hint),  # type: ignore[call-overload]
        ClusterEventWithHint(POD, node_hint),  # type: ignore[call-overload]
        ClusterEventWithHint(CLAIM, node_hint),  # type: ignore[call-overload]
        ClusterEventWithHint(WILDCARD, claim_hint),  # type: ignore[call-overload]
    ]
    assert len(refused) == 4  # refused by the type checker only: at run time nothing is checked


def test_events_compare_by_value_whatever_their_type() -> None:
    assert ClusterEvent(EventResource.NODE, ActionType.ADD) == NODE
    assert hash(ClusterEvent(EventResource.NODE, ActionType.ADD)) == hash(NODE)
    pod_add: ClusterEvent = ClusterEvent(EventResource.POD, ActionType.ADD)
    assert pod_add != NODE
