"""What a new connection to the API server costs, on both sides (issue 25).

    python -m bench.connections                      # 300 requests a mode, medians of 5 rounds
    python -m bench.connections --requests 500 --rounds 7

The operator speaks HTTP/1.1: one request at a time on each connection
(``scheduler_operator.io.http1``), so a burst of bindings and events with N requests in flight
opens up to N connections, each with a TLS handshake and the API server's checks of the
client certificate. kube-scheduler multiplexes its requests over HTTP/2 on one connection and
pays that once. This runs the operator's own pool (``http1.Pool`` with the operator's
credentials, ``Credentials.load``) against the dev cluster's API server, with requests one
after another:

- ``open``: every request on one open connection;
- ``new``: every request on a connection of its own (the pool's idle connection dropped after
  each), as in a burst that grows the pool;
- ``http2``: every request on the one HTTP/2 connection the operator now sends its requests on
  (``http2.Pool``, ALPN over the same credentials), the cost per request that replaced both.

It prints, per mode, the CPU per request of this process (the operator's side: the pool,
asyncio and OpenSSL) and of the API server, from ``/proc`` (``bench.cluster.process_cpu``),
and the wall time; then what a new connection adds over a request on an open one (the median
of each round's difference). The request is ``GET /version``, so that what is measured is the
connection's cost, not a handler's. The API server's own background work (controllers'
requests, lease renewals) counts too, and more of it in the longer ``new`` rounds: run it on an
otherwise idle dev cluster.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from collections.abc import Callable, Coroutine
from typing import Any

from bench.cluster import cpu_seconds_between, dev_cluster, dev_cluster_pids, process_cpu
from scheduler_operator.io import http1, http2, kube
from scheduler_operator.io.transport import Credentials

MODES = ("open", "new", "http2")
FIGURES = ("client_ms", "apiserver_ms", "wall_ms")


async def _round(pool: http1.Pool | http2.Pool, api_pid: int, mode: str, requests: int) -> dict[str, float]:
    await pool.request("GET", "/version", {})  # the first connection is not part of ``open``
    server = process_cpu(api_pid)  # first: reading /proc is not the client's cost
    client, wall = time.process_time(), time.perf_counter()
    for _ in range(requests):
        if mode == "new" and isinstance(pool, http1.Pool):
            pool.drop_idle()  # closes the last request's connection: the next opens its own
        answer = await pool.request("GET", "/version", {})
        if answer.status != 200:
            raise SystemExit(f"GET /version: {answer.status} {answer.reason}: {answer.body[:200]!r}")
    wall = time.perf_counter() - wall
    client = time.process_time() - client
    server_seconds = cpu_seconds_between(server, process_cpu(api_pid))
    return {
        "client_ms": client / requests * 1000,
        "apiserver_ms": server_seconds / requests * 1000,
        "wall_ms": wall / requests * 1000,
    }


async def measure(kubeconfig: str, requests: int, rounds: int) -> dict[str, Any]:
    credentials = Credentials.load(kube.KubeconfigSource(path=kubeconfig))
    api_pid = dev_cluster_pids()["kube-apiserver"]
    if credentials.http2 is None:
        raise SystemExit("the dev cluster's kubeconfig gave no HTTP/2 context (DISABLE_HTTP2 set?)")
    pool = http1.Pool(credentials.server, credentials.ssl, max_connections=1, connect_timeout=10, read_timeout=10)
    multiplexed = http2.Pool(credentials.server, credentials.http2, connect_timeout=10, read_timeout=10)
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    try:
        for _ in range(rounds):
            for mode in MODES:  # alternated, so that a drift of the machine touches all
                runs[mode].append(await _round(multiplexed if mode == "http2" else pool, api_pid, mode, requests))
    finally:
        await pool.close()
        await multiplexed.close()
    result: dict[str, Any] = {
        "requests": requests, "rounds": rounds, "server": credentials.server,
        "http2_connections_opened": multiplexed.opened,
    }  # fmt: skip
    for mode in MODES:
        result[mode] = {key: round(statistics.median(run[key] for run in runs[mode]), 3) for key in FIGURES}
    # The median of each round's difference: a drift of the machine between rounds cancels out.
    pairs = list(zip(runs["new"], runs["open"], strict=True))
    result["a_new_connection_adds"] = {
        key: round(statistics.median(new[key] - old[key] for new, old in pairs), 3) for key in FIGURES
    }
    return result


def rounds_cli(
    doc: str | None,
    run: Callable[[str, int, int], Coroutine[Any, Any, dict[str, Any]]],
    what: str,
    argv: list[str] | None,
) -> None:
    """The command line of a measurement in rounds on the dev cluster (this one, bench.request_cost):
    ``run(kubeconfig, requests, rounds)``'s figures and the load, as one JSON line."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=300, help=f"{what} per mode and round (300)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds; medians are printed (5)")
    args = parser.parse_args(argv)
    result = asyncio.run(run(dev_cluster("up"), args.requests, args.rounds))
    result["load"] = os.getloadavg()[0]
    print(json.dumps(result))


def main(argv: list[str] | None = None) -> None:
    rounds_cli(__doc__, measure, "requests", argv)


if __name__ == "__main__":
    main()
