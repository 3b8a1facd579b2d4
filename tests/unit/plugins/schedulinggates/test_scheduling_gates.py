"""SchedulingGates, as upstream ``schedulinggates/scheduling_gates_test.go`` (TestPreEnqueue,
Test_isSchedulableAfterPodChange)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import ActionType, EventResource, PodInfo, QueueingHint, Status
from scheduler_core.plugins.schedulinggates import SchedulingGates
from tests.wrappers import pod


def gated(name: str, gates: list[str], uid: str | None = None) -> dict[str, Any]:
    return pod(name, uid=uid, schedulingGates=[{"name": g} for g in gates])


@pytest.mark.parametrize(
    ("the_pod", "want"),
    [
        pytest.param(pod("p"), None, id="TestPreEnqueue/pod does not carry scheduling gates"),
        pytest.param(
            gated("p", ["foo", "bar"]),
            Status.unresolvable("waiting for scheduling gates: [foo bar]"),
            id="TestPreEnqueue/pod carries scheduling gates",
        ),
        pytest.param(gated("p", []), None, id="empty gate list"),
    ],
)
def test_pre_enqueue(the_pod: dict[str, Any], want: Status | None) -> None:
    assert SchedulingGates(None, None).pre_enqueue(PodInfo(the_pod)) == want


def _hint() -> Any:
    (registered,) = SchedulingGates(None, None).events_to_register()
    assert registered.event.resource is EventResource.POD
    assert registered.event.action == ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    return registered.hint


@pytest.mark.parametrize(
    ("target", "old", "new", "expected"),
    [
        pytest.param(
            gated("p", ["foo", "bar"], "uid0"),
            gated("p1", ["foo", "bar"], "uid1"),
            gated("p1", ["foo"], "uid1"),
            QueueingHint.SKIP,
            id="Test_isSchedulableAfterPodChange/skip-queue-on-other-pod-updated",
        ),
        pytest.param(
            gated("p", ["foo"], "uid0"),
            gated("p", ["foo"], "uid0"),
            gated("p", [], "uid0"),
            QueueingHint.QUEUE,
            id="Test_isSchedulableAfterPodChange/queue-on-the-unsched-pod-updated",
        ),
    ],
)
def test_hint(target: dict[str, Any], old: dict[str, Any], new: dict[str, Any], expected: QueueingHint) -> None:
    assert _hint()(PodInfo(target), PodInfo(old), PodInfo(new)) is expected


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param("not-a-pod", None, id="Test_isSchedulableAfterPodChange/backoff-wrong-old-object"),
        pytest.param(None, "not-a-pod", id="Test_isSchedulableAfterPodChange/backoff-wrong-new-object"),
    ],
)
def test_hint_wrong_objects_raise(old: object, new: object) -> None:
    with pytest.raises(TypeError):
        _hint()(PodInfo(pod("p")), old, new)
