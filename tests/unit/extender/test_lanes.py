"""A slow extender holds only its own profile's pods (issue 26, item 3; docs/extenders.md).

``Scheduler.run`` hands the pods of a profile with extenders to that profile's lane and goes on
with the next pod; when the answer comes, the chosen host is checked again on the current cache
before anything is assumed, so no node is overcommitted by decisions taken meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from scheduler_core.config import SchedulerProfileSpec
from scheduler_core.profiles import ProfileKey
from tests.unit.extender.peer import Peer, names
from tests.unit.scheduling.support import HOME, add_nodes, add_pods, make_scheduler, node_of
from tests.wrappers import node, pod

OTHER = "other-scheduler"


@pytest.fixture
async def peer() -> AsyncIterator[Peer]:
    server = await Peer().start()
    yield server
    await server.stop()


async def _until(predicate: Any, turns: int = 2000) -> None:
    for _ in range(turns):
        if predicate():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("condition not reached")


async def _fast_bound_while_slow_waits(
    peer: Peer, node_cpu: str
) -> tuple[Any, Any, asyncio.Event, asyncio.Event, asyncio.Task[None]]:
    """Pod "slow" of a profile whose extender holds its answer until ``answered`` is set, and
    pod "fast" of another profile bound meanwhile, on one node of ``node_cpu``."""
    answered = asyncio.Event()

    async def slow(body: dict[str, Any]) -> dict[str, Any]:
        await answered.wait()
        return {"NodeNames": names(body)}

    peer.answers["filter"] = slow
    spec = {"extenders": [{"urlPrefix": peer.url, "filterVerb": "filter", "nodeCacheCapable": True}]}
    scheduler, cluster, _ = make_scheduler(spec)
    scheduler.apply_profile(ProfileKey(HOME, "other"), SchedulerProfileSpec.model_validate({"schedulerName": OTHER}))
    add_nodes(scheduler, cluster, [node("n1", cpu=node_cpu)])
    add_pods(scheduler, cluster, [pod("slow", uid="slow", cpu="1")])
    stop = asyncio.Event()
    loop = asyncio.create_task(scheduler.run(stop))
    await _until(lambda: peer.calls)
    add_pods(scheduler, cluster, [pod("fast", uid="fast", cpu="1", scheduler_name=OTHER)])
    await _until(lambda: node_of(cluster, "fast") is not None)
    return scheduler, cluster, answered, stop, loop


async def test_another_profiles_pod_binds_while_an_extender_call_is_in_flight(peer: Peer) -> None:
    _, cluster, answered, stop, loop = await _fast_bound_while_slow_waits(peer, node_cpu="4")
    assert node_of(cluster, "slow") is None  # still waiting for its extender
    answered.set()
    await _until(lambda: node_of(cluster, "slow") is not None)
    stop.set()
    await loop
    assert (node_of(cluster, "fast"), node_of(cluster, "slow")) == ("n1", "n1")


async def test_a_host_filled_while_the_extender_answered_is_checked_again_and_not_overcommitted(peer: Peer) -> None:
    scheduler, cluster, answered, stop, loop = await _fast_bound_while_slow_waits(peer, node_cpu="1")
    answered.set()  # the extender passes n1, which "fast" has filled meanwhile
    await _until(lambda: any(e.reason == "FailedScheduling" for e in cluster.events_for("default", "slow")))
    stop.set()
    await loop
    assert node_of(cluster, "slow") is None
    [event] = [e for e in cluster.events_for("default", "slow") if e.reason == "FailedScheduling"][:1]
    assert event.message == ("node n1 no longer fits the pod after the extenders answered (Insufficient cpu); retrying")
    info = scheduler.cache.update_snapshot().get("n1")
    assert info is not None and info.requested.milli_cpu == 1000  # only "fast"
