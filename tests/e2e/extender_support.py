"""Helpers for the extender e2e tests (no tests here).

- :func:`extender_serve`: ``crd-scheduler extender serve`` in this process (its own event loop in
  a thread), with the example label plugins registered, watching the real API server;
- :func:`peer`: a scripted extender (tests/unit/extender/peer.py) in a thread, for faults;
- :func:`kube_scheduler`: *our own* kube-scheduler v1.36.3 process from the dev cluster's
  binaries, with a test-unique schedulerName and its own KubeSchedulerConfiguration (the shared
  kube-scheduler of the dev cluster is never restarted);
- :func:`tls_pair` (from the unit peer): a CA and a server certificate for 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
import time
import urllib.request
from collections.abc import Coroutine, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes import client

from scheduler_core.config import SchedulerProfileSpec
from scheduler_core.defaults import default_plugins
from scheduler_core.extender.service import ExtenderService
from scheduler_core.runtime.registry import Registry, default_registry
from scheduler_operator.control.extender_server import KubeBinder, serve
from scheduler_operator.io.kube import KubeconfigSource
from scheduler_operator.io.transport import Credentials, Transport
from tests.e2e import Cluster
from tests.unit.extender.label_plugins import PROFILE, RefuseLabel, ScoreByLabel
from tests.unit.extender.peer import Peer, tls_pair

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]


class LoopThread:
    """An event loop running in a daemon thread; ``run`` waits for a coroutine's result."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="e2e-loop", daemon=True)
        self._thread.start()

    def run(self, work: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout)

    def submit(self, work: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(work, self.loop)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)


def _registry() -> Registry:
    registry = Registry(default_registry(with_out_of_tree=False))
    registry.register("RefuseLabel", RefuseLabel)
    registry.register("ScoreByLabel", ScoreByLabel)
    return registry


def _wait_healthy(url: str, context: Any = None, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{url}/healthz", context=context, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url}/healthz never answered 200")
        time.sleep(0.1)


@contextmanager
def extender_serve(cluster: Cluster, tls: tuple[str, str] | None = None) -> Iterator[tuple[str, ExtenderService]]:
    """The served label plugins: (URL, service)."""
    import ssl

    registry = _registry()
    transport = Transport(Credentials.load(KubeconfigSource(str(cluster.kubeconfig))))
    binder = KubeBinder(transport)
    service = ExtenderService(
        SchedulerProfileSpec.model_validate(PROFILE), registry, default_plugins(registry), api=binder
    )
    context = None
    if tls is not None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(*tls)
    loop = LoopThread()
    ports: Future[int] = Future()
    task = loop.submit(serve(service, transport, host="127.0.0.1", port=0, tls=context, started=ports.set_result))
    try:
        port = ports.result(30)
        url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
        _wait_healthy(url, ssl._create_unverified_context() if tls else None)
        yield url, service
    finally:
        task.cancel()
        time.sleep(0.2)
        loop.run(transport.close())
        loop.stop()


@contextmanager
def peer() -> Iterator[tuple[Peer, LoopThread]]:
    loop = LoopThread()
    server = Peer()
    loop.run(_start(server))
    try:
        yield server, loop
    finally:
        loop.run(server.stop())
        loop.stop()


async def _start(server: Peer) -> Peer:
    server.hang = asyncio.Event()  # bound to this loop
    return await server.start()


def dev_cluster_bin() -> Path:
    """Where scripts/dev-cluster keeps its binaries, as it finds them (hack/devcluster's
    ``Layout.from_env``): ``CRD_SCHEDULER_DEVCLUSTER_BIN`` when set, else ``bin/`` of
    ``CRD_SCHEDULER_DEVCLUSTER_DIR`` (``.devcluster``)."""
    explicit = os.environ.get("CRD_SCHEDULER_DEVCLUSTER_BIN")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("CRD_SCHEDULER_DEVCLUSTER_DIR") or ROOT / ".devcluster") / "bin"


@contextmanager
def kube_scheduler(cluster: Cluster, tmp: Path, config: dict[str, Any]) -> Iterator[Path]:
    """Our own kube-scheduler with ``config`` (clientConnection and leaderElection filled in); its log."""
    if not cluster.dev_cluster:
        pytest.skip("needs the dev cluster's kube-scheduler binary")
    binary = dev_cluster_bin() / "kube-scheduler"
    if not binary.exists():
        pytest.fail(f"no kube-scheduler binary at {binary}", pytrace=False)
    kubeconfig = cluster.kubeconfig.with_name("kubeconfig-scheduler")
    full = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "leaderElection": {"leaderElect": False},
        **config,
    }
    path = tmp / f"kube-scheduler-{os.getpid()}-{time.monotonic_ns()}.json"
    path.write_text(json.dumps(full, indent=2))
    log = path.with_suffix(".log")
    with log.open("w") as stream:
        process = subprocess.Popen(
            [str(binary), f"--config={path}", "--secure-port=0", "--v=2"], stdout=stream, stderr=subprocess.STDOUT
        )
    try:
        time.sleep(0.5)
        if process.poll() is not None:
            pytest.fail(f"kube-scheduler exited {process.returncode}:\n{log.read_text()[-3000:]}", pytrace=False)
        yield log
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        print(f"--- kube-scheduler log (last lines) ---\n{log.read_text()[-3000:]}")


def failed_scheduling(core: Any, namespace: str, pod: str, instance: str | None = None) -> list[str]:
    """Messages of the FailedScheduling events of a pod (events.k8s.io/v1, as both schedulers post
    them); with ``instance``, only those that replica posted (other sessions' operators on the
    shared cluster may post about any pod)."""
    events = client.EventsV1Api(core.api_client).list_namespaced_event(namespace).items
    return [
        e.note or ""
        for e in events
        if e.reason == "FailedScheduling"
        and e.regarding is not None
        and e.regarding.name == pod
        and (instance is None or e.reporting_instance == instance)
    ]


__all__ = ["LoopThread", "extender_serve", "failed_scheduling", "kube_scheduler", "peer", "tls_pair"]
