"""``/healthz`` and ``/readyz``: what makes them fail, on a fake clock; and their HTTP answers."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from aiohttp.test_utils import TestClient, TestServer

from scheduler_core.metrics.scheduler_metrics import SchedulerMetrics
from scheduler_operator.control.health import HealthState, report
from scheduler_operator.control.serving import make_app
from tests.promtext import parse


@dataclass
class World:
    """What the operator reports, on a clock the test moves."""

    now: float = 1000.0
    leading: bool = False
    synced: bool = False
    waiting: int = 0
    last_turn: float | None = None
    lease_seen: float | None = None

    def health(self) -> HealthState:
        health = HealthState(lease_duration=15.0, loop_stuck_after=60.0, api_stale_after=30.0, clock=lambda: self.now)
        health.leading = lambda: self.leading
        health.synced = lambda: self.synced
        health.waiting = lambda: self.waiting
        health.last_turn = lambda: self.last_turn
        health.lease_observed = lambda: self.lease_seen
        return health


def failing(checks: list) -> dict[str, str]:  # type: ignore[type-arg]
    return {c.name: c.detail for c in checks if not c.ok}


def test_a_synced_standby_is_live_and_ready_and_says_it_does_not_lead() -> None:
    world = World(synced=True, lease_seen=995.0)
    health = world.health()
    assert failing(health.liveness()) == {}
    ok, body = report("readyz", health.readiness())
    assert ok
    assert "[+]leader ok (standby: not leading)" in body
    assert body.endswith("readyz check passed\n")


@pytest.mark.parametrize(
    ("world", "failed"),
    [
        pytest.param(World(synced=False, lease_seen=999.0), {"caches"}, id="caches-not-synced"),
        pytest.param(World(synced=True), {"api"}, id="no-api-call-yet"),
        pytest.param(World(synced=True, lease_seen=969.0), {"api"}, id="api-unreachable-31s"),
        pytest.param(World(synced=True, lease_seen=971.0), set(), id="api-reached-29s-ago"),
        pytest.param(
            World(synced=True, leading=True, lease_seen=964.0), {"lease", "api"}, id="leader-lease-not-renewed-36s"
        ),
        pytest.param(
            World(synced=True, leading=True, lease_seen=966.0), {"api"}, id="leader-lease-34s-within-watchdog"
        ),
    ],
)
def test_readiness_fails_on(world: World, failed: set[str]) -> None:
    assert set(failing(world.health().readiness())) == failed


def test_the_api_being_away_does_not_restart_the_container() -> None:
    world = World(synced=True, lease_seen=900.0)  # a standby that has not reached the API for 100 s
    assert failing(world.health().liveness()) == {}


def test_a_leader_whose_lease_is_not_renewed_is_not_live() -> None:
    """client-go LeaderElector.Check: leaseDuration + 20 s after the last observation."""
    world = World(synced=True, leading=True, lease_seen=964.0)
    assert failing(world.health().liveness()) == {
        "lease": "failed election to renew leadership (not renewed for over 35 s)"
    }


def test_a_stuck_loop_fails_liveness_after_the_threshold_only() -> None:
    world = World(synced=True, leading=True, lease_seen=1000.0, last_turn=400.0, waiting=3)
    health = world.health()
    # Pods just arrived while the loop idled for 10 minutes: not stuck (it has not had a chance).
    assert failing(health.liveness()) == {}
    world.now += 30
    world.lease_seen = world.now
    assert failing(health.liveness()) == {}
    world.now += 31
    world.lease_seen = world.now
    assert failing(health.liveness()) == {"scheduling-loop": "3 pod(s) waiting and no scheduling turn for 61 s"}
    assert "scheduling-loop" in failing(health.readiness())
    # The loop turns again: healthy.
    world.last_turn = world.now
    assert failing(health.liveness()) == {}


def test_a_busy_loop_that_turns_is_healthy_and_an_idle_one_too() -> None:
    world = World(synced=True, leading=True, lease_seen=1000.0, last_turn=1000.0, waiting=500)
    health = world.health()
    for _ in range(10):
        world.now += 50
        world.lease_seen = world.last_turn = world.now - 1
        assert failing(health.liveness()) == {}
    world.waiting = 0
    world.now += 3600  # idle for an hour with nothing to do
    world.lease_seen = world.now
    assert failing(health.liveness()) == {}


def test_a_standby_loop_is_never_stuck() -> None:
    world = World(synced=True, lease_seen=1000.0, last_turn=None, waiting=10)
    health = world.health()
    world.now += 600
    world.lease_seen = world.now
    assert failing(health.liveness()) == {}


def test_a_loop_that_ended_while_leading_fails_liveness_and_readiness_for_good() -> None:
    """Issue 26: the operator then released the lease (standby now), and this replica must be
    restarted rather than answer ``scheduling-loop ok (standby)``."""
    world = World(synced=True, leading=True, lease_seen=1000.0, last_turn=1000.0)
    health = world.health()
    health.loop_ended = "RuntimeError: injected"
    world.leading = False  # the lease is released
    expected = {"scheduling-loop": "the scheduling loop ended while leading: RuntimeError: injected"}
    assert failing(health.liveness()) == expected
    assert failing(health.readiness()) == expected


async def test_the_endpoints_answer_over_http() -> None:
    world = World(synced=False, lease_seen=1000.0)
    metrics = SchedulerMetrics()
    metrics.attempt("scheduled", "ns/p", 0.01)
    async with TestClient(TestServer(make_app(metrics.registry, world.health()))) as client:
        answer = await client.get("/metrics")
        assert answer.status == 200
        assert answer.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        families = parse(await answer.text())
        assert families["scheduler_schedule_attempts_total"].value(result="scheduled", profile="ns/p") == 1
        answer = await client.get("/healthz")
        assert (answer.status, await answer.text()) == (
            200,
            "[+]lease ok\n[+]scheduling-loop ok (standby)\nhealthz check passed\n",
        )
        answer = await client.get("/readyz")
        assert answer.status == 500
        assert "[-]caches failed: caches not synced yet" in await answer.text()
        world.synced = True
        assert (await client.get("/readyz")).status == 200
