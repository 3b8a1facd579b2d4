"""The operator under faults on a real API server: every pod bound exactly once, no node
overcommitted (the sum of requests per node within allocatable), whatever breaks mid-stream.

* the API server stopped for 20 s and started again (a private dev cluster: the shared one is
  never stopped), with two operators, as a Deployment of two replicas runs;
* the pod watch ended by a 410 "Expired", and pods deleted while the operator re-lists: their
  capacity must come back (a missed deletion would leave the new pods pending);
* every connection hanging for seconds (a TCP proxy that stops forwarding, never closing);
* 429s on writes (bindings, conditions, events) from an HTTP proxy, as API Priority and
  Fairness answers under load;
* a plugin that raises: the pod gets a SchedulerError, is retried and binds; the loop lives on.

The leader's renewals failing while binds are in flight is in test_leader_fence.py. The faults
come from tests/e2e/faults.py.
"""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from bench.parity_harness.kube import ClusterUnavailable, DevCluster
from tests.e2e import Cluster, eventually
from tests.e2e.faults import (
    RAISE_LABEL,
    RAISING_PLUGIN,
    HttpProxy,
    TcpProxy,
    bindings,
    kubeconfig_via,
    marked,
    reports,
    restart_apiserver,
    server_of,
    start_marked,
    tcp_target,
)
from tests.e2e.operator_support import (
    Env,
    OperatorProcess,
    assert_no_overcommit,
    environment,
    install_crds,
    make_pod,
    profile,
    scheduled_events,
    wait_all_bound,
    wait_binds,
)

pytestmark = pytest.mark.e2e

# Upstream's timings (component-base config/v1alpha1/defaults.go) where a fault lasts longer
# than the tests' short lease would survive.
UPSTREAM_ELECTION = ("--lease-duration", "15", "--renew-deadline", "10", "--retry-period", "2")


class Stream:
    """Creates pods one by one on a thread, retrying each while the API server is away."""

    def __init__(self, env: Env, names: list[str], interval: float, **requests: Any) -> None:
        self._env, self._names, self._interval, self._requests = env, names, interval, requests
        self.created = 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        env = self._env
        for name in self._names:
            pod = make_pod(name, env.home, env.scheduler, env.label, **self._requests)
            deadline = time.monotonic() + 60
            while True:
                try:
                    env.core.create_namespaced_pod(env.home, pod)
                    break
                except client.ApiException as error:
                    if error.status == 409:  # created, the answer lost
                        break
                except Exception:  # the API server is down: try again
                    pass
                if time.monotonic() > deadline:
                    raise TimeoutError(f"could not create {name}")
                time.sleep(0.2)
            self.created += 1
            time.sleep(self._interval)

    def join(self, timeout: float = 90) -> None:
        self._thread.join(timeout)
        assert self.created == len(self._names), f"{self.created}/{len(self._names)} pods created"


def assert_each_bound_once(
    env: Env,
    names: list[str],
    nodes: list[str],
    operators: list[OperatorProcess],
    timeout: float = 40,
    unlogged: int = 0,
) -> dict[str, str]:
    """Every pod bound (by these operators: at most ``unlogged`` bindings of one that died may
    have landed without their log line), none twice, no node overcommitted."""
    placed = wait_all_bound(env.core, env.home, set(names), timeout=timeout)  # no pod lost
    assert set(placed.values()) <= set(nodes)
    binds = Counter(pod.rsplit("/", 1)[-1] for operator in operators for pod, _, _ in operator.binds())
    assert not binds or max(binds.values()) == 1, binds  # no pod bound twice
    assert len(set(binds) & set(names)) >= len(names) - unlogged, sorted(set(names) - set(binds))
    assert_no_overcommit(env.core, nodes)
    events = scheduled_events(env.api, env.home)
    assert not events or max(events.values()) == 1, events
    return placed


def names_of(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i:03d}" for i in range(count)]


@pytest.fixture
def http_proxy(cluster: Cluster) -> Iterator[HttpProxy]:
    proxy = HttpProxy(*server_of(cluster.kubeconfig))
    yield proxy
    proxy.close()


def via(env: Env, server: str) -> Path:
    assert env.cluster.operator_kubeconfig is not None
    return kubeconfig_via(env.cluster.operator_kubeconfig, server, env.tmp / f"via-{uuid.uuid4().hex[:6]}")


# -- 429 --------------------------------------------------------------------------------------


def test_429s_on_writes_lose_no_pod_and_bind_none_twice(http_proxy: HttpProxy, env: Env) -> None:
    nodes = env.add_nodes(10, cpu="2", memory="8Gi")  # 40 places for 30 pods
    env.custom.create(env.home, profile("default", env.scheduler, plugins=marked()))
    operator = start_marked(env, kubeconfig=via(env, http_proxy.url))
    http_proxy.throttle(bindings, count=10, every=2)  # every other binding: 429, Retry-After 1
    http_proxy.throttle(reports, count=20, every=2)  # and every other condition, event, status
    names = names_of("p", 30)

    stream = Stream(env, names, 0.05, cpu="500m")
    stream.join()
    assert_each_bound_once(env, names, nodes, [operator])

    throttled_binds = sum(1 for m, p, s in http_proxy.requests if s == 429 and bindings(m, p))
    assert throttled_binds > 0 and http_proxy.throttled() > throttled_binds  # conditions/events too
    assert operator.problems() == []


# -- 410 --------------------------------------------------------------------------------------


def test_a_watch_forced_to_410_misses_no_deletion(http_proxy: HttpProxy, env: Env) -> None:
    nodes = env.add_nodes(6, cpu="2", memory="8Gi")  # 12 places of 1 CPU
    env.custom.create(env.home, profile("default", env.scheduler, plugins=marked()))
    operator = start_marked(env, kubeconfig=via(env, http_proxy.url))
    first = names_of("a", 12)
    env.create_pods(env.home, first, cpu="1")
    wait_all_bound(env.core, env.home, set(first))  # every node full

    fired = http_proxy.expire_watches("/api/v1/pods", gap=3.0)
    assert fired.wait(10), "no pod watch was open to expire"
    deleted = first[:6]
    for name in deleted:  # while the operator is not watching
        env.core.delete_namespaced_pod(name, env.home, grace_period_seconds=0)
    second = names_of("b", 6)
    env.create_pods(env.home, second, cpu="1")

    # Only the capacity of the deleted pods can take the new ones.
    assert_each_bound_once(env, first[6:] + second, nodes, [operator], timeout=30)
    assert operator.problems() == []


# -- a connection that hangs ------------------------------------------------------------------


@pytest.fixture
def tcp_proxy(cluster: Cluster) -> Iterator[TcpProxy]:
    proxy = TcpProxy(*tcp_target(cluster.kubeconfig))
    yield proxy
    proxy.close()


def test_connections_that_hang_are_abandoned_and_no_pod_is_lost(tcp_proxy: TcpProxy, env: Env) -> None:
    nodes = env.add_nodes(10, cpu="2", memory="8Gi")
    env.custom.create(env.home, profile("default", env.scheduler, plugins=marked()))
    operator = start_marked(env, *UPSTREAM_ELECTION, kubeconfig=via(env, f"https://127.0.0.1:{tcp_proxy.port}"))
    names = names_of("p", 30)
    stream = Stream(env, names, 0.1, cpu="500m")
    wait_binds(operator, 5)
    tcp_proxy.hang()  # every open connection (watches, binds, the lease) goes silent for good
    time.sleep(4)  # new connections hang too meanwhile
    tcp_proxy.resume()
    stream.join()
    # Within what client-go needs to drop a dead connection: its HTTP/2 health check, 30 s
    # without a frame then a 15 s ping (k8s.io/apimachinery/pkg/util/net/http.go, v0.36.3).
    assert_each_bound_once(env, names, nodes, [operator], timeout=45)
    assert tcp_proxy.hung > 0 and operator.running()


# -- a plugin that raises ---------------------------------------------------------------------


def test_a_plugin_that_raises_fails_that_cycle_and_the_pod_binds_on_retry(env: Env) -> None:
    nodes = env.add_nodes(4, cpu="4", memory="8Gi")
    env.custom.create(env.home, profile("default", env.scheduler, plugins=marked(RAISING_PLUGIN)))
    operator = start_marked(env)
    raising, plain = names_of("r", 5), names_of("q", 5)
    for name in raising:
        pod = make_pod(name, env.home, env.scheduler, env.label, cpu="100m")
        pod["metadata"]["labels"] = {RAISE_LABEL: "once"}
        env.core.create_namespaced_pod(env.home, pod)
    env.create_pods(env.home, plain, cpu="100m")

    assert_each_bound_once(env, raising + plain, nodes, [operator], timeout=40)
    events: Any = client.EventsV1Api(env.api).list_namespaced_event(env.home).items
    failed = {e.regarding.name for e in events if e.reason == "FailedScheduling" and "injected fault" in (e.note or "")}
    assert failed == set(raising)  # upstream: the error is the pod's FailedScheduling message
    assert operator.running()  # the loop lived on: one failed cycle per raising pod, logged
    assert len(re.findall(r"scheduling cycle of \S+/r\d+ failed", operator.log())) == len(raising)


# -- the API server stopped and started again (a private dev cluster) -------------------------


@pytest.fixture
def private_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Path]]:
    state = Path(os.environ.get("CRD_SCHEDULER_FAULTS_DEVCLUSTER_DIR") or tmp_path_factory.mktemp("devcluster"))
    dev = DevCluster(state)
    try:
        kubeconfig = dev.up(os.getpid())
    except ClusterUnavailable as error:
        if not error.toolchain_missing or os.environ.get("CI", "").lower() == "true":
            raise
        pytest.skip(f"e2e: no dev cluster: {error}")
    try:
        yield Cluster(kubeconfig, kubeconfig.with_name("kubeconfig-operator"), dev_cluster=True), state
    finally:
        dev.release(os.getpid())


def test_the_api_server_down_for_20s_mid_stream(private_cluster: tuple[Cluster, Path], tmp_path: Path) -> None:
    cluster, state = private_cluster
    with cluster.api_client() as api:
        install_crds(api)
        core: Any = client.CoreV1Api(api)
        home = f"e2e-faults-{uuid.uuid4().hex[:6]}"
        core.create_namespace({"metadata": {"name": home}})
        eventually(lambda: core.read_namespaced_service_account("default", home))
        with environment(cluster, api, home, tmp_path) as env:
            nodes = env.add_nodes(10, cpu="2", memory="8Gi")
            env.custom.create(env.home, profile("default", env.scheduler, plugins=marked()))
            first = start_marked(
                env,
            )
            second = start_marked(env, wait_for=r"waiting for the lease held by")
            names = names_of("p", 40)
            stream = Stream(env, names, 0.1, cpu="500m")
            wait_binds(first, 5)
            down = restart_apiserver(state, down_for=20)
            stream.join()
            assert_each_bound_once(env, names, nodes, [first, second], timeout=60, unlogged=16)
            assert down >= 20
            # Its renewals failed for the renew deadline: the leader exited, as kube-scheduler does,
            # and the standby took over once the API server was back.
            assert first.process.poll() == 1 and "leader election lost: exiting" in first.log()
            assert len(second.binds()) > 0
        core.delete_namespace(home)
