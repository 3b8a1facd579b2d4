#!/usr/bin/env python3
"""Throughput of ``crd-scheduler extender serve``: requests/s and latency at N nodes.

    python bench/extender_serve.py --nodes 500 --requests 2000 --concurrency 8 --json

The server runs in a child process (as it would beside kube-scheduler), with the default
profile's plugins over a cache of ``--nodes`` nodes (``bench.workloads.node_default``) and a few
pods per node; the parent sends the calls kube-scheduler makes for each pod, in its order:
``filter`` then ``prioritize`` with every node, by name (``nodeCacheCapable: true``, the mode the
cache exists for), or with ``--full-nodes`` as whole Node objects. Latency is from sending a
request to reading its answer; ``--concurrency`` requests are in flight at once (kube-scheduler
sends one filter per scheduling cycle, so 1 is its pace; more measures the server's headroom).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.run import percentile
from bench.workloads import node_default, pod_default

PODS_PER_NODE = 4


def _serve(nodes: int, port_out: Any) -> None:
    """The child: an ExtenderService with the default profile, served on a free loopback port."""
    from aiohttp import web

    from scheduler_core.defaults import default_plugins, default_profile_spec
    from scheduler_core.extender.service import ExtenderService
    from scheduler_core.runtime.registry import default_registry
    from scheduler_core.simulator.backend import InMemoryCluster
    from scheduler_operator.control.extender_server import make_app

    async def main() -> None:
        registry = default_registry()
        service = ExtenderService(default_profile_spec(), registry, default_plugins(registry), api=InMemoryCluster())
        for i in range(nodes):
            node = node_default(i)
            service.on_node("ADDED", node)
            for j in range(PODS_PER_NODE):
                pod = pod_default(i * PODS_PER_NODE + j, namespace="bench")
                pod["spec"]["nodeName"] = node["metadata"]["name"]
                service.on_pod("ADDED", pod)
        runner = web.AppRunner(make_app(service), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        sockets: Any = getattr(site._server, "sockets", None) or ()
        port_out.put(int(sockets[0].getsockname()[1]))
        await asyncio.Event().wait()

    asyncio.run(main())


async def _drive(port: int, nodes: int, requests: int, concurrency: int, full_nodes: bool) -> dict[str, Any]:
    import aiohttp

    names = [node_default(i)["metadata"]["name"] for i in range(nodes)]
    node_objects = [node_default(i) for i in range(nodes)]
    latencies: dict[str, list[float]] = {"filter": [], "prioritize": []}
    statuses: dict[int, int] = {}
    counter = iter(range(requests))

    def args(i: int) -> bytes:
        pod = pod_default(1_000_000 + i, namespace="bench")
        if full_nodes:
            return json.dumps(
                {"Pod": pod, "Nodes": {"metadata": {}, "items": node_objects}, "NodeNames": None}
            ).encode()
        return json.dumps({"Pod": pod, "Nodes": None, "NodeNames": names}).encode()

    async def worker(session: aiohttp.ClientSession) -> None:
        for i in counter:
            body = args(i)
            for verb in ("filter", "prioritize"):
                started = time.perf_counter()
                async with session.post(f"http://127.0.0.1:{port}/{verb}", data=body) as resp:
                    await resp.read()
                    statuses[resp.status] = statuses.get(resp.status, 0) + 1
                latencies[verb].append(time.perf_counter() - started)

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        warm = args(-1)
        for verb in ("filter", "prioritize"):  # the first call builds the snapshot's columns
            async with session.post(f"http://127.0.0.1:{port}/{verb}", data=warm) as resp:
                await resp.read()
        started = time.perf_counter()
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    result: dict[str, Any] = {
        "nodes": nodes,
        "requests": 2 * requests,
        "concurrency": concurrency,
        "mode": "full-nodes" if full_nodes else "node-names",
        "seconds": round(elapsed, 3),
        "requests_per_second": round(2 * requests / elapsed, 1),
        "http_statuses": statuses,
    }
    for verb, values in latencies.items():
        values.sort()
        result[verb] = {
            "p50_ms": round(percentile(values, 0.50) * 1000, 2),
            "p99_ms": round(percentile(values, 0.99) * 1000, 2),
        }
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--requests", type=int, default=1000, help="pods; each makes a filter and a prioritize call")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--full-nodes", action="store_true", help="send Node objects instead of names")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    ports: Any = multiprocessing.Queue()
    server = multiprocessing.Process(target=_serve, args=(args.nodes, ports), daemon=True)
    server.start()
    try:
        port = ports.get(timeout=120)
        result = asyncio.run(_drive(port, args.nodes, args.requests, args.concurrency, args.full_nodes))
    finally:
        server.terminate()
        server.join(10)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{result['requests']} requests at {args.nodes} nodes ({result['mode']}, concurrency "
            f"{args.concurrency}): {result['requests_per_second']} requests/s; "
            f"filter p50 {result['filter']['p50_ms']} ms p99 {result['filter']['p99_ms']} ms; "
            f"prioritize p50 {result['prioritize']['p50_ms']} ms p99 {result['prioritize']['p99_ms']} ms"
        )
    return 0 if set(result["http_statuses"]) == {200} else 1


if __name__ == "__main__":
    sys.exit(main())
