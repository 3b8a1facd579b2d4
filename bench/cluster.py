#!/usr/bin/env python3
"""Side by side on the test cluster: the crd-scheduler operator against the real kube-scheduler.

    python bench/cluster.py --nodes 500 --pods 2000

Starts (or reuses) the dev cluster of ``scripts/dev-cluster``, creates ``--nodes`` Nodes (4 CPU,
16 GiB, 110 pods, labelled for the run), then for each scheduler in turn creates ``--pods``
pods (100m CPU, 128 MiB, a nodeSelector on the run's label) in a namespace of its own, as fast
as ``--creators`` threads can, and watches them until every one is bound:

* ``crd-scheduler``: ``python -m scheduler_operator run`` (admin credentials, a fresh home
  namespace with the default SchedulerProfile), leading and synced before the first pod;
* ``kube-scheduler``: ``scripts/dev-cluster kube-scheduler up --config`` with a
  KubeSchedulerConfiguration whose ``clientConnection`` qps/burst are 5000, schedulerName
  ``default-scheduler``; stopped again at the end.

Two modes (``--mode``, both by default), each bound time observed via a watch:

* ``stream``: the scheduler runs while the pods are created; throughput is
  pods / (last pod bound - first pod created). On a small machine pod creation itself can be
  the bound: ``creation_seconds`` tells.
* ``backlog``: every pod exists before the scheduler starts (the operator process, or
  kube-scheduler, is started then); throughput is pods / (last bound - scheduler start), which
  includes its start and cache sync. ``bind_span_pods_per_second`` (first to last binding)
  leaves start-up out.

For the operator the bench also reads its process (``/proc/<pid>``) once every pod is bound:
``operator_cpu_seconds`` (user + system, whole life), ``cpu_seconds_per_bound_pod`` (the CPU
it spent from the first pod created, or from its start in backlog mode, over the pods bound)
and ``peak_rss_mib`` (``VmHWM``). The operator runs with ``--kube-api-qps``/``--kube-api-burst``
equal to kube-scheduler's ``clientConnection`` here (5000). The same CPU and peak-RSS figures are
read for kube-scheduler (``scheduler_cpu_seconds`` is its whole life), and for both sides
``control_plane_cpu_seconds``: the API server's and etcd's CPU from the first pod created to the
last bound (``apiserver_cpu_seconds`` and ``etcd_cpu_seconds`` apart). On a 2-core machine
every core-second the scheduler spends is one the API server and the pod creators do not get,
which is what bounds stream mode. A CPU figure over a window is summed from each thread's run
time in nanoseconds (``/proc/<pid>/task/<tid>/schedstat``), not from the process's clock ticks:
a small window (upstream's 100 measured pods in 0.4 s) is only some 20 ticks.

Prints one JSON object with ``ratio`` = crd-scheduler / kube-scheduler per mode. The nodes and
namespaces are deleted at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes import client, config
from prometheus_client.parser import text_string_to_metric_families

from scheduler_core.names import GROUP, PROFILE_PLURAL, VERSION

ROOT = Path(__file__).resolve().parent.parent
DEV_CLUSTER = ROOT / "scripts" / "dev-cluster"
CRDS = (ROOT / "crds" / "schedulerprofiles.yaml", ROOT / "crds" / "pluginconfigs.yaml")
KUBE_SCHEDULER_QPS = 5000
TIMEOUT = 600.0
KUBE_SCHEDULER_CONFIGURATION = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "clientConnection": {"qps": KUBE_SCHEDULER_QPS, "burst": KUBE_SCHEDULER_QPS},
    "profiles": [{"schedulerName": "default-scheduler"}],
}


def dev_cluster(*args: str, whole: bool = False) -> str:
    """``scripts/dev-cluster ARGS``: the last line of its output (``whole``: all of it)."""
    done = subprocess.run([sys.executable, str(DEV_CLUSTER), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"scripts/dev-cluster {' '.join(args)} failed:\n{done.stderr}")
    if whole:
        return done.stdout
    lines = done.stdout.strip().splitlines()
    return lines[-1] if lines else ""


def dev_cluster_pids() -> dict[str, int]:
    """The pids of the dev cluster's live components (kube-scheduler too while it runs), as
    ``scripts/dev-cluster status`` checks them: the start time recorded in the pid file matches,
    so a reused pid is not taken for a component."""
    report = json.loads(dev_cluster("status", "--json", whole=True))
    return {item["name"]: int(item["pid"]) for item in report.get("processes") or () if item.get("alive")}


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (``/proc/<pid>/stat`` utime and stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class CpuReading:
    """A process's CPU at one moment: ``/proc/<pid>/stat``'s whole-process seconds (clock ticks,
    10 ms) and each live thread's run time in nanoseconds (``/proc/<pid>/task/<tid>/schedstat``)."""

    seconds: float
    threads: Mapping[int, int]


def process_cpu(pid: int) -> CpuReading:
    threads: dict[int, int] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # the thread ended
            threads[int(task.name)] = int((task / "schedstat").read_text().split()[0])
    return CpuReading(process_cpu_seconds(pid), threads)


def cpu_seconds_between(before: CpuReading, after: CpuReading) -> float:
    """The CPU a process used between two readings, to the nanosecond when every thread of the
    first is alive at the second. A thread that ended took its run time with it (the kernel adds
    it to the process's total only), so then the clock-tick figure, with its 10 ms steps: 100
    measured pods in 0.4 s are 20 ticks, one tick 0.1 ms per pod."""
    if before.threads.keys() <= after.threads.keys():
        return (sum(after.threads.values()) - sum(before.threads.values())) / 1e9
    return round(after.seconds - before.seconds, 6)  # whole ticks: 0.95 - 0.91 is 0.04, not 0.0399...


def tcp_connections(pid: int, port: int) -> frozenset[int]:
    """The socket inodes of ``pid``'s established TCP connections whose far end is ``port``
    (``/proc/<pid>/fd`` against ``/proc/<pid>/net/tcp`` and ``tcp6``, the process's own network
    namespace). A window's ``api_connections_opened`` is how many are new at its end (opened in
    the window and still open: a lower bound of those opened); each new TLS connection costs
    both sides more than many requests on an open one (``python -m bench.connections``)."""
    inodes: set[int] = set()
    with contextlib.suppress(FileNotFoundError, PermissionError):  # the process ended, or is not ours
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):  # closed meanwhile
                link = os.readlink(fd)
                if link.startswith("socket:["):
                    inodes.add(int(link[len("socket:[") : -1]))
    found: set[int] = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(FileNotFoundError):
            for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                # sl local_address rem_address st ... inode: st 01 is ESTABLISHED
                fields = line.split()
                remote_port, state, inode = int(fields[2].rsplit(":", 1)[1], 16), fields[3], int(fields[9])
                if state == "01" and remote_port == port and inode in inodes:
                    found.add(inode)
    return frozenset(found)


def process_memory_mib(pid: int, field: str) -> float:
    """A ``/proc/<pid>/status`` memory figure (``VmHWM``: peak RSS, ``VmRSS``) in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise ValueError(f"no {field} in /proc/{pid}/status")


BOUND_LINE = "scheduler_operator.control.backend: bound "


def operator_binds(log_path: Path, bound: int, wait: float = 5.0) -> int:
    """The bindings the operator's log reports, waiting up to ``wait`` seconds for ``bound`` of
    them: the watch sees a binding before the operator has read the answer and logged it, so a
    count taken the moment the last pod shows bound can miss the last few."""
    deadline = time.monotonic() + wait
    while True:
        binds = log_path.read_text().count(BOUND_LINE)
        if binds >= bound or time.monotonic() >= deadline:
            return binds
        time.sleep(0.05)


CONTROL_PLANE = ("kube-apiserver", "etcd")


def creation_seconds(created: float, last_bound: float, made: int, bound: int) -> float:
    """A window's creation time, both times from its start. The clock is read once the creator
    threads are joined, a few milliseconds after the last create was answered, so a scheduler
    can have bound all the pods before it: when every pod made is bound, the last binding seen
    is a later bound of the creation (a pod is made before it is bound)."""
    return min(created, last_bound) if bound >= made else created


def window_timing(
    first_created: float, last_created: float, origin: float, bound: Sequence[float], made: int
) -> dict[str, float]:
    """``Bench.measure``'s figures of time, all from wall-clock readings: throughput counts from
    ``origin`` (the first create in stream mode, the scheduler's start in backlog mode) to the
    last binding; ``creation_seconds`` is never later than that binding when every pod made is
    bound (:func:`creation_seconds`)."""
    last_bound, first_bound = max(bound), min(bound)
    created = creation_seconds(last_created - first_created, last_bound - first_created, made, len(bound))
    return {
        "seconds": round(last_bound - origin, 3),
        "pods_per_second": round(len(bound) / (last_bound - origin), 1),
        "creation_seconds": round(created, 3),
        "bind_span_seconds": round(last_bound - first_bound, 3),
        "bind_span_pods_per_second": round(len(bound) / max(last_bound - first_bound, 1e-3), 1),
    }


def control_plane_cpu(pids: dict[str, int]) -> dict[str, CpuReading] | None:
    """The API server's and etcd's CPU so far: what the scheduler under test competes with for
    the machine's cores, and what its requests cost the server. None when one of them is not
    known or is gone (restarted): no figure rather than a wrong one."""
    try:
        return {name: process_cpu(pids[name]) for name in CONTROL_PLANE}
    except (KeyError, OSError):
        return None


def control_plane_spent(before: dict[str, CpuReading], after: dict[str, CpuReading]) -> dict[str, float]:
    return {name: cpu_seconds_between(before[name], after[name]) for name in CONTROL_PLANE}


def process_figures(pid: int, cpu_before: CpuReading | None, bound: int, cpu_key: str) -> dict[str, Any]:
    """A scheduler process's figures, alike for both sides: its CPU (whole life, as ``cpu_key``),
    its CPU since ``cpu_before`` (None: its whole life) per pod it bound, and its peak RSS."""
    cpu = process_cpu(pid)
    spent = cpu.seconds if cpu_before is None else cpu_seconds_between(cpu_before, cpu)
    return {
        cpu_key: round(cpu.seconds, 2),
        "cpu_seconds_per_bound_pod": round(spent / max(bound, 1), 5),
        "peak_rss_mib": process_memory_mib(pid, "VmHWM"),
    }


def apiserver_requests(api: client.ApiClient, verb: str, resource: str, subresource: str = "") -> float:
    """The API server's ``apiserver_request_total`` for one verb on one resource (and
    subresource), summed over codes, groups and scopes: its own loopback requests included."""
    headers: dict[str, str] = {}
    api.update_params_for_auth(headers, [], ["BearerToken"], "/metrics", "GET", None)
    response = api.call_api("GET", f"{api.configuration.host}/metrics", header_params=headers, _request_timeout=30)
    if response.status >= 300:
        raise client.ApiException(status=response.status, reason=f"GET /metrics: {response.reason}")
    text = response.read().decode()  # type: ignore[no-untyped-call]
    lines = [line for line in text.splitlines() if line.startswith("apiserver_request_total{")]
    wanted = {"verb": verb, "resource": resource, "subresource": subresource}
    return sum(
        sample.value
        for family in text_string_to_metric_families("\n".join(lines) + "\n")
        for sample in family.samples
        if all(sample.labels.get(k, "") == v for k, v in wanted.items())
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def stop_operator(operator: subprocess.Popen[bytes]) -> None:
    """SIGTERM (it releases its lease), killed after 30 s."""
    if operator.poll() is None:
        operator.send_signal(signal.SIGTERM)
    try:
        operator.wait(30)
    except subprocess.TimeoutExpired:
        operator.kill()


class Bench:
    def __init__(self, kubeconfig: str, nodes: int, pods: int, creators: int) -> None:
        self.kubeconfig = kubeconfig
        configuration = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)  # type: ignore[no-untyped-call]
        configuration.connection_pool_maxsize = creators + 4
        self.api = client.ApiClient(configuration)
        self.api_port = urllib3.util.parse_url(configuration.host).port or 443
        self.core: Any = client.CoreV1Api(self.api)
        self.run_id = uuid.uuid4().hex[:6]
        self.label = {"bench-run": self.run_id}
        self.node_count, self.pod_count, self.creators = nodes, pods, creators
        self.nodes: list[str] = []
        self.namespaces: list[str] = []
        self.control_plane = {name: pid for name, pid in dev_cluster_pids().items() if name in CONTROL_PLANE}
        # The measured pods' bodies (pod index, schedulerName); None: this bench's own pod.
        # bench/scheduler_perf/cluster.py sets it to upstream's template of a workload.
        self.pod_body: Callable[[int, str], dict[str, Any]] | None = None
        # Pods each scheduler places before its measured ones (upstream's init pods), not
        # timed: their count and bodies (index, schedulerName), named ``i<index>``.
        self.init_count = 0
        self.init_body: Callable[[int, str], dict[str, Any]] | None = None

    def warm_connections(self) -> int:
        """Open, before a measured window, as many connections to the API server as the creators
        use at once; return how many the pool keeps open now.

        The creators' client keeps the connections it opened (``connection_pool_maxsize``). On
        the ops path each side makes its own nodes and objects one at a time, so the side that
        ran first opened its creators' connections inside its window, a TLS handshake each in
        this process and the API server, and the side after it found them open: ten pods took
        the bench 0.118-0.127 s to create on the first side against 0.063-0.070 on the second
        (2026-12-02, ``fast`` DRA cases), in a window of about 0.2 s. Every window now starts
        with the pool as the busiest batch leaves it."""
        barrier = threading.Barrier(self.creators)

        def get(_: int) -> None:
            barrier.wait(timeout=30)  # all at once: none finds another's connection idle
            self.request("GET", "/version")

        with ThreadPoolExecutor(self.creators) as pool:
            list(pool.map(get, range(self.creators)))
        return self.open_connections()

    def open_connections(self) -> int:
        """The idle connections the creators' client keeps to the API server."""
        manager = self.api.rest_client.pool_manager
        idle = 0
        for key in list(manager.pools.keys()):
            queue = manager.pools[key].pool  # None once the pool is closed
            idle += sum(connection is not None for connection in list(queue.queue)) if queue is not None else 0
        return idle

    def _post(self, path: str, body: dict[str, Any]) -> None:
        """POST, the answer not parsed (the benchmark's creators make thousands of them)."""
        self.request("POST", path, body, parse=False)

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json", *, parse: bool = True
    ) -> Any:
        """Any verb on any API path, without the generated client's per-call model validation (it
        would cost the benchmark's creators more CPU than the schedulers under test get): the
        parsed answer (None when empty, or when not ``parse``). ``content_type`` for patches
        (``application/merge-patch+json``)."""
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        deadline = time.monotonic() + 10
        while True:
            params = self.api.param_serialize(
                method, path, header_params=headers, body=body, auth_settings=["BearerToken"]
            )
            response = self.api.call_api(*params)
            data = response.read()  # type: ignore[no-untyped-call]
            # the Priority admission plugin reads PriorityClasses from its informer: one just
            # made may not be there yet ("no PriorityClass with name ... was found", 403)
            if response.status == 403 and b"no PriorityClass with name" in data and time.monotonic() < deadline:
                time.sleep(0.1)
                continue
            break
        if response.status >= 300:
            raise client.ApiException(status=response.status, reason=f"{response.reason}: {data[:500]!r}")
        return json.loads(data) if parse and data else None

    # -- setup ---------------------------------------------------------------------------------
    def install_crds(self) -> None:
        extensions: Any = client.ApiextensionsV1Api(self.api)
        for path in CRDS:
            try:
                extensions.create_custom_resource_definition(yaml.safe_load(path.read_text()))
            except client.ApiException as error:
                if error.status != 409:
                    raise

    def create_nodes(self) -> None:
        def create(i: int) -> None:
            name = f"bench-{self.run_id}-n{i:04d}"
            alloc = {"cpu": "4", "memory": "16Gi", "pods": "110"}
            labels = {"kubernetes.io/hostname": name, **self.label}
            body = {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": alloc, "capacity": alloc}}
            self._post("/api/v1/nodes", body)
            self.nodes.append(name)

        with ThreadPoolExecutor(self.creators) as pool:
            list(pool.map(create, range(self.node_count)))

    def namespace(self, stem: str) -> str:
        name = f"bench-{stem}-{self.run_id}"
        self.core.create_namespace({"metadata": {"name": name}})
        self.namespaces.append(name)
        deadline = time.monotonic() + 60
        while True:  # ServiceAccount admission refuses pods until `default` exists
            try:
                self.core.read_namespaced_service_account("default", name)
                return name
            except client.ApiException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    # -- one measured run ----------------------------------------------------------------------
    def measure(self, namespace: str, scheduler_name: str, start: Callable[[], None] | None = None) -> dict[str, Any]:
        """Create the pods and time them until bound. With ``start`` (backlog mode) the scheduler
        is started only once every pod exists, and throughput counts from its start."""
        start_rv = self.core.list_namespaced_pod(namespace).metadata.resource_version
        bound: dict[str, float] = {}
        all_bound = threading.Event()
        watcher = threading.Thread(target=self._watch, args=(namespace, start_rv, bound, all_bound), daemon=True)
        watcher.start()

        def create(i: int) -> None:
            if self.pod_body is not None:
                self._post(f"/api/v1/namespaces/{namespace}/pods", self.pod_body(i, scheduler_name))
                return
            body = {
                "metadata": {"name": f"p{i:05d}"},
                "spec": {
                    "schedulerName": scheduler_name,
                    "nodeSelector": self.label,
                    "containers": [
                        {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}
                    ],
                },
            }
            self._post(f"/api/v1/namespaces/{namespace}/pods", body)

        self.warm_connections()
        first_created = time.time()
        control_plane_before = control_plane_cpu(self.control_plane)
        with ThreadPoolExecutor(self.creators) as pool:
            list(pool.map(create, range(self.pod_count)))
        last_created = time.time()
        origin = first_created
        if start is not None:
            origin = time.time()
            start()
        finished = all_bound.wait(TIMEOUT)
        control_plane = control_plane_cpu(self.control_plane)
        result: dict[str, Any] = {"bound": len(bound), "timed_out": not finished}
        if control_plane is not None and control_plane_before is not None:
            spent = control_plane_spent(control_plane_before, control_plane)
            result["control_plane_cpu_seconds"] = round(sum(spent.values()), 2)
            result["apiserver_cpu_seconds"] = round(spent["kube-apiserver"], 2)
            result["etcd_cpu_seconds"] = round(spent["etcd"], 2)
        if bound:
            result.update(window_timing(first_created, last_created, origin, list(bound.values()), self.pod_count))
        return result

    def place_init_pods(self, namespace: str, scheduler_name: str, timeout: float = TIMEOUT) -> None:
        """Create the init pods and wait until the running scheduler has bound every one."""
        if not self.init_count or self.init_body is None:
            return
        body = self.init_body
        with ThreadPoolExecutor(self.creators) as pool:
            list(pool.map(lambda i: self._post(f"/api/v1/namespaces/{namespace}/pods", body(i, scheduler_name)),
                          range(self.init_count)))  # fmt: skip
        deadline = time.monotonic() + timeout
        while self._bound_count(namespace, "i") < self.init_count:
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"bench: {scheduler_name} did not bind the {self.init_count} init pods in {timeout:.0f} s"
                )
            time.sleep(0.5)

    def _bound_count(self, namespace: str, prefix: str) -> int:
        pods = self.core.list_namespaced_pod(namespace, field_selector="spec.nodeName!=", _preload_content=False)
        return sum(1 for p in json.loads(pods.data)["items"] if p["metadata"]["name"].startswith(prefix))

    def clear(self, namespace: str, timeout: float = 300) -> None:
        """Delete a side's pods (bound pods have no kubelet: grace 0) and wait until none is
        left, so the next side starts from the same empty nodes."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(client.ApiException, urllib3.exceptions.HTTPError):
                self.core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0, _request_timeout=300)
                if not self.core.list_namespaced_pod(namespace, limit=1).items:
                    return
            time.sleep(0.5)
        print(f"bench: pods of {namespace} still there after {timeout:.0f} s", file=sys.stderr)

    def _watch(self, namespace: str, rv: str, bound: dict[str, float], done: threading.Event) -> None:
        """Raw watch (JSON lines): the generated models would cost more than the schedulers."""
        while not done.is_set():
            response = self.core.list_namespaced_pod(
                namespace, watch=True, resource_version=rv, timeout_seconds=300,
                allow_watch_bookmarks=True, _preload_content=False,
            )  # fmt: skip
            buffer = b""
            try:
                for chunk in response.stream(65536):
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if not line:
                            continue
                        event = json.loads(line)
                        obj = event["object"]
                        if event["type"] == "ERROR":
                            # 410 Gone: the resourceVersion was compacted; list and go on from there.
                            rv = self._relist_bound(namespace, bound)
                            break
                        rv = (obj.get("metadata") or {}).get("resourceVersion", rv)
                        name = str((obj.get("metadata") or {}).get("name"))
                        if name.startswith("i"):  # an init pod: not measured
                            continue
                        if event["type"] in ("ADDED", "MODIFIED") and (obj.get("spec") or {}).get("nodeName"):
                            bound.setdefault(name, time.time())
                    if len(bound) >= self.pod_count:
                        done.set()
                        response.close()
                        return
            except urllib3.exceptions.ProtocolError as error:
                # The API server cut the stream (a watcher too slow for its buffer is closed):
                # watch again from the last resourceVersion seen, as a reflector does.
                print(f"bench: watch of {namespace} cut ({error}); watching again from {rv}", file=sys.stderr)
                response.close()
                continue
            response.release_conn()

    def _relist_bound(self, namespace: str, bound: dict[str, float]) -> str:
        """The measured pods bound by now (time of this list for those the watch missed), and
        the list's resourceVersion to watch from."""
        pods = self.core.list_namespaced_pod(namespace, _preload_content=False)
        listed = json.loads(pods.data)
        now = time.time()
        for pod in listed["items"]:
            name = str(pod["metadata"]["name"])
            if not name.startswith("i") and (pod.get("spec") or {}).get("nodeName"):
                bound.setdefault(name, now)
        return str(listed["metadata"]["resourceVersion"])

    # -- the two schedulers --------------------------------------------------------------------
    def crd_profile(self, stem: str) -> tuple[str, str]:
        """A fresh home namespace with the default SchedulerProfile: (namespace, schedulerName)."""
        home = self.namespace(f"crd-{stem}")
        scheduler_name = f"crd-scheduler-bench-{self.run_id}-{stem}"
        custom: Any = client.CustomObjectsApi(self.api)
        body = {
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "SchedulerProfile",
            "metadata": {"name": "default"}, "spec": {"schedulerName": scheduler_name},
        }  # fmt: skip
        custom.create_namespaced_custom_object(GROUP, VERSION, home, PROFILE_PLURAL, body)
        return home, scheduler_name

    def operator_argv(self, home: str) -> list[str]:
        return [
            sys.executable, "-m", "scheduler_operator", "run", "--home-namespace", home,
            "--identity", f"bench-{self.run_id}", "--liveness", f"http://127.0.0.1:{free_port()}/healthz",
            "--bind-address", "127.0.0.1", "--port", str(free_port()),
            "--kube-api-qps", str(KUBE_SCHEDULER_QPS), "--kube-api-burst", str(KUBE_SCHEDULER_QPS),
        ]  # fmt: skip

    def crd_scheduler(self, log_dir: Path, *, backlog: bool) -> dict[str, Any]:
        mode = "backlog" if backlog else "stream"
        home, scheduler_name = self.crd_profile(mode)
        log_path = log_dir / f"crd-scheduler-{mode}.log"
        log = log_path.open("w")
        argv = self.operator_argv(home)
        env = {**os.environ, "KUBECONFIG": self.kubeconfig, "PYTHONUNBUFFERED": "1"}
        operators: list[subprocess.Popen[bytes]] = []

        def start() -> None:
            operators.append(subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT))

        def stop() -> None:
            for operator in operators:
                stop_operator(operator)

        try:
            if backlog:
                if self.init_count:  # placed by a first operator, stopped before the backlog
                    start()
                    self._wait_log(log_path, "leading: scheduling", operators[-1])
                    self.place_init_pods(home, scheduler_name)
                    stop()
                result = self.measure(home, scheduler_name, start)
                cpu_before = None
            else:
                start()
                self._wait_log(log_path, "leading: scheduling", operators[-1])
                self.place_init_pods(home, scheduler_name)
                cpu_before = process_cpu(operators[-1].pid)
                result = self.measure(home, scheduler_name)
            # Its own binds, from its log: on a shared cluster another operator serving the same
            # namespace's profile could bind some. The log counts the init pods' binds too.
            binds = operator_binds(log_path, result["bound"] + self.init_count) - self.init_count
            result["bound_by_operator"] = binds
            result.update(process_figures(operators[-1].pid, cpu_before, binds, "operator_cpu_seconds"))
            return result
        finally:
            stop()
            log.close()
            self.clear(home)

    def kube_scheduler(self, log_dir: Path, *, backlog: bool) -> dict[str, Any]:
        namespace = self.namespace("kube-backlog" if backlog else "kube-stream")
        path = log_dir / "kube-scheduler.yaml"
        path.write_text(yaml.safe_dump(KUBE_SCHEDULER_CONFIGURATION))

        def start() -> None:
            dev_cluster("kube-scheduler", "up", "--config", str(path))

        try:
            if backlog:
                if self.init_count:  # placed by a first kube-scheduler, stopped before the backlog
                    start()
                    self.place_init_pods(namespace, "default-scheduler")
                    dev_cluster("kube-scheduler", "down")
                result = self.measure(namespace, "default-scheduler", start)
                pid = dev_cluster_pids().get("kube-scheduler")
                cpu_before = None
            else:
                start()
                time.sleep(3)  # its informers sync (it schedules nothing before)
                self.place_init_pods(namespace, "default-scheduler")
                pid = dev_cluster_pids().get("kube-scheduler")
                cpu_before = process_cpu(pid) if pid is not None else None
                result = self.measure(namespace, "default-scheduler")
            if pid is not None:  # the same figures as the operator's, for comparison
                with contextlib.suppress(OSError):  # it exited meanwhile: no figures
                    result.update(process_figures(pid, cpu_before, result["bound"], "scheduler_cpu_seconds"))
            return result
        finally:
            dev_cluster("kube-scheduler", "down")
            self.clear(namespace)

    @staticmethod
    def _wait_log(path: Path, text: str, process: subprocess.Popen[bytes], timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while text not in path.read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the operator did not start leading:\n{path.read_text()[-3000:]}")
            time.sleep(0.1)

    def cleanup(self) -> None:
        for namespace in self.namespaces:
            # Bound pods wait for a kubelet to confirm deletion: there is none. A collection of
            # many pods may take longer than one request: try until none is left.
            for _ in range(5):
                with contextlib.suppress(client.ApiException, urllib3.exceptions.HTTPError):
                    self.core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0, _request_timeout=300)
                with contextlib.suppress(client.ApiException, urllib3.exceptions.HTTPError):
                    if not self.core.list_namespaced_pod(namespace, limit=1).items:
                        break
            with contextlib.suppress(client.ApiException, urllib3.exceptions.HTTPError):
                self.core.delete_namespace(namespace)
        with ThreadPoolExecutor(self.creators) as pool:
            list(pool.map(self._delete_node, self.nodes))
        self._wait_gone(self.namespaces)

    def _wait_gone(self, namespaces: list[str], timeout: float = 180) -> None:
        """Wait until the namespace controller has finished with ``namespaces``: it deletes their
        Events (one per bound pod) and the rest in the background, and a next run started
        meanwhile would share the control plane's cores with that work (its crd-scheduler side
        first, as it runs first)."""
        deadline = time.monotonic() + timeout
        pending = list(namespaces)
        while pending and time.monotonic() < deadline:
            pending = [namespace for namespace in pending if self._exists(namespace)]
            if pending:
                time.sleep(0.5)
        if pending:
            print(f"bench: namespaces {', '.join(pending)} still terminating after {timeout:.0f} s", file=sys.stderr)

    def _exists(self, namespace: str) -> bool:
        try:
            self.core.read_namespace(namespace, _request_timeout=10)
        except client.ApiException as error:
            return bool(error.status != 404)
        except urllib3.exceptions.HTTPError:
            return True  # not known: ask again
        return True

    def _delete_node(self, name: str) -> None:
        with contextlib.suppress(client.ApiException):
            self.core.delete_node(name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--creators", type=int, default=16, help="threads creating objects (16)")
    parser.add_argument("--only", choices=("crd-scheduler", "kube-scheduler"), help="run one side only")
    parser.add_argument(
        "--mode", choices=("stream", "backlog", "both"), default="both",
        help="stream: the scheduler runs while pods are created (first created -> last bound); "
        "backlog: it starts once all exist (its start -> last bound); both (default)",
    )  # fmt: skip
    parser.add_argument("--log-dir", type=Path, default=None, help="keep the schedulers' logs there")
    args = parser.parse_args()

    kubeconfig = dev_cluster("up")
    bench = Bench(kubeconfig, args.nodes, args.pods, args.creators)
    result: dict[str, Any] = {"nodes": args.nodes, "pods": args.pods}
    sides = {"crd_scheduler": Bench.crd_scheduler, "kube_scheduler": Bench.kube_scheduler}
    modes = {"stream": False, "backlog": True} if args.mode == "both" else {args.mode: args.mode == "backlog"}
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp_dir:
        tmp = args.log_dir or tmp_dir
        Path(tmp).mkdir(parents=True, exist_ok=True)
        try:
            bench.install_crds()
            bench.create_nodes()
            for mode, backlog in modes.items():
                for side, run in sides.items():
                    if args.only in (None, side.replace("_", "-")):
                        result.setdefault(mode, {})[side] = run(bench, Path(tmp), backlog=backlog)
        finally:
            bench.cleanup()
    for figures in (result.get(mode) or {} for mode in modes):
        ours = (figures.get("crd_scheduler") or {}).get("pods_per_second")
        theirs = (figures.get("kube_scheduler") or {}).get("pods_per_second")
        if ours and theirs:
            figures["ratio"] = round(ours / theirs, 3)  # crd-scheduler / kube-scheduler
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
