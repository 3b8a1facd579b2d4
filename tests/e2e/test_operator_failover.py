"""Leader election on a real API server: the Lease state machine in-process, then two operator
processes whose leader is killed (SIGKILL) while pods stream in.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from scheduler_operator.control.leader import KubeLeaseLock, LeaderElector
from scheduler_operator.control.options import ElectionConfig
from scheduler_operator.io.transport import Credentials
from tests.e2e import Cluster
from tests.e2e.faults import marked, start_marked
from tests.e2e.operator_support import (
    Env,
    assert_no_overcommit,
    environment,
    install_crds,
    lease_holder,
    profile,
    scheduled_events,
    wait_all_bound,
    wait_binds,
)

pytestmark = pytest.mark.e2e

QUICK = ElectionConfig(lease_duration=2.0, renew_deadline=1.5, retry_period=0.5)


Elector = Callable[..., LeaderElector]


@pytest.fixture
async def elector(api: client.ApiClient, namespace: str) -> AsyncIterator[Elector]:
    """Candidates for the test's Lease, each with the operator's lock (a transport of its own)."""
    locks: list[KubeLeaseLock] = []

    def make(identity: str, config: ElectionConfig = QUICK) -> LeaderElector:
        lock = KubeLeaseLock.connect(Credentials.of(api.configuration), namespace, "test-lease", timeout=5)
        locks.append(lock)
        return LeaderElector(lock, identity, config)

    yield make
    for lock in locks:
        await lock.close()


def _lease(api: client.ApiClient, namespace: str) -> Any:
    return client.CoordinationV1Api(api).read_namespaced_lease("test-lease", namespace).spec


async def test_lease_is_taken_only_when_free_or_expired(
    api: client.ApiClient, namespace: str, elector: Elector
) -> None:
    a, b = elector("a"), elector("b")

    assert await a.try_acquire_or_renew() is True  # creates the Lease
    first = _lease(api, namespace)
    assert await b.try_acquire_or_renew() is False  # held, not expired
    assert await a.try_acquire_or_renew() is True  # renews
    renewed = _lease(api, namespace)
    assert await b.try_acquire_or_renew() is False  # b sees the renewal: its expiry clock restarts
    await asyncio.sleep(QUICK.lease_duration + 0.2)  # a stops renewing; b's view of it expires
    taken = await b.try_acquire_or_renew()
    after = _lease(api, namespace)
    a_after = await a.try_acquire_or_renew()

    assert (first.holder_identity, first.lease_transitions, first.lease_duration_seconds) == ("a", 0, 2)
    assert renewed.acquire_time == first.acquire_time and renewed.renew_time > first.renew_time
    assert taken is True and b.is_leader
    assert (after.holder_identity, after.lease_transitions) == ("b", 1)
    assert after.acquire_time > first.acquire_time
    assert a_after is False and not a.is_leader


async def test_a_fractional_lease_duration_is_written_in_whole_seconds_and_kept_exactly(
    api: client.ApiClient, namespace: str, elector: Elector
) -> None:
    """client-go: ``LeaseDurationSeconds: int(LeaseDuration / time.Second)`` in the object, the
    exact duration for its own timing (issue 26: a fractional duration was said to be truncated)."""
    config = ElectionConfig(lease_duration=2.5, renew_deadline=1.5, retry_period=0.5)
    a = elector("a", config)

    assert await a.try_acquire_or_renew() is True

    assert _lease(api, namespace).lease_duration_seconds == 2


async def test_release_hands_over_at_once(api: client.ApiClient, namespace: str, elector: Elector) -> None:
    a, b = elector("a"), elector("b")
    assert await a.try_acquire_or_renew() is True
    assert await b.try_acquire_or_renew() is False

    assert await a.release() is True
    released = _lease(api, namespace)
    taken = await b.try_acquire_or_renew()  # no waiting for the lease to expire

    assert (released.holder_identity or "", released.lease_duration_seconds) == ("", 1)
    assert taken is True
    assert _lease(api, namespace).lease_transitions == 1


async def test_candidates_racing_for_a_free_lease_elect_one(
    api: client.ApiClient, namespace: str, elector: Elector
) -> None:
    candidates = [elector(f"c{i}") for i in range(4)]

    won = await asyncio.gather(*(c.try_acquire_or_renew() for c in candidates))

    assert sorted(won) == [False, False, False, True]  # create or update at a resourceVersion: one wins
    assert _lease(api, namespace).holder_identity == candidates[won.index(True)].identity


async def test_leader_stops_at_once_when_another_holds_the_lease(
    api: client.ApiClient, namespace: str, elector: Elector
) -> None:
    a = elector("a")
    await a.acquire()
    holding = asyncio.ensure_future(a.hold())
    await asyncio.sleep(0.1)
    coordination: Any = client.CoordinationV1Api(api)
    lease = coordination.read_namespaced_lease("test-lease", namespace)
    lease.spec.holder_identity = "intruder"
    coordination.replace_namespaced_lease("test-lease", namespace, lease)
    started = time.monotonic()

    await asyncio.wait_for(holding, timeout=QUICK.renew_deadline + 1)

    assert time.monotonic() - started <= QUICK.retry_period + 0.5  # the next renewal sees it
    assert not a.is_leader


# -- two operator processes -------------------------------------------------------------------


@pytest.fixture(scope="module")
def crds(api: client.ApiClient) -> None:
    install_crds(api)


@pytest.fixture
def env(cluster: Cluster, api: client.ApiClient, namespace: str, tmp_path: Path, crds: None) -> Iterator[Env]:
    with environment(cluster, api, namespace, tmp_path) as created:
        yield created


def test_failover_binds_every_pod_exactly_once(env: Env) -> None:
    nodes = env.add_nodes(20, cpu="2", memory="8Gi")  # 80 places for 60 pods
    # marked: another session's operator on the shared cluster (a bench's) would serve this
    # profile as a tenant's and bind these pods before the failover (tests/e2e/faults.py)
    env.custom.create(env.home, profile("default", env.scheduler, plugins=marked()))
    first = start_marked(env)
    second = start_marked(env, wait_for=r"waiting for the lease held by")
    coordination: Any = client.CoordinationV1Api(env.api)
    assert lease_holder(coordination, env.home) == (first.identity, 0)
    names = [f"p{i:03d}" for i in range(60)]

    def stream() -> None:
        for name in names:
            env.create_pods(env.home, [name], cpu="500m")
            time.sleep(0.05)

    streaming = threading.Thread(target=stream)
    streaming.start()
    wait_binds(first, 10)  # mid-stream
    first.kill()
    killed_after = len(first.binds())
    streaming.join()
    placed = wait_all_bound(env.core, env.home, set(names), timeout=60)

    assert lease_holder(coordination, env.home) == (second.identity, 1)
    binds = Counter(pod for pod, _, _ in first.binds() + second.binds())
    assert max(binds.values()) == 1  # no pod bound twice (pods/binding would refuse it anyway)
    assert killed_after < len(names) and len(second.binds()) > 0
    assert len(binds) >= len(names) - 16  # unlogged: at most the bindings in flight at the kill
    assert set(placed.values()) <= set(nodes)
    assert_no_overcommit(env.core, nodes)
    assert max(scheduled_events(env.api, env.home).values()) == 1
    assert second.problems() == []
