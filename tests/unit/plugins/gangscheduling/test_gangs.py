"""GangScheduling end to end in-process: upstream's v1alpha2 gangs bind whole or wait."""

from __future__ import annotations

from scheduler_core.simulator import simulate
from tests.unit.plugins.coscheduling.gangs import gang_group, gang_members, gang_scheduling_profile
from tests.unit.simulator.support import load
from tests.wrappers import node, pod


def bound(result, prefix: str) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(
        p["metadata"]["name"]
        for p in result.cluster.pods.values()
        if p["metadata"]["name"].startswith(prefix) and (p.get("spec") or {}).get("nodeName")
    )


def test_gang_that_fits_binds_whole() -> None:
    result = simulate(load(gang_scheduling_profile(), node("n1", cpu="4"), gang_group("g", 3), *gang_members("g", 3)))
    assert bound(result, "g-") == ["g-0", "g-1", "g-2"]


def test_gang_with_room_for_two_of_three_binds_none_and_holds_no_place() -> None:
    result = simulate(load(gang_scheduling_profile(), node("n1", cpu="2"), gang_group("g", 3), *gang_members("g", 3)))
    assert bound(result, "g-") == []
    messages = [r.message for r in result.pods]
    assert any("a member found no node before the gang reached minCount" in m for m in messages), messages
    assert not any(n.pods for n in result.scheduler.cache.update_snapshot().list())


def test_a_later_pod_gets_the_place_an_incomplete_gang_would_have_held() -> None:
    # As upstream's pod group cycle: the gang that does not fit whole holds nothing, so the
    # pod after it binds (parity seed 42 of bench/parity_harness/gangs.py).
    result = simulate(
        load(
            gang_scheduling_profile(),
            node("n1", cpu="1"),
            gang_group("g", 2),
            *gang_members("g", 2),
            pod("solo", cpu="1"),
        )
    )
    assert bound(result, "g-") == []
    assert bound(result, "solo") == ["solo"]


def test_gang_short_of_min_count_pods_is_held_before_the_queue() -> None:
    result = simulate(
        load(
            gang_scheduling_profile(),
            node("n1", cpu="8"),
            gang_group("g", 3),
            *gang_members("g", 2),
            pod("solo", cpu="1"),
        )
    )
    assert bound(result, "g-") == []
    assert bound(result, "solo") == ["solo"]
    reports = {r.name: r for r in result.pods}
    assert "PreEnqueue plugin 'GangScheduling' holds the pod" in reports["g-0"].message


def test_pod_whose_pod_group_is_missing_is_held() -> None:
    result = simulate(load(gang_scheduling_profile(), node("n1", cpu="8"), *gang_members("g", 2)))
    assert bound(result, "g-") == []
