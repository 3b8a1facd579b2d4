"""Random scenarios from a seed: 3-12 nodes, some pods already on them, one pod to place.

``generate(seed, features)`` is deterministic: the same seed and features give the same
manifests, so a disagreement is reproduced by its seed alone. Names are derived from a prefix
(``s<seed>`` unless given) so that scenarios never share a node name on the cluster.

Nodes carry zone, hostname and custom labels (``parity.example/*``), capacity and allocatable
(a little reserved), a Ready condition and, with the features, taints, cordons, an extended
resource, ephemeral storage, a small pod count and ``status.images``. Existing pods are bound
with ``spec.nodeName`` (labels, requests, priority classes, and their own host ports, images and
pod (anti-)affinity). The pending pod names the parity scheduler and a priority class.
"""

from __future__ import annotations

import random
from collections.abc import Set
from dataclasses import dataclass, field
from typing import Any

from bench.parity_harness import dra, pods, volumes
from bench.parity_harness import vocabulary as v
from bench.parity_harness.profile import SCHEDULER_NAME

Json = dict[str, Any]
MIN_NODES, MAX_NODES = 3, 12
CPU_CAPACITY_MILLIS = (2000, 4000, 8000, 16000, 3500)
MEMORY_CAPACITY_MIB = (4096, 8192, 16384, 32768, 6000)
PENDING_POD = "pending"
FEATURE_ODDS = 0.6
ADDITIVE = frozenset({dra.PARTITIONABLE, dra.EXTENDED})  # features widening ``dra``, drawn apart


@dataclass
class Scenario:
    seed: int
    features: frozenset[str]
    namespace: str
    nodes: list[Json]
    pods: list[Json]  # bound with spec.nodeName
    pending: Json
    services: list[Json] = field(default_factory=list)
    storage: volumes.Storage = field(default_factory=volumes.Storage)
    devices: dra.Devices = field(default_factory=dra.Devices)

    @property
    def node_names(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.nodes]

    def priority_classes(self) -> list[Json]:
        return v.priority_classes()

    def manifests(self) -> list[Json]:
        """Everything to create, in creation order (cluster-scoped first, the pending pod last)."""
        return [
            *self.priority_classes(),
            *self.storage.manifests(),
            *self.devices.manifests(),
            *self.nodes,
            *self.services,
            *self.pods,
            self.pending,
        ]


def generate(seed: int, features: Set[str], *, namespace: str = "parity", prefix: str | None = None) -> Scenario:
    rng = random.Random(seed)
    # Each scenario uses a random part of the enabled features: fewer constraints at once keep
    # most pods schedulable on several nodes (so scores are compared), and single features get
    # scenarios of their own. An additive feature draws from a source of its own (so does all
    # it generates): turning it on leaves the rest of every seed's scenario as it was.
    additive = {name: dra.extra_rng(seed, name) for name in sorted(set(features) & ADDITIVE)}
    features = frozenset(f for f in sorted(set(features) - ADDITIVE) if rng.random() < FEATURE_ODDS) | {
        name for name, source in additive.items() if source.random() < FEATURE_ODDS
    }
    extras = {name: source for name, source in additive.items() if name in features}
    stem = prefix if prefix is not None else f"s{seed}"
    nodes = [_node(rng, features, f"{stem}-n{i}", _zones(rng)) for i in range(rng.randint(MIN_NODES, MAX_NODES))]
    names = [n["metadata"]["name"] for n in nodes]
    storage = volumes.generate(rng, stem, namespace, nodes) if "volumes" in features else volumes.Storage()
    devices = dra.generate(rng, stem, namespace, nodes, extras) if "dra" in features else dra.Devices()
    bound = [
        _bound_pod(rng, features, f"{stem}-p{j}", namespace, stem, rng.choice(names), storage)
        for j in range(_pod_count(rng, nodes, features))
    ]
    if "preemption" in features:
        for j, pod in enumerate(bound):
            pod["status"] = {"startTime": _start_time(j)}
    pending = _pending_pod(rng, features, namespace, stem, storage)
    if devices.templates:
        dra.use_claim(pending["spec"], devices)
    services = _services(rng, namespace, stem) if "services" in features else []
    return Scenario(seed, frozenset(features), namespace, nodes, bound, pending, services, storage, devices)


def _start_time(index: int) -> str:
    """A distinct ``status.startTime`` per existing pod: upstream counts a pod without one as
    started *now* (pkg/scheduler/util GetPodStartTime), which makes the order of equal-priority
    victims, and the choice between preemption candidates, depend on the clock."""
    return f"2026-01-01T{index // 3600:02d}:{index // 60 % 60:02d}:{index % 60:02d}Z"


def _zones(rng: random.Random) -> tuple[str, ...]:
    return v.ZONES[: rng.choice((1, 2, 3, 3))]


def _pod_count(rng: random.Random, nodes: list[Json], features: Set[str]) -> int:
    count = rng.randint(0, 2 * len(nodes))
    return 3 * count if "preemption" in features else count  # lower-priority pods filling the nodes


def _quantity_millis(millis: int) -> str:
    return f"{millis // 1000}" if millis % 1000 == 0 else f"{millis}m"


def _node(rng: random.Random, features: Set[str], name: str, zones: tuple[str, ...]) -> Json:
    labels = {v.HOSTNAME: name, "kubernetes.io/os": "linux"}
    if rng.random() < 0.92:
        labels[v.ZONE] = rng.choice(zones)
    if rng.random() < 0.7:
        labels[v.DISK] = rng.choice(v.DISKS)
    if rng.random() < 0.7:
        labels[v.TIER] = rng.choice(v.TIERS)
    if rng.random() < 0.3:
        labels[v.ACCEL] = rng.choice(v.ACCELS)
    cpu = rng.choice(CPU_CAPACITY_MILLIS)
    memory = rng.choice(MEMORY_CAPACITY_MIB)
    capacity: Json = {"cpu": _quantity_millis(cpu), "memory": f"{memory}Mi", "pods": "110"}
    allocatable: Json = {
        "cpu": _quantity_millis(cpu - rng.choice((0, 0, 100, 250))),
        "memory": f"{memory - rng.choice((0, 0, 256, 512))}Mi",
        "pods": "110",
    }
    if "pod_count" in features and rng.random() < 0.3:
        capacity["pods"] = allocatable["pods"] = str(rng.randint(1, 4))
    if "ephemeral_storage" in features and rng.random() < 0.95:
        capacity["ephemeral-storage"] = allocatable["ephemeral-storage"] = f"{rng.choice((20, 50, 100))}Gi"
    if "extended_resources" in features and rng.random() < 0.5:
        capacity[v.EXTENDED_RESOURCE] = allocatable[v.EXTENDED_RESOURCE] = str(rng.choice((1, 2, 4)))
    spec: Json = {}
    if "taints" in features and rng.random() < 0.3:
        spec["taints"] = _taints(rng)
    if "unschedulable" in features and rng.random() < 0.12:
        spec["unschedulable"] = True
    status: Json = {
        "capacity": capacity,
        "allocatable": allocatable,
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "parity scenario"}],
    }
    if "extenders" in features and rng.random() < 0.8:
        labels[v.EXTENDER_SCORE] = str(rng.randint(0, 10))
    if "images" in features and rng.random() < 0.8:
        status["images"] = [{"names": list(names), "sizeBytes": size} for _, names, size in _sample(rng, v.IMAGES)]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": status,
    }


def _sample(rng: random.Random, items: tuple[Any, ...]) -> list[Any]:
    return rng.sample(items, rng.randint(1, len(items)))


def _taints(rng: random.Random) -> list[Json]:
    taints: dict[tuple[str, str], Json] = {}
    for _ in range(rng.choice((1, 1, 2))):
        key, effect = rng.choice(v.TAINT_KEYS), rng.choice(v.TAINT_EFFECTS)
        taint: Json = {"key": key, "effect": effect}
        value = rng.choice(v.TAINT_VALUES)
        if value:
            taint["value"] = value
        taints[(key, effect)] = taint  # the API refuses two taints with the same key and effect
    return list(taints.values())


def _pod_base(rng: random.Random, features: Set[str], name: str, namespace: str, stem: str, *, scale: float) -> Json:
    own = pods.labels(rng)
    spec: Json = pods.containers(rng, features, scale=scale)
    spec["automountServiceAccountToken"] = False  # no token volume: the pod is only what we wrote
    spec["terminationGracePeriodSeconds"] = 0
    if "pod_level_resources" in features and rng.random() < 0.3:
        pods.pod_level_resources(rng, spec)
    # The scenario label keeps a Service of another scenario (still in a lagging informer) from
    # selecting this pod; no generated selector reads it otherwise.
    metadata: Json = {"name": name, "namespace": namespace, "labels": {**own, v.SCENARIO: stem}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _bound_pod(
    rng: random.Random, features: Set[str], name: str, namespace: str, stem: str, node: str, storage: volumes.Storage
) -> Json:
    # With preemption, existing pods as large as the pending one, so that nodes are often full.
    pod = _pod_base(rng, features, name, namespace, stem, scale=2.5 if "preemption" in features else 0.5)
    spec = pod["spec"]
    spec["nodeName"] = node
    if rng.random() < 0.5:
        spec["priorityClassName"] = rng.choice(v.PRIORITY_CLASSES)[0]
    if "pod_affinity" in features:
        pods.pod_affinity(rng, spec, pod["metadata"]["labels"], namespace, incoming=False)
    if "disk_conflicts" in features and rng.random() < 0.3:
        pods.inline_disks(rng, spec)
    if "volumes" in features and rng.random() < 0.5:
        volumes.use_claims(rng, spec, storage, stem, pending=False)
    return pod


def _pending_pod(rng: random.Random, features: Set[str], namespace: str, stem: str, storage: volumes.Storage) -> Json:
    pod = _pod_base(rng, features, f"{stem}-{PENDING_POD}", namespace, stem, scale=1.0)
    spec = pod["spec"]
    own = pod["metadata"]["labels"]
    spec["schedulerName"] = SCHEDULER_NAME
    spec["priorityClassName"] = rng.choice(v.PRIORITY_CLASSES)[0]
    tolerations = pods.tolerations(rng, features)
    if tolerations:
        spec["tolerations"] = tolerations
    if "node_affinity" in features:
        pods.node_affinity(rng, spec)
    if "pod_affinity" in features:
        pods.pod_affinity(rng, spec, own, namespace, incoming=True)
    if "topology_spread" in features and rng.random() < 0.6:
        spec["topologySpreadConstraints"] = pods.spread_constraints(rng, own)
    if "disk_conflicts" in features and rng.random() < 0.7:
        pods.inline_disks(rng, spec)
    if "extenders" in features:
        _extender_requests(spec)
    if "volumes" in features:
        volumes.use_claims(rng, spec, storage, stem, pending=True)
    if "preemption" in features and rng.random() < 0.8:
        spec["priorityClassName"] = v.PREEMPTOR_CLASS[0]
        # Large enough that it often fits only once lower-priority pods are gone (pod-level
        # requests, when there are, must stay above the containers': those are left alone).
        cpu, memory = rng.choice((1500, 2000, 3000, 4000)), rng.choice((1024, 2048, 4096))
        if "resources" not in spec:
            requests = spec["containers"][0].setdefault("resources", {}).setdefault("requests", {})
            requests["cpu"], requests["memory"] = f"{cpu}m", f"{memory}Mi"
    if "gates" in features and rng.random() < 0.6:
        gates = v.SCHEDULING_GATES[: rng.choice((1, 2))]
        spec["schedulingGates"] = [{"name": gate} for gate in gates]
    return pod


def _extender_requests(spec: Json) -> None:
    """The scenario extenders manage these resources (ignoredByScheduler): requesting them is
    what makes the extenders see the pod, on both sides."""
    resources = spec["containers"][0].setdefault("resources", {})
    for resource in v.EXTENDER_RESOURCES.values():
        resources.setdefault("requests", {})[resource] = "1"
        resources.setdefault("limits", {})[resource] = "1"


def _services(rng: random.Random, namespace: str, stem: str) -> list[Json]:
    chosen = rng.sample(v.APPS, rng.choice((0, 1, 1, 2)))
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": f"{stem}-{app}", "namespace": namespace},
            "spec": {"selector": {v.APP: app, v.SCENARIO: stem}, "ports": [{"port": 80}]},
        }
        for app in chosen
    ]
