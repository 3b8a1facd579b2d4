"""What a backend hears of its pods from the scheduler, and the pod deleted while no watch ran.

A backend that keeps something per pod (the operator's reporting state) is told through
``pod_gone`` when a pod is deleted or bound, and never reads the cache: a pod that vanished
from a re-list goes to ``Scheduler.on_pod_vanished``, which asks the cache where it was counted.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler_core.clock import FakeClock
from scheduler_core.config import SchedulerProfileSpec
from scheduler_core.defaults import default_plugins
from scheduler_core.framework import PodInfo
from scheduler_core.profiles import ProfileKey
from scheduler_core.runtime.registry import default_registry
from scheduler_core.scheduler import Scheduler
from scheduler_core.simulator.backend import InMemoryCluster
from tests.unit.scheduling.support import HOME, add_nodes, add_pods, node_of
from tests.wrappers import node, pod


def gone_scheduler() -> tuple[Scheduler, InMemoryCluster, list[str]]:
    """A scheduler over an in-memory cluster with one 4-CPU node; the uids it said were gone."""
    gone: list[str] = []
    registry: dict[str, Any] = dict(default_registry(with_out_of_tree=False))
    cluster = InMemoryCluster()
    scheduler = Scheduler(
        cluster,
        registry=registry,
        default_multi_point=default_plugins(registry),
        clock=FakeClock(),
        rng=random.Random(1),
        pod_gone=gone.append,
    )
    cluster.watch(scheduler)
    scheduler.apply_profile(ProfileKey(HOME, "default"), SchedulerProfileSpec.model_validate({}))
    add_nodes(scheduler, cluster, [node("n1", cpu="4")])
    return scheduler, cluster, gone


async def test_a_pod_bound_by_the_scheduler_is_gone_once() -> None:
    scheduler, cluster, gone = gone_scheduler()
    add_pods(scheduler, cluster, [pod("p", uid="u1", cpu="1")])
    await scheduler.run_until_idle()
    assert node_of(cluster, "p") == "n1"
    assert gone == ["u1"]


@pytest.mark.parametrize(
    ("old", "new", "told"),
    [
        pytest.param(pod("p", uid="u1"), pod("p", uid="u1", node_name="n1"), ["u1"], id="bound-by-another"),
        pytest.param(pod("p", uid="u1"), pod("p", uid="u1", labels={"a": "b"}), [], id="pending-updated"),
        pytest.param(
            pod("p", uid="u1", node_name="n1"), pod("p", uid="u1", node_name="n1", labels={"a": "b"}), [],
            id="bound-updated",
        ),
    ],
)  # fmt: skip
def test_an_update_is_gone_only_when_it_binds(old: dict[str, Any], new: dict[str, Any], told: list[str]) -> None:
    scheduler, _, gone = gone_scheduler()
    scheduler.on_pod_add(old)
    scheduler.on_pod_update(old, new)
    assert gone == told


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(pod("p", uid="u1"), id="pending"),
        pytest.param(pod("p", uid="u1", node_name="n1"), id="bound"),
    ],
)
def test_a_deleted_pod_is_gone(body: dict[str, Any]) -> None:
    scheduler, _, gone = gone_scheduler()
    scheduler.on_pod_add(body)
    scheduler.on_pod_delete(body)
    assert gone == ["u1"]


@pytest.mark.parametrize(
    "last_seen",
    [
        pytest.param(pod("p", uid="u1", cpu="1"), id="assumed-then-bound-in-the-gap"),
        pytest.param(pod("p", uid="u1", cpu="1", node_name="n1"), id="bound-when-last-seen"),
    ],
)
def test_a_pod_that_vanished_frees_its_node(last_seen: dict[str, Any]) -> None:
    """The pod was placed on n1 (assumed, or seen bound), then deleted while no watch ran: the
    last body the backend saw may have no node, and the capacity must come back all the same."""
    scheduler, _, gone = gone_scheduler()
    scheduler.on_pod_add(last_seen)
    if not PodInfo(last_seen).node_name:
        scheduler.cache.assume_pod(PodInfo(last_seen).with_node("n1"))
    info = scheduler.cache.get_node("n1")
    assert info is not None and info.requested.milli_cpu == 1000

    scheduler.on_pod_vanished(last_seen)

    assert scheduler.cache.get_pod(PodInfo(last_seen)) is None
    assert info.requested.milli_cpu == 0
    assert gone == ["u1"]
