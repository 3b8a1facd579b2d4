"""A pod deleted and re-created under the same name (upstream's e2e ``Get2NodesThatCanRunPod``
does it with grace period 0): whatever order the old pod's delete and the new pod's add reach
the scheduler in, and whether the old pod's binding is in flight meanwhile, the new pod binds.

The queue keys pods by ``namespace/name`` (upstream ``podInfoKeyFunc``); the operator's informer
keys them by UID, so a re-list announces the new pod before the old one's delete.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pytest

from scheduler_core.framework import PodInfo, Status
from scheduler_core.scheduler import Scheduler
from scheduler_core.simulator.backend import InMemoryCluster
from tests.unit.scheduling.support import add_nodes, make_scheduler
from tests.wrappers import node, pod

OLD = pod("without-label", uid="old")
NEW = pod("without-label", uid="new")


class HeldBinds(InMemoryCluster):
    """Holds the binding of the pods in ``held`` until ``release``; records every bind's answer."""

    def __init__(self, *held: str) -> None:
        super().__init__()
        self.held = {uid: asyncio.Event() for uid in held}
        self.arrived = {uid: asyncio.Event() for uid in held}
        self.answers: dict[str, Status | None] = {}

    async def bind(self, pod: PodInfo, node_name: str, annotations: Mapping[str, str] | None = None) -> Status | None:
        if pod.uid in self.held:
            self.arrived[pod.uid].set()
            await self.held[pod.uid].wait()
        answer = await super().bind(pod, node_name, annotations)
        self.answers[pod.uid] = answer
        return answer

    def release(self, uid: str) -> None:
        self.held[uid].set()


def _delete_old(scheduler: Scheduler, cluster: InMemoryCluster) -> None:
    scheduler.on_pod_delete(cluster.pods.pop("old"))


def _add_new(scheduler: Scheduler, cluster: InMemoryCluster) -> None:
    cluster.pods["new"] = NEW
    scheduler.on_pod_add(NEW)


Step = Callable[[Scheduler, InMemoryCluster], None]


@pytest.mark.parametrize(
    "steps",
    [
        pytest.param([_delete_old, _add_new], id="watch-order-delete-then-add"),
        pytest.param([_add_new, _delete_old], id="relist-order-add-then-delete"),
    ],
)
async def test_the_re_created_pod_binds_when_the_old_pods_binding_fails_not_found(steps: list[Step]) -> None:
    cluster = HeldBinds("old")
    scheduler, _, _ = make_scheduler(cluster=cluster)
    add_nodes(scheduler, cluster, [node("n1"), node("n2")])
    cluster.pods["old"] = OLD
    scheduler.on_pod_add(OLD)
    run = asyncio.ensure_future(scheduler.run_until_idle())
    await cluster.arrived["old"].wait()  # the old pod is assumed, its binding in flight
    for step in steps:
        step(scheduler, cluster)
    cluster.release("old")
    await run
    await scheduler.run_until_idle()
    answer = cluster.answers["old"]
    assert answer is not None and answer.message() == 'pods "without-label" not found'
    assert cluster.answers["new"] is None
    assert (cluster.pods["new"].get("spec") or {}).get("nodeName") in ("n1", "n2")
    assert not scheduler.cache.is_assumed_pod(PodInfo(OLD))
    assert len(scheduler.queue) == 0


async def test_a_pending_pod_re_created_under_its_name_stays_queued_when_the_old_ones_delete_comes_last() -> None:
    """The re-list case without any binding: the old pod waits (its node is full), the new pod
    of the same name arrives, then the old pod's delete."""
    scheduler, cluster, _ = make_scheduler()
    add_nodes(scheduler, cluster, [node("n1", cpu="1")])
    old = pod("without-label", uid="old", cpu="2")
    cluster.pods["old"] = old
    scheduler.on_pod_add(old)
    await scheduler.run_until_idle()
    assert not (cluster.pods["old"].get("spec") or {}).get("nodeName")
    _add_new(scheduler, cluster)
    _delete_old(scheduler, cluster)
    await scheduler.run_until_idle()
    assert (cluster.pods["new"].get("spec") or {}).get("nodeName") == "n1"
