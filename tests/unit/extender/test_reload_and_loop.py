"""Extenders on a live scheduler: added, changed and removed by a profile reload, no restart; and
the loop stays responsive while an extender is slow (the cycle is awaited, not blocking)."""

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

KEY = ProfileKey(HOME, "default")


@pytest.fixture
async def peer() -> AsyncIterator[Peer]:
    server = await Peer().start()
    yield server
    await server.stop()


def _refusing(refused: str) -> Any:
    return lambda body: {"NodeNames": [n for n in names(body) if n != refused], "FailedNodes": {refused: "refused"}}


async def test_adding_changing_and_removing_an_extender_takes_effect_without_a_restart(peer: Peer) -> None:
    scheduler, cluster, _ = make_scheduler()
    add_nodes(scheduler, cluster, [node("n1"), node("n2")])
    peer.answers["refuse-n1"] = _refusing("n1")
    peer.answers["refuse-n2"] = _refusing("n2")

    def apply(extenders: list[dict[str, Any]]) -> None:
        spec = {"extenders": extenders, "plugins": {"score": {"disabled": [{"name": "*"}]}}}
        scheduler.apply_profile(KEY, SchedulerProfileSpec.model_validate(spec))

    placed: list[str | None] = []
    for step, extenders in enumerate(
        (
            [{"urlPrefix": peer.url, "filterVerb": "refuse-n1", "nodeCacheCapable": True}],  # added
            [{"urlPrefix": peer.url, "filterVerb": "refuse-n2", "nodeCacheCapable": True}],  # changed
            [],  # removed
        )
    ):
        apply(extenders)
        before = len(peer.calls)
        add_pods(scheduler, cluster, [pod(f"p{step}", uid=f"u{step}", cpu="100m")])
        await scheduler.run_until_idle()
        placed.append(node_of(cluster, f"p{step}"))
        assert len(peer.calls) - before == (1 if extenders else 0)
    assert placed[:2] == ["n2", "n1"]
    assert peer.verbs() == ["refuse-n1", "refuse-n2"]


async def test_the_loop_runs_other_work_while_an_extender_is_slow(peer: Peer) -> None:
    answered = asyncio.Event()

    async def slow(body: dict[str, Any]) -> dict[str, Any]:
        await answered.wait()
        return {"NodeNames": names(body)}

    peer.answers["filter"] = slow
    spec = {"extenders": [{"urlPrefix": peer.url, "filterVerb": "filter", "nodeCacheCapable": True}]}
    scheduler, cluster, _ = make_scheduler(spec)
    add_nodes(scheduler, cluster, [node("n1")])
    add_pods(scheduler, cluster, [pod("p", uid="u", cpu="100m")])
    stop = asyncio.Event()
    loop = asyncio.create_task(scheduler.run(stop))
    while not peer.calls:
        await asyncio.sleep(0)
    # The cycle is waiting for the extender: this coroutine (a watch handler, the Lease) still runs,
    # and a node added meanwhile reaches the cache.
    add_nodes(scheduler, cluster, [node("n2")])
    assert scheduler.cache.get_node("n2") is not None
    answered.set()
    while node_of(cluster, "p") is None:
        await asyncio.sleep(0.01)
    stop.set()
    await loop
    assert node_of(cluster, "p") == "n1"
