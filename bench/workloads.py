"""Benchmark workloads, after upstream scheduler_perf (test/integration/scheduler_perf/config).

Templates are upstream's ``node-default.yaml`` (4 CPU, 32Gi, 110 pods) and
``pod-default.yaml`` (one container requesting and limited to 100m CPU, 500Mi memory), and
for the other workloads ``pod-with-topology-spreading.yaml``, ``pod-with-pod-anti-affinity.yaml``,
``pod-low-priority.yaml`` (900m CPU, no priority) and ``pod-high-priority.yaml`` (3000m CPU,
``spec.priority: 10``; set directly, as the in-memory cluster runs no admission).
Each workload's default sizes are upstream's params for the variant named in ``upstream``.

The DRA workload is ``dra/performance-config.yaml`` SchedulingWithResourceClaimTemplate: nodes
from ``node-with-dra-test-driver.yaml`` (named ``scheduler-perf-dra-*``, label
``node-with-dra: "true"``), one ResourceSlice per node with ``maxClaimsPerNode`` devices as
``dra.go`` ``resourceSlice`` publishes them, ``deviceclass.yaml``, ``resourceclaimtemplate.yaml``
in each namespace, and ``pod-with-claim-template.yaml`` pods (their claims are made by the
in-memory cluster's resourceclaim controller when the pod is added).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ZONE_KEY = "topology.kubernetes.io/zone"


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


def node_with_zone(i: int) -> dict[str, Any]:
    """``node-default.yaml`` plus upstream's ``labelNodePrepareStrategy`` for TopologySpreading:
    ``topology.kubernetes.io/zone`` one of moon-1..3. Upstream picks each node's value at
    random; here a fixed pseudo-random pick per node index (reproducible)."""
    node = node_default(i)
    zone = random.Random(i).randrange(3) + 1
    node["metadata"]["labels"][ZONE_KEY] = f"moon-{zone}"
    return node


def pod_default(
    i: int,
    namespace: str = "sched-0",
    prefix: str = "pod",
    *,
    cpu: str = "100m",
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": "500Mi"}
    metadata: dict[str, Any] = {"name": f"{prefix}-{i}", "namespace": namespace, "uid": f"{prefix}-{namespace}-{i}"}
    if labels:
        metadata["labels"] = dict(labels)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            **spec,
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


def pod_with_topology_spreading(i: int, namespace: str = "sched-1") -> dict[str, Any]:
    """``pod-with-topology-spreading.yaml``: label color=blue, maxSkew 5 over zones, DoNotSchedule."""
    return pod_default(
        i,
        namespace,
        prefix="spreading-pod",
        labels={"color": "blue"},
        topologySpreadConstraints=[
            {
                "maxSkew": 5,
                "topologyKey": ZONE_KEY,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"color": "blue"}},
            }
        ],
    )


def pod_with_pod_anti_affinity(i: int, namespace: str) -> dict[str, Any]:
    """``pod-with-pod-anti-affinity.yaml``: label color=green, required anti-affinity to
    color=green on ``kubernetes.io/hostname`` over namespaces sched-1 and sched-0."""
    term = {
        "labelSelector": {"matchLabels": {"color": "green"}},
        "topologyKey": "kubernetes.io/hostname",
        "namespaces": ["sched-1", "sched-0"],
    }
    return pod_default(
        i,
        namespace,
        prefix="anti-affinity-pod",
        labels={"color": "green"},
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    )


def pod_low_priority(i: int) -> dict[str, Any]:
    """``pod-low-priority.yaml``: 900m CPU, no priority (0), terminationGracePeriodSeconds 0."""
    return pod_default(i, "sched-0", prefix="low", cpu="900m", terminationGracePeriodSeconds=0)


def pod_high_priority(i: int) -> dict[str, Any]:
    """``pod-high-priority.yaml``: 3000m CPU, priority 10."""
    return pod_default(i, "sched-1", prefix="high", cpu="3000m", priority=10)


DRA_DRIVER = "test-driver.cdi.k8s.io"
DRA_MAX_CLAIMS_PER_NODE = 10


def node_with_dra(i: int) -> dict[str, Any]:
    node = node_default(i)
    name = f"scheduler-perf-dra-{i}"
    node["metadata"] = {"name": name, "labels": {"kubernetes.io/hostname": name, "node-with-dra": "true"}}
    return node


def dra_slice(node_name: str, capacity: int = DRA_MAX_CLAIMS_PER_NODE, driver: str = DRA_DRIVER) -> dict[str, Any]:
    """``dra.go`` ``resourceSlice``: one pool per node, ``capacity`` devices (also the
    scheduler_perf interpreter's, ``bench.scheduler_perf.inprocess``)."""
    devices = [
        {
            "name": f"instance-{i}",
            "attributes": {
                "model": {"string": "A100"},
                "family": {"string": "GPU"},
                "driverVersion": {"version": "1.2.3"},
                "dra.example.com/numa": {"int": i},
            },
            "capacity": {"memory": {"value": "1Gi"}},
        }
        for i in range(capacity)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": node_name},
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": {"name": node_name, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def dra_objects(nodes: int) -> dict[str, list[dict[str, Any]]]:
    """The DeviceClass, a ResourceClaimTemplate per namespace, and a slice per node."""

    def template(namespace: str) -> dict[str, Any]:
        request = {"name": "req-0", "exactly": {"deviceClassName": "test-class"}}
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "test-claim-template", "namespace": namespace},
            "spec": {"spec": {"devices": {"requests": [request]}}},
        }

    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "test-class"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}]},
    }
    return {
        "DeviceClass": [device_class],
        "ResourceClaimTemplate": [template("init"), template("test")],
        "ResourceSlice": [dra_slice(node_with_dra(i)["metadata"]["name"]) for i in range(nodes)],
    }


def pod_with_claim_template(i: int, namespace: str) -> dict[str, Any]:
    """``pod-with-claim-template.yaml``: a pause container using the claim of the template."""
    pod = pod_default(i, namespace, prefix="test-dra")
    spec = pod["spec"]
    spec["containers"] = [{"name": "pause", "image": "registry.k8s.io/pause:3.10.1",
                           "resources": {"claims": [{"name": "resource"}]}}]  # fmt: skip
    spec["resourceClaims"] = [{"name": "resource", "resourceClaimTemplateName": "test-claim-template"}]
    return pod


EXTENDED_CLASSES = 25


def dra_extended_objects(nodes: int) -> dict[str, list[dict[str, Any]]]:
    """``dra/templates/deviceclass-extended-resource.yaml`` (``test-class-<i>`` backing
    ``example.com/gpu-<i>``, 25 of them) and a slice per node."""
    classes = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": f"test-class-{i}"},
            "spec": {
                "selectors": [{"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}],
                "extendedResourceName": f"example.com/gpu-{i}",
            },
        }
        for i in range(EXTENDED_CLASSES)
    ]
    return {
        "DeviceClass": classes,
        "ResourceSlice": [dra_slice(node_with_dra(i)["metadata"]["name"]) for i in range(nodes)],
    }


def pod_with_extended_resource(i: int, namespace: str) -> dict[str, Any]:
    """``pod-with-extended-resource-mod25.yaml``: one ``example.com/gpu-<i mod 25>``."""
    pod = pod_default(i, namespace, prefix="test-dra")
    gpu = {f"example.com/gpu-{i % EXTENDED_CLASSES}": "1"}
    spec = pod["spec"]
    spec["containers"] = [{"name": "pause", "image": "registry.k8s.io/pause:3.9",
                           "resources": {"requests": gpu, "limits": gpu}}]  # fmt: skip
    return pod


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    node: Callable[[int], dict[str, Any]]
    init_pod: Callable[[int], dict[str, Any]]
    measure_pod: Callable[[int], dict[str, Any]]
    default_init_pods: int
    # upstream scheduler_perf's pods/s threshold for the variant in ``upstream``
    # (its performance-config.yaml); None where upstream sets none
    upstream_threshold: float | None
    default_nodes: int = 5000
    default_pods: int = 10000
    # upstream variant whose params are the defaults, e.g. "SchedulingBasic/5000Nodes_10000Pods"
    upstream: str = ""
    # other objects of the cluster, by kind, for a number of nodes (DRA: slices, classes, templates)
    objects: Callable[[int], dict[str, list[dict[str, Any]]]] | None = None


# Thresholds and params are those of the pinned k8s.io/kubernetes v1.36.3,
# test/integration/scheduler_perf/<dir>/performance-config.yaml (checked against the module cache).
WORKLOADS: dict[str, Workload] = {
    # misc/performance-config.yaml: SchedulingBasic/5000Nodes_10000Pods, threshold 270
    "SchedulingBasic": Workload(
        name="SchedulingBasic",
        node=node_default,
        init_pod=lambda i: pod_default(i, prefix="init"),
        measure_pod=pod_default,
        default_init_pods=1000,
        upstream_threshold=270.0,
        upstream="SchedulingBasic/5000Nodes_10000Pods",
    ),
    # topology_spreading/performance-config.yaml: TopologySpreading/5000Nodes_5000Pods, threshold 85
    "TopologySpreading": Workload(
        name="TopologySpreading",
        node=node_with_zone,
        init_pod=lambda i: pod_default(i, prefix="init"),
        measure_pod=pod_with_topology_spreading,
        default_nodes=5000,
        default_init_pods=5000,
        default_pods=5000,
        upstream_threshold=85.0,
        upstream="TopologySpreading/5000Nodes_5000Pods",
    ),
    # affinity/performance-config.yaml: SchedulingPodAntiAffinity/5000Nodes_2000Pods, threshold 60
    # (init pods in sched-0, measured in sched-1)
    "SchedulingPodAntiAffinity": Workload(
        name="SchedulingPodAntiAffinity",
        node=node_default,
        init_pod=lambda i: pod_with_pod_anti_affinity(i, "sched-0"),
        measure_pod=lambda i: pod_with_pod_anti_affinity(i, "sched-1"),
        default_nodes=5000,
        default_init_pods=1000,
        default_pods=2000,
        upstream_threshold=60.0,
        upstream="SchedulingPodAntiAffinity/5000Nodes_2000Pods",
    ),
    # misc/performance-config.yaml (PreemptionBasic): 4 low-priority pods (3.6 CPU) fill each
    # 4-CPU node; each measured pod (3 CPU, priority 10) must preempt 3 of them. Upstream's
    # largest variant is 1000Nodes (its 5000Nodes one is commented out, issue #108308) and
    # has no threshold.
    "PreemptionBasic": Workload(
        name="PreemptionBasic",
        node=node_default,
        init_pod=pod_low_priority,
        measure_pod=pod_high_priority,
        default_nodes=1000,
        default_init_pods=4000,
        default_pods=1000,
        upstream_threshold=None,
        upstream="PreemptionBasic/1000Nodes",
    ),
    # dra/performance-config.yaml: SchedulingWithResourceClaimTemplate/
    # 5000pods_500nodes_QueueingHintsEnabled (500 DRA nodes, 10 devices each, 2500 init and
    # 2500 measured pods), threshold 56 (the variant with queueing hints off: 40).
    "SchedulingWithResourceClaimTemplate": Workload(
        name="SchedulingWithResourceClaimTemplate",
        node=node_with_dra,
        init_pod=lambda i: pod_with_claim_template(i, "init"),
        measure_pod=lambda i: pod_with_claim_template(i, "test"),
        default_nodes=500,
        default_init_pods=2500,
        default_pods=2500,
        upstream_threshold=56.0,
        upstream="SchedulingWithResourceClaimTemplate/5000pods_500nodes_QueueingHintsEnabled",
        objects=dra_objects,
    ),
    # dra/extendedresource/performance-config.yaml: ExtendedResource_25Classes/5000pods_500nodes
    # (500 DRA nodes, 10 devices each, 25 classes backing example.com/gpu-0..24, 2500 init and
    # 2500 measured pods each asking one); upstream sets no threshold.
    "ExtendedResource_25Classes": Workload(
        name="ExtendedResource_25Classes",
        node=node_with_dra,
        init_pod=lambda i: pod_with_extended_resource(i, "init"),
        measure_pod=lambda i: pod_with_extended_resource(i, "test"),
        default_nodes=500,
        default_init_pods=2500,
        default_pods=2500,
        upstream_threshold=None,
        upstream="ExtendedResource_25Classes/5000pods_500nodes",
        objects=dra_extended_objects,
    ),
}
