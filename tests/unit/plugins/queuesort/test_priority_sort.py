"""PrioritySort.less, as upstream ``queuesort/priority_sort_test.go`` (TestLess)."""

from __future__ import annotations

import itertools

import pytest

from scheduler_core.framework import QueuedPodInfo
from scheduler_core.plugins.queuesort import PrioritySort
from tests.wrappers import pod_info

LOW, HIGH = 10, 100
T1, T2 = 1000.0, 1001.0


def queued(priority: int | None, timestamp: float = 0.0) -> QueuedPodInfo:
    return QueuedPodInfo(pod_info(priority=priority), timestamp=timestamp)


@pytest.mark.parametrize(
    ("p1", "p2", "expected"),
    [
        pytest.param(queued(LOW), queued(HIGH), False, id="TestLess/p1.priority less than p2.priority"),
        pytest.param(queued(HIGH), queued(LOW), True, id="TestLess/p1.priority greater than p2.priority"),
        pytest.param(queued(HIGH, T1), queued(HIGH, T2), True, id="TestLess/equal priority. p1 is added earlier"),
        pytest.param(queued(HIGH, T2), queued(HIGH, T1), False, id="TestLess/equal priority. p2 is added earlier"),
        pytest.param(queued(None, T1), queued(-1, T2), True, id="unset priority is 0, above negative"),
        pytest.param(queued(HIGH, T1), queued(HIGH, T1), False, id="equal priority and timestamp is not less"),
    ],
)
def test_less(p1: QueuedPodInfo, p2: QueuedPodInfo, expected: bool) -> None:
    assert PrioritySort(None, None).less(p1, p2) is expected


def test_sorts_a_queue() -> None:
    pods = [queued(LOW, 1.0), queued(HIGH, 3.0), queued(HIGH, 2.0), queued(None, 0.5)]
    plugin = PrioritySort(None, None)
    ordered = sorted(pods, key=lambda p: (-p.pod_info.priority, p.timestamp))
    for earlier, later in itertools.pairwise(ordered):
        assert plugin.less(earlier, later)
        assert not plugin.less(later, earlier)
