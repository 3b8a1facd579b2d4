"""A scheduler over the in-memory cluster, for loop tests."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from scheduler_core.clock import FakeClock
from scheduler_core.config import SchedulerProfileSpec
from scheduler_core.defaults import default_plugins
from scheduler_core.metrics.scheduler_metrics import SchedulerMetrics
from scheduler_core.profiles import ProfileKey
from scheduler_core.runtime.registry import default_registry
from scheduler_core.scheduler import Scheduler
from scheduler_core.simulator.backend import InMemoryCluster

HOME = "crd-scheduler"


def make_scheduler(
    spec: Mapping[str, Any] | None = None,
    *,
    extra_plugins: Mapping[str, Any] | None = None,
    seed: int = 1,
    cluster: InMemoryCluster | None = None,
    metrics: SchedulerMetrics | None = None,
    batch: bool = True,
) -> tuple[Scheduler, InMemoryCluster, FakeClock]:
    registry: dict[str, Any] = dict(default_registry(with_out_of_tree=False))
    registry.update(extra_plugins or {})
    cluster = cluster if cluster is not None else InMemoryCluster()
    clock = FakeClock()
    scheduler = Scheduler(
        cluster,
        registry=registry,
        default_multi_point=default_plugins(registry),
        clock=clock,
        rng=random.Random(seed),
        metrics=metrics,
        batch=batch,
    )
    cluster.watch(scheduler)
    scheduler.apply_profile(ProfileKey(HOME, "default"), SchedulerProfileSpec.model_validate(spec or {}))
    return scheduler, cluster, clock


def add_nodes(scheduler: Scheduler, cluster: InMemoryCluster, nodes: list[dict[str, Any]]) -> None:
    for node in nodes:
        cluster.nodes[node["metadata"]["name"]] = node
        scheduler.on_node_add(node)


def add_pods(scheduler: Scheduler, cluster: InMemoryCluster, pods: list[dict[str, Any]]) -> None:
    for pod in pods:
        cluster.pods[pod["metadata"]["uid"]] = pod
        scheduler.on_pod_add(pod)


def node_of(cluster: InMemoryCluster, name: str, namespace: str = "default") -> str | None:
    stored = cluster.pod(namespace, name)
    assert stored is not None
    return (stored.get("spec") or {}).get("nodeName")
