"""Small step language for cache tests, and the checks every step must pass.

A test is a table of steps such as ``("assume", "p", "n1")``; :func:`run` applies one step
to a cache. :func:`check_consistent` recomputes, from scratch, what the cache keeps
incrementally: each NodeInfo's aggregates from its pods, and each columns row from its
NodeInfo.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scheduler_core.cache import Cache, Snapshot
from scheduler_core.clock import FakeClock
from scheduler_core.framework import NodeInfo, PodInfo, Resource
from tests import wrappers

Step = tuple[Any, ...]

REQUIRED_AFFINITY = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
        ]
    }
}
REQUIRED_ANTI_AFFINITY = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
        ]
    }
}
PREFERRED_ANTI_AFFINITY = {
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 10,
                "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"},
            }
        ]
    }
}

# The pods the tables use, by name: their requests and (anti-)affinity.
POD_SPECS: dict[str, dict[str, Any]] = {
    "p": {"cpu": "500m", "memory": "1Gi"},
    "q": {},  # no requests: counts 100m / 200Mi towards the non-zero aggregates
    "g": {"requests": {"cpu": "1", "example.com/gpu": "2"}, "host_ports": [8080]},
    "a": {"cpu": "100m", "affinity": REQUIRED_AFFINITY},
    "x": {"cpu": "100m", "affinity": REQUIRED_ANTI_AFFINITY},
    "s": {"cpu": "100m", "affinity": PREFERRED_ANTI_AFFINITY},
}


def pod_spec(name: str, **overrides: Any) -> dict[str, Any]:
    """The kit's keywords for pod ``name``: UID ``uid-<name>`` and the spec of
    :data:`POD_SPECS` for its name without trailing digits (``a2`` is another ``a``)."""
    return {"uid": f"uid-{name}", **POD_SPECS.get(name.rstrip("0123456789"), {}), **overrides}


def zone_labels(zone: str) -> dict[str, str]:
    """``"r1/z1"`` -> region r1 and zone z1 labels; ``""`` -> none."""
    if not zone:
        return {}
    region, _, zone_name = zone.partition("/")
    labels = {"topology.kubernetes.io/region": region} if region else {}
    if zone_name:
        labels["topology.kubernetes.io/zone"] = zone_name
    return labels


def new_cache(*nodes: str) -> tuple[Cache, FakeClock]:
    clock = FakeClock()
    cache = Cache()
    for name in nodes:
        cache.add_node(wrappers.node(name))
    return cache, clock


def run(cache: Cache, clock: FakeClock, step: Step) -> None:
    """Apply one step. Pods are named as in :data:`POD_SPECS`."""
    op, *args = step
    if op in ("node+", "node~"):
        name = args[0]
        zone = args[1] if len(args) > 1 else ""
        cpu = args[2] if len(args) > 2 else "4"
        node = wrappers.node(name, cpu=cpu, labels=zone_labels(zone))
        if op == "node+":
            cache.add_node(node)
        else:
            old = cache.get_node(name)
            cache.update_node(old.node if old else None, node)
    elif op == "node-":
        cache.remove_node(args[0])
    elif op == "assume":
        cache.assume_pod(wrappers.pod_info(args[0], **pod_spec(args[0])).with_node(args[1]))
    elif op == "forget":
        cache.forget_pod(wrappers.pod_info(args[0], node_name=args[1], **pod_spec(args[0])))
    elif op == "add":
        cache.add_pod(wrappers.pod_info(args[0], node_name=args[1], **pod_spec(args[0])))
    elif op == "remove":
        cache.remove_pod(wrappers.pod_info(args[0], node_name=args[1], **pod_spec(args[0])))
    elif op == "update":
        name, node_name, cpu = args
        cache.update_pod(
            wrappers.pod_info(name, node_name=node_name, **pod_spec(name)),
            wrappers.pod_info(name, node_name=node_name, **pod_spec(name, cpu=cpu)),
        )
    elif op == "tick":
        clock.advance(args[0])
    else:
        raise AssertionError(f"unknown step {step}")


def pod_sum(pods: list[PodInfo]) -> tuple[Resource, int, int]:
    total = Resource()
    for p in pods:
        total.add(p.requests)
    return total, sum(p.non_zero_cpu for p in pods), sum(p.non_zero_memory for p in pods)


def check_aggregates(info: NodeInfo) -> None:
    """The NodeInfo's incremental aggregates equal a recomputation from its pods."""
    requested, nz_cpu, nz_memory = pod_sum(info.pods)
    assert info.requested.milli_cpu == requested.milli_cpu
    assert info.requested.memory == requested.memory
    assert info.requested.ephemeral_storage == requested.ephemeral_storage
    assert {k: v for k, v in info.requested.scalar_resources.items() if v} == {
        k: v for k, v in requested.scalar_resources.items() if v
    }
    assert (info.non_zero_requested.milli_cpu, info.non_zero_requested.memory) == (nz_cpu, nz_memory)
    ports: dict[Any, int] = {}
    for p in info.pods:
        for port in p.host_ports:
            ports[port] = ports.get(port, 0) + 1
    assert info.used_ports == ports


def check_columns(snapshot: Snapshot) -> None:
    """Every columns row equals the fields of its NodeInfo (a fresh recomputation)."""
    cols = snapshot.columns
    infos = list(snapshot.list())
    assert cols.infos == infos
    assert cols.names == [i.name for i in infos]
    assert cols.size == len(infos) == len(snapshot)
    for row, info in enumerate(infos):
        assert info.columns is cols
        assert info.row == row

    def expect(values: list[int]) -> Any:
        return np.array(values, dtype=np.int64)

    np.testing.assert_array_equal(cols.alloc_cpu, expect([i.allocatable.milli_cpu for i in infos]))
    np.testing.assert_array_equal(cols.alloc_memory, expect([i.allocatable.memory for i in infos]))
    np.testing.assert_array_equal(cols.alloc_ephemeral, expect([i.allocatable.ephemeral_storage for i in infos]))
    np.testing.assert_array_equal(cols.alloc_pods, expect([i.allocatable.allowed_pod_number for i in infos]))
    np.testing.assert_array_equal(cols.req_cpu, expect([i.requested.milli_cpu for i in infos]))
    np.testing.assert_array_equal(cols.req_memory, expect([i.requested.memory for i in infos]))
    np.testing.assert_array_equal(cols.req_ephemeral, expect([i.requested.ephemeral_storage for i in infos]))
    np.testing.assert_array_equal(cols.pod_count, expect([len(i.pods) for i in infos]))
    np.testing.assert_array_equal(cols.nz_cpu, expect([i.non_zero_requested.milli_cpu for i in infos]))
    np.testing.assert_array_equal(cols.nz_memory, expect([i.non_zero_requested.memory for i in infos]))
    np.testing.assert_array_equal(cols.unschedulable, np.array([i.unschedulable for i in infos], dtype=np.bool_))
    scalars = {n for i in infos for n in (*i.allocatable.scalar_resources, *i.requested.scalar_resources)}
    for name in scalars:
        np.testing.assert_array_equal(
            cols.allocatable(name), expect([i.allocatable.scalar_resources.get(name, 0) for i in infos])
        )
        np.testing.assert_array_equal(
            cols.requested(name), expect([i.requested.scalar_resources.get(name, 0) for i in infos])
        )


def check_consistent(cache: Cache, snapshot: Snapshot) -> None:
    check_columns(snapshot)
    for info in snapshot.list():
        check_aggregates(info)
    assert list(snapshot.have_pods_with_affinity()) == [
        i for i in snapshot.list() if any(p.has_affinity for p in i.pods)
    ]
    assert list(snapshot.have_pods_with_required_anti_affinity()) == [
        i for i in snapshot.list() if any(p.has_required_anti_affinity for p in i.pods)
    ]
