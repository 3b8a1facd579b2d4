#!/usr/bin/env python3
"""Benchmark runner: the scheduler in-process over the in-memory cluster.

    python bench/run.py SchedulingBasic --nodes 5000 --pods 10000 --json

Like upstream scheduler_perf: create the nodes, schedule the init pods (not measured), then
create the measured pods and time from the first scheduling attempt to the last binding.
Latency is per pod, from its scheduling attempt to its binding. Default profile.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.workloads import WORKLOADS
from scheduler_core.clock import FakeClock
from scheduler_core.defaults import DEFAULT_PROFILE_NAME, default_plugins, default_profile_spec
from scheduler_core.framework import QueuedPodInfo
from scheduler_core.profiles import ProfileKey
from scheduler_core.runtime.registry import default_registry
from scheduler_core.scheduler import Scheduler
from scheduler_core.simulator.backend import InMemoryCluster


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


def in_memory_scheduler(cluster: InMemoryCluster, seed: int) -> Scheduler:
    """The scheduler over ``cluster`` as ``simulate`` builds it: in-tree registry, fake clock."""
    registry = default_registry()
    scheduler = Scheduler(
        cluster,
        registry=registry,
        default_multi_point=default_plugins(registry),
        clock=FakeClock(),
        rng=random.Random(seed),
    )
    cluster.watch(scheduler)
    return scheduler


async def run(
    workload_name: str,
    nodes: int,
    pods: int,
    init_pods: int,
    seed: int,
    max_attempts: int = 20,
    explain: str | None = None,
) -> dict[str, Any]:
    workload = WORKLOADS[workload_name]
    cluster = InMemoryCluster(objects=workload.objects(nodes) if workload.objects else None)
    scheduler = in_memory_scheduler(cluster, seed)
    spec = default_profile_spec().model_copy(update={"explain": explain})
    scheduler.apply_profile(ProfileKey(scheduler.profiles.home_namespace, DEFAULT_PROFILE_NAME), spec)
    for i in range(nodes):
        node = workload.node(i)
        cluster.nodes[node["metadata"]["name"]] = node
        scheduler.on_node_add(node)

    def create(pod: dict[str, Any]) -> None:
        if workload.objects is not None:  # the resourceclaim controller makes the pod's claims
            pod = cluster.add_pod(pod)
        else:
            cluster.pods[pod["metadata"]["uid"]] = pod
        scheduler.on_pod_add(pod)

    for i in range(init_pods):
        create(workload.init_pod(i))
    await scheduler.run_until_idle(max_attempts_per_pod=max_attempts)
    init_scheduled = scheduler.scheduled_count

    started: dict[str, float] = {}
    attempts: dict[str, int] = {}
    latencies: list[float] = []
    schedule_one = scheduler.schedule_one
    report_scheduled = cluster.report_scheduled

    async def timed_schedule_one(qpi: QueuedPodInfo) -> None:
        uid = qpi.pod_info.uid
        started.setdefault(uid, time.perf_counter())
        attempts[uid] = attempts.get(uid, 0) + 1
        await schedule_one(qpi)

    def timed_report(pod: Any, node_name: str) -> None:
        begin = started.get(pod.uid)
        if begin is not None:
            latencies.append(time.perf_counter() - begin)
        report_scheduled(pod, node_name)

    scheduler.schedule_one = timed_schedule_one  # type: ignore[method-assign]
    cluster.report_scheduled = timed_report  # type: ignore[method-assign]
    for i in range(pods):
        create(workload.measure_pod(i))
    evicted_before = len(cluster.deleted)
    begin = time.perf_counter()
    await scheduler.run_until_idle(max_attempts_per_pod=max_attempts)
    elapsed = time.perf_counter() - begin
    measured = scheduler.scheduled_count - init_scheduled
    latencies.sort()
    return {
        "workload": workload_name,
        "explain": explain or "Off",
        "nodes": nodes,
        "pods": pods,
        "init_pods": init_pods,
        "scheduled": measured,
        "seconds": round(elapsed, 3),
        "pods_per_second": round(measured / elapsed, 1) if elapsed > 0 else 0.0,
        "p50_ms": round(percentile(latencies, 0.50) * 1000, 3),
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 3),
        # Measured pods left unbound: given up after --max-attempts, or waiting for an event.
        "unscheduled": pods - measured,
        "attempts_max": max(attempts.values(), default=0),
        "attempts_mean": round(sum(attempts.values()) / len(attempts), 2) if attempts else 0.0,
        "evicted": len(cluster.deleted) - evicted_before,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "upstream_threshold_pods_per_second": workload.upstream_threshold,
        "upstream_workload": workload.upstream,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument("--nodes", type=int, default=None, help="default: the workload's (upstream's params)")
    parser.add_argument("--pods", type=int, default=None, help="measured pods; default: the workload's")
    parser.add_argument("--init-pods", type=int, default=None, help="pods scheduled first; default: the workload's")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--max-attempts",
        type=int,
        default=20,
        help="run_until_idle drops a pod after this many attempts (its default: 20)",
    )
    parser.add_argument(
        "--explain", choices=("Off", "Annotate"), default=None,
        help="the profile's spec.explain: Annotate computes each bound pod's explanation annotation (its cost)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    workload = WORKLOADS[args.workload]
    nodes = args.nodes if args.nodes is not None else workload.default_nodes
    pods = args.pods if args.pods is not None else workload.default_pods
    init_pods = args.init_pods if args.init_pods is not None else workload.default_init_pods
    result = asyncio.run(run(args.workload, nodes, pods, init_pods, args.seed, args.max_attempts, args.explain))
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>36}: {value}")
    return 0 if result["scheduled"] == pods else 1


if __name__ == "__main__":
    sys.exit(main())
