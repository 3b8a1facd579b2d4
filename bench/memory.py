#!/usr/bin/env python3
"""The operator's memory at size on the test cluster: its RSS once every object is in its cache.

    python bench/memory.py --nodes 5000 --pods 50000

Starts (or reuses) the dev cluster of ``scripts/dev-cluster`` and creates, directly through the
API, ``--nodes`` Nodes (as ``bench/cluster.py``), ``--pods`` pods already bound to them
(``spec.nodeName`` set at creation: the scheduler holds them in its cache as assigned pods)
and ``--pending`` pods for the operator that no node fits (a nodeSelector nothing has: the
scheduler holds them in its unschedulable queue). The pods look like a Deployment's: labels,
an owner reference, two containers with env, command, probes and mounts, and the server's
managedFields. Then it starts ``python -m scheduler_operator run``, waits until it has synced
its caches and has tried every pending pod once (``--settle`` seconds more), and reads the
process's ``VmRSS`` and ``VmHWM`` (peak) from ``/proc``.

Prints one JSON object: ``rss_mib``, ``peak_rss_mib``, ``sync_seconds`` (from start to
"caches synced"), and the sizes. The nodes and namespaces are deleted at the end. Creating
50,000 pods takes a few minutes (``creation_seconds``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.cluster import ROOT, Bench, dev_cluster, process_memory_mib

SYNCED = re.compile(r"caches synced in ([0-9.]+) s")


def deployment_pod(name: str, run_id: str, index: int) -> dict[str, Any]:
    """A pod as a Deployment makes it (about 2 KiB before the server's managedFields)."""
    probe = {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10, "failureThreshold": 3}
    container = {
        "name": "app", "image": "registry.example.com/team/app:1.2.3",
        "command": ["/app", "--config=/etc/app/config.yaml", "--v=2"],
        "env": [{"name": f"SETTING_{i}", "value": f"value-{i}"} for i in range(8)],
        "ports": [{"containerPort": 8080, "name": "http"}],
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}],
        "livenessProbe": probe, "readinessProbe": probe,
    }  # fmt: skip
    sidecar = {"name": "proxy", "image": "registry.example.com/proxy:2.0", "args": ["--port=15001"]}
    return {
        "metadata": {
            "name": name,
            "labels": {"app": f"app-{index % 50}", "pod-template-hash": "5d4f8c7b9", "bench-run": run_id},
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"app-{index % 50}-5d4f8c7b9",
                "uid": "00000000-0000-0000-0000-000000000000", "controller": True,
            }],
        },
        "spec": {
            "containers": [container, sidecar],
            "volumes": [{"name": "config", "configMap": {"name": "app-config"}}],
        },
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50000, help="pods bound at creation (50000)")
    parser.add_argument("--pending", type=int, default=1000, help="pods no node fits (1000)")
    parser.add_argument("--creators", type=int, default=16, help="threads creating objects (16)")
    parser.add_argument("--settle", type=float, default=10.0, help="seconds after the sync before reading (10)")
    args = parser.parse_args()

    kubeconfig = dev_cluster("up")
    bench = Bench(kubeconfig, args.nodes, args.pods, args.creators)
    result: dict[str, Any] = {"nodes": args.nodes, "pods": args.pods, "pending": args.pending}
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        try:
            bench.install_crds()
            bench.create_nodes()
            home, scheduler_name = bench.crd_profile("memory")
            namespace = bench.namespace("memory")

            def create(i: int) -> None:
                if i < args.pods:
                    body = deployment_pod(f"bound-{i:06d}", bench.run_id, i)
                    body["spec"]["nodeName"] = bench.nodes[i % len(bench.nodes)]
                else:
                    body = deployment_pod(f"pending-{i:06d}", bench.run_id, i)
                    body["spec"].update(schedulerName=scheduler_name, nodeSelector={"no-such-label": "x"})
                bench._post(f"/api/v1/namespaces/{namespace}/pods", body)

            started = time.monotonic()
            with ThreadPoolExecutor(args.creators) as pool:
                list(pool.map(create, range(args.pods + args.pending)))
            result["creation_seconds"] = round(time.monotonic() - started, 1)

            log_path = Path(tmp) / "operator.log"
            env = {**os.environ, "KUBECONFIG": kubeconfig, "PYTHONUNBUFFERED": "1"}
            with log_path.open("w") as log:
                operator = subprocess.Popen(
                    bench.operator_argv(home), env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT
                )
                try:
                    bench._wait_log(log_path, "leading: scheduling", operator, timeout=1800)
                    synced = SYNCED.search(log_path.read_text())
                    result["sync_seconds"] = float(synced.group(1)) if synced else None
                    time.sleep(args.settle)
                    result["rss_mib"] = process_memory_mib(operator.pid, "VmRSS")
                    result["peak_rss_mib"] = process_memory_mib(operator.pid, "VmHWM")
                finally:
                    operator.send_signal(signal.SIGTERM)
                    try:
                        operator.wait(60)
                    except subprocess.TimeoutExpired:
                        operator.kill()
        finally:
            bench.cleanup()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
