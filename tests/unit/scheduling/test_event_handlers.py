"""``Scheduler.on_object_*``: the scheduler, not its backend, decides which changes of the
kinds plugins read are cluster events (upstream eventhandlers.go)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

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
