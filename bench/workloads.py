"""Benchmark workloads, after upstream scheduler_perf (test/integration/scheduler_perf/config).

Templates are upstream's ``node-default.yaml`` (4 CPU, 32Gi, 110 pods) and
``pod-default.yaml`` (one container requesting and limited to 100m CPU, 500Mi memory).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def node_default(i: int) -> dict[str, Any]:
    name = f"scheduler-perf-{i}"
    capacity = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [{"type": "Ready", "status": "True"}],
            "phase": "Running",
        },
    }


def pod_default(i: int, namespace: str = "sched-0", prefix: str = "pod") -> dict[str, Any]:
    resources = {"cpu": "100m", "memory": "500Mi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{prefix}-{i}", "namespace": namespace, "uid": f"{prefix}-{namespace}-{i}"},
        "spec": {
            "schedulerName": "crd-scheduler",
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10",
                    "ports": [{"containerPort": 80}],
                    "resources": {"requests": dict(resources), "limits": dict(resources)},
                }
            ],
        },
    }


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    node: Callable[[int], dict[str, Any]]
    init_pod: Callable[[int], dict[str, Any]]
    measure_pod: Callable[[int], dict[str, Any]]
    default_init_pods: int
    # upstream scheduler_perf's pods/s threshold for 5000 nodes (performance-config.yaml)
    upstream_threshold: float | None


WORKLOADS: dict[str, Workload] = {
    "SchedulingBasic": Workload(
        name="SchedulingBasic",
        node=node_default,
        init_pod=lambda i: pod_default(i, prefix="init"),
        measure_pod=pod_default,
        default_init_pods=1000,
        upstream_threshold=680.0,
    ),
}
