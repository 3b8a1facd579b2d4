#!/usr/bin/env python3
"""Gang benchmark: many PodGroups placed all or nothing, in-process over the in-memory cluster.

    python bench/gangs.py --nodes 500 --gangs 100 --gang-size 10 --json
    python bench/gangs.py --api gangscheduling ...   # upstream's v1alpha2 PodGroup instead

After scheduler-plugins' coscheduling integration and performance tests (gangs of pods with a
PodGroup each, scheduled by a profile with Coscheduling's QueueSort, PreFilter, PostFilter,
Permit and Reserve): upstream's node template (``node-default.yaml``: 4 CPU, 32Gi, 110 pods)
and pod template (``pod-default.yaml``: 100m CPU, 500Mi) from ``bench/workloads.py``; every
gang's pods are created at once, gang after gang, then scheduled until idle.

Reports pods/s (bound pods over the time from the first attempt to the last binding), the time
to full placement of each gang (its first member's first attempt to its last member's binding:
p50, p99, max), and checks all or nothing: a gang with some but not all members bound fails
the run. Times are the wall clock of the scheduling work; Permit waits pass on the fake clock.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.run import in_memory_scheduler, percentile
from bench.workloads import node_default, pod_default
from scheduler_core.clock import FakeClock
from scheduler_core.config import SchedulerProfileSpec
from scheduler_core.framework import PodInfo, QueuedPodInfo
from scheduler_core.profiles import ProfileKey
from scheduler_core.simulator.backend import InMemoryCluster
from scheduler_core.simulator.run import POD_ARRIVAL_INTERVAL

NAMESPACE = "gangs"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
APIS = ("coscheduling", "gangscheduling")


def profile(api: str) -> SchedulerProfileSpec:
    plugins: dict[str, Any] = {"multiPoint": {"enabled": [{"name": "GangScheduling"}]}}
    if api == "coscheduling":
        plugins = {
            "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
            "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
        }
    return SchedulerProfileSpec.model_validate({"schedulerName": "crd-scheduler", "plugins": plugins})


def pod_group(api: str, g: int, size: int) -> tuple[str, dict[str, Any]]:
    meta = {
        "name": f"gang-{g}",
        "namespace": NAMESPACE,
        "creationTimestamp": f"2026-01-01T00:{g // 60:02d}:{g % 60:02d}Z",
    }
    if api == "coscheduling":
        spec: dict[str, Any] = {"minMember": size}
        return "scheduling.x-k8s.io/PodGroup", {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": meta,
            "spec": spec,
        }
    spec = {"schedulingPolicy": {"gang": {"minCount": size}}}
    return "scheduling.k8s.io/PodGroup", {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": meta,
        "spec": spec,
    }


def member(api: str, g: int, i: int) -> dict[str, Any]:
    name = f"gang-{g}"
    if api == "coscheduling":
        return pod_default(i, NAMESPACE, name, labels={POD_GROUP_LABEL: name})
    return pod_default(i, NAMESPACE, name, schedulingGroup={"podGroupName": name})


async def run(api: str, nodes: int, gangs: int, size: int, seed: int) -> dict[str, Any]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for g in range(gangs):
        kind, obj = pod_group(api, g, size)
        groups.setdefault(kind, []).append(obj)
    cluster = InMemoryCluster(nodes=[node_default(i) for i in range(nodes)], objects=groups)
    scheduler = in_memory_scheduler(cluster, seed)
    clock = cast(FakeClock, scheduler.clock)
    scheduler.apply_profile(ProfileKey(scheduler.profiles.home_namespace, "gangs"), profile(api))
    for node in cluster.nodes.values():
        scheduler.on_node_add(node)

    first_attempt: dict[str, float] = {}  # gang -> wall time
    last_bind: dict[str, float] = {}
    schedule_one = scheduler.schedule_one
    report_scheduled = cluster.report_scheduled

    def gang_of(pod: PodInfo) -> str:
        return pod.name.rsplit("-", 1)[0]

    async def timed_schedule_one(qpi: QueuedPodInfo) -> None:
        first_attempt.setdefault(gang_of(qpi.pod_info), time.perf_counter())
        await schedule_one(qpi)

    def timed_report(pod: PodInfo, node_name: str) -> None:
        last_bind[gang_of(pod)] = time.perf_counter()
        report_scheduled(pod, node_name)

    scheduler.schedule_one = timed_schedule_one  # type: ignore[method-assign]
    cluster.report_scheduled = timed_report  # type: ignore[method-assign]
    for g in range(gangs):
        for i in range(size):
            pod = member(api, g, i)
            cluster.pods[pod["metadata"]["uid"]] = pod
            clock.advance(POD_ARRIVAL_INTERVAL)  # as simulate: equal priorities keep arrival order
            scheduler.on_pod_add(pod)
    begin = time.perf_counter()
    await scheduler.run_until_idle()
    elapsed = time.perf_counter() - begin

    bound: dict[str, int] = {}
    for stored in cluster.pods.values():
        if (stored.get("spec") or {}).get("nodeName"):
            gang = stored["metadata"]["name"].rsplit("-", 1)[0]
            bound[gang] = bound.get(gang, 0) + 1
    partial = sorted(g for g, n in bound.items() if n != size)
    placement = sorted(last_bind[g] - first_attempt[g] for g in last_bind if bound.get(g) == size)
    scheduled = scheduler.scheduled_count
    return {
        "api": api,
        "nodes": nodes,
        "gangs": gangs,
        "gang_size": size,
        "scheduled": scheduled,
        "gangs_placed": sum(1 for n in bound.values() if n == size),
        "gangs_partly_bound": partial,
        "seconds": round(elapsed, 3),
        "pods_per_second": round(scheduled / elapsed, 1) if elapsed > 0 else 0.0,
        "gang_placement_p50_ms": round(percentile(placement, 0.50) * 1000, 3),
        "gang_placement_p99_ms": round(percentile(placement, 0.99) * 1000, 3),
        "gang_placement_max_ms": round((placement[-1] if placement else 0.0) * 1000, 3),
        "all_gangs_placed_ms": round((max(last_bind.values()) - begin) * 1000, 3) if last_bind else None,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--api", choices=APIS, default="coscheduling")
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--gangs", type=int, default=100)
    parser.add_argument("--gang-size", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    result = asyncio.run(run(args.api, args.nodes, args.gangs, args.gang_size, args.seed))
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>24}: {value}")
    whole = result["scheduled"] == args.gangs * args.gang_size and not result["gangs_partly_bound"]
    return 0 if whole else 1


if __name__ == "__main__":
    sys.exit(main())
