"""``Scheduler.on_object_*``: the scheduler, not its backend, decides which changes of the
kinds plugins read are cluster events (upstream eventhandlers.go)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler_core.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    EventResource,
    PodInfo,
    Status,
)
from tests.unit.scheduling.support import add_nodes, add_pods, make_scheduler
from tests.wrappers import node, pod

CLAIM = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
         "spec": {"storageClassName": "none"}}  # fmt: skip
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"}}


@pytest.mark.parametrize(
    ("kind", "obj", "retried"),
    [
        pytest.param("PersistentVolumeClaim", CLAIM, True, id="storage-kind-is-a-cluster-event"),
        pytest.param("Service", SERVICE, False, id="read-only-kind-is-not"),
    ],
)
def test_only_changes_plugins_registered_for_retry_a_pod(kind: str, obj: dict[str, Any], retried: bool) -> None:
    scheduler, cluster, _ = make_scheduler()
    add_nodes(scheduler, cluster, [node("n")])
    volumes = [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]
    add_pods(scheduler, cluster, [pod("needs-claim", volumes=volumes)])
    asyncio.run(scheduler.run_until_idle())
    before = scheduler.attempt_count

    scheduler.on_object_add(kind, obj)
    asyncio.run(scheduler.run_until_idle())

    assert (scheduler.attempt_count > before) is retried


class RejectsWaiting:
    """Filter rejects pod ``waiting``; registers unscheduled Pod/Add with no hint (Queue)."""

    name = "RejectsWaiting"
    args_model = None

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.ADD))]

    def filter(self, state: CycleState, pod: PodInfo, node_info: Any) -> Status | None:
        return Status.unschedulable("waits") if pod.name == "waiting" else None


REJECTS_WAITING = {"plugins": {"filter": {"enabled": [{"name": "RejectsWaiting"}]}}}
WITH_GANGS = {"plugins": {"filter": {"enabled": [{"name": "RejectsWaiting"}]},
                          "multiPoint": {"enabled": [{"name": "GangScheduling"}]}}}  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "retried"),
    [
        pytest.param(REJECTS_WAITING, False, id="no-gang-plugin-no-event"),
        pytest.param(WITH_GANGS, True, id="gang-plugin-raises-it"),
    ],
)
def test_unscheduled_pod_add_is_raised_only_with_a_gang_plugin(spec: dict[str, Any], retried: bool) -> None:
    # Upstream eventhandlers.go addPodToSchedulingQueue raises UnschedulablePodAdd only under the
    # GangScheduling gate (off by default in v1.36), whatever other plugins register.
    scheduler, cluster, _ = make_scheduler(spec, extra_plugins={"RejectsWaiting": RejectsWaiting})
    add_nodes(scheduler, cluster, [node("n")])
    add_pods(scheduler, cluster, [pod("waiting")])
    asyncio.run(scheduler.run_until_idle())
    before = scheduler.attempt_count

    add_pods(scheduler, cluster, [pod("other")])
    asyncio.run(scheduler.run_until_idle())

    assert scheduler.attempt_count - before == (2 if retried else 1)
