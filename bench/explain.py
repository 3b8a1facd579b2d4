#!/usr/bin/env python3
"""``explain`` on a large cluster: snapshot plus one scheduling cycle, wall time.

    python bench/explain.py --nodes 5000 --pods-per-node 10           # in-process snapshot
    python bench/explain.py --kubeconfig K --pod NS/NAME [--home-namespace H]   # a live cluster

In-process, the snapshot is what the API server's list calls would return, as JSON text (nodes
of upstream's node-default.yaml, ``--pods-per-node`` bound pods each of pod-default.yaml, the
default SchedulerProfile as a live object, and one pending pod); the timed part starts from
that text: ``json.loads`` of every list, the manifest checks and defaulting (``load_lists``),
then ``explain`` (building the scheduler, feeding the cache, the cycle). With ``--kubeconfig``,
the timed part is ``crd-scheduler explain``'s own: the list calls (``snapshot.take``) and
``explain``. Prints one JSON object; the goal is under 3 s for 5,000 nodes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.workloads import node_default, pod_default  # after the path is set
from scheduler_core.simulator import load_lists
from scheduler_core.simulator.explain import explain

GOAL_SECONDS = 3.0
HOME = "crd-scheduler"


def lists(nodes: int, pods_per_node: int) -> dict[str, str]:
    """Each kind's list body as the API server sends it (items carry no kind)."""
    node_items = [node_default(i) for i in range(nodes)]
    pod_items = []
    for i in range(nodes * pods_per_node):
        pod = pod_default(i, prefix="bound")
        pod["spec"]["nodeName"] = node_items[i % nodes]["metadata"]["name"]
        pod_items.append(pod)
    pod_items.append(pod_default(0, prefix="pending"))
    profile = {
        "apiVersion": "scheduling.crd-scheduler.io/v1alpha1", "kind": "SchedulerProfile",
        "metadata": {"name": "default", "namespace": HOME}, "spec": {"schedulerName": "crd-scheduler"},
    }  # fmt: skip
    return {
        kind: json.dumps({"items": [{k: v for k, v in o.items() if k != "kind"} for o in items]})
        for kind, items in (("Node", node_items), ("Pod", pod_items), ("SchedulerProfile", [profile]))
    }


def in_process(nodes: int, pods_per_node: int) -> dict[str, Any]:
    bodies = lists(nodes, pods_per_node)
    started = time.perf_counter()
    objects = {kind: json.loads(body)["items"] for kind, body in bodies.items()}
    loaded = time.perf_counter()
    cluster = load_lists("bench", objects, home_namespace=HOME, stored=True)
    snapshot = time.perf_counter()
    explanation = explain(cluster, "sched-0", "pending-0", home_namespace=HOME)
    done = time.perf_counter()
    return {
        "mode": "in-process",
        "nodes": nodes,
        "pods": nodes * pods_per_node + 1,
        "status": explanation.report.status,
        "parse_seconds": round(loaded - started, 3),
        "snapshot_seconds": round(snapshot - loaded, 3),
        "explain_seconds": round(done - snapshot, 3),
        "seconds": round(done - started, 3),
        "goal_seconds": GOAL_SECONDS,
    }


def live(kubeconfig: str, pod: str, home: str) -> dict[str, Any]:
    from scheduler_operator.cli import snapshot

    namespace, name = pod.split("/", 1)
    started = time.perf_counter()
    cluster = asyncio.run(snapshot.take(snapshot.credentials(kubeconfig), home_namespace=home))
    taken = time.perf_counter()
    explanation = explain(cluster, namespace, name, home_namespace=home)
    done = time.perf_counter()
    return {
        "mode": "live",
        "nodes": len(cluster.nodes),
        "pods": len(cluster.pods),
        "status": explanation.report.status,
        "snapshot_seconds": round(taken - started, 3),
        "explain_seconds": round(done - taken, 3),
        "seconds": round(done - started, 3),
        "goal_seconds": GOAL_SECONDS,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods-per-node", type=int, default=10)
    parser.add_argument("--kubeconfig", default=None, help="measure against a live cluster instead")
    parser.add_argument("--pod", default=None, metavar="NS/NAME", help="with --kubeconfig: the pod to explain")
    parser.add_argument("--home-namespace", default=HOME)
    args = parser.parse_args(argv)
    if args.kubeconfig:
        if not args.pod:
            parser.error("--kubeconfig needs --pod NS/NAME")
        result = live(args.kubeconfig, args.pod, args.home_namespace)
    else:
        result = in_process(args.nodes, args.pods_per_node)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
