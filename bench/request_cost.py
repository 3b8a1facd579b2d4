"""What one write costs the API server in CPU, by how it is asked (issue 25, the `fast` DRA cases).

    python -m bench.request_cost                      # 300 patches a mode, medians of 5 rounds
    python -m bench.request_cost --requests 500 --rounds 7

kube-scheduler speaks protobuf to the API server, the operator JSON. Whether that costs the API
server more per write is measured here on the dev cluster's API server, with the operator's own
HTTP/2 pool (``http2.Pool``, the operator's credentials): the binding cycle's commonest write, a
strategic merge patch of a pod's ``status.nominatedNodeName``, ten in flight at a time (each to a
pod of its own: patches of one pod would retry on each other's conflicts in the server), asked

- ``json``: as the operator asks (JSON answer, the server's default field validation, Warn);
- ``ignore``: with ``fieldValidation=Ignore`` (no strict decoding of what we send);
- ``protobuf-answer``: with ``Accept: application/vnd.kubernetes.protobuf`` (the answer
  encoded as kube-scheduler gets it; a patch's body is JSON either way);
- ``both``.

It prints, per mode, the API server's CPU and this process's per request (``/proc``,
``bench.cluster.process_cpu``; the modes alternate round by round, so a drift of the machine
touches all). The API server's background work counts too: run it on an otherwise idle dev cluster.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from typing import Any

from bench.cluster import cpu_seconds_between, dev_cluster_pids, process_cpu
from bench.connections import rounds_cli
from scheduler_operator.io import http2, kube
from scheduler_operator.io.transport import Credentials

JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"
MODES = {  # name: (query, Accept)
    "json": ("", JSON),
    "ignore": ("?fieldValidation=Ignore", JSON),
    "protobuf-answer": ("", f"{PROTOBUF},{JSON}"),
    "both": ("?fieldValidation=Ignore", f"{PROTOBUF},{JSON}"),
}
IN_FLIGHT = 10
NAMESPACE = "bench-request-cost"


async def _call(pool: http2.Pool, method: str, path: str, headers: dict[str, str], body: Any = None) -> str:
    """The answer's Content-Type; an error answer ends the run (a namespace made before is fine)."""
    answer = await pool.request(method, path, headers, json.dumps(body).encode() if body is not None else None)
    if answer.status >= 300 and not (method == "POST" and answer.status == 409):
        raise SystemExit(f"{method} {path}: {answer.status} {answer.reason}: {answer.body[:300]!r}")
    return answer.headers.get("Content-Type", "")


async def measure(kubeconfig: str, requests: int, rounds: int) -> dict[str, Any]:
    credentials = Credentials.load(kube.KubeconfigSource(path=kubeconfig))
    if credentials.http2 is None:
        raise SystemExit("the dev cluster's kubeconfig gave no HTTP/2 context (DISABLE_HTTP2 set?)")
    api_pid = dev_cluster_pids()["kube-apiserver"]
    pool = http2.Pool(credentials.server, credentials.http2, connect_timeout=10, read_timeout=10)
    plain = {"Content-Type": JSON, "Accept": JSON, "User-Agent": "bench-request-cost"}
    pods = f"/api/v1/namespaces/{NAMESPACE}/pods"
    targets = [f"target-{i}" for i in range(IN_FLIGHT)]
    spec = {"schedulerName": "nobody", "containers": [{"name": "c", "image": "pause"}]}
    runs: dict[str, list[tuple[float, float]]] = {mode: [] for mode in MODES}
    answered: dict[str, set[str]] = {mode: set() for mode in MODES}  # the answers' Content-Types
    try:
        await _call(pool, "POST", "/api/v1/namespaces", plain, {"metadata": {"name": NAMESPACE}})
        for name in targets:
            await _call(pool, "POST", pods, plain, {"metadata": {"name": name}, "spec": spec})
        for round_ in range(rounds):
            for mode, (query, accept) in MODES.items():
                headers = {**plain, "Accept": accept, "Content-Type": "application/strategic-merge-patch+json"}
                server, client = process_cpu(api_pid), time.process_time()
                for first in range(0, requests, IN_FLIGHT):
                    calls = (
                        _call(pool, "PATCH", f"{pods}/{targets[i % IN_FLIGHT]}/status{query}", headers,
                              {"status": {"nominatedNodeName": f"node-{round_}-{mode}-{i}"}})
                        for i in range(first, min(first + IN_FLIGHT, requests))
                    )  # fmt: skip
                    answered[mode].update(await asyncio.gather(*calls))
                client = time.process_time() - client
                runs[mode].append((cpu_seconds_between(server, process_cpu(api_pid)) / requests, client / requests))
    finally:
        await pool.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}", plain, None)
        await pool.close()
    return {
        "requests": requests, "rounds": rounds, "in_flight": IN_FLIGHT,
        **{
            mode: {
                "apiserver_ms": round(statistics.median(r[0] for r in runs[mode]) * 1000, 3),
                "client_ms": round(statistics.median(r[1] for r in runs[mode]) * 1000, 3),
                "answered": sorted(answered[mode]),
            }
            for mode in MODES
        },
    }  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    rounds_cli(__doc__, measure, "patches", argv)


if __name__ == "__main__":
    main()
