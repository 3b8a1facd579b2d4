"""The fence on fake time: when a write may start, what is counted in flight, when shutdown may
hand the lease over. On a real API server: tests/e2e/test_leader_fence.py."""

from __future__ import annotations

import contextlib
import threading

import pytest

from scheduler_core.metrics.registry import Registry
from scheduler_operator.control.fence import Fence, FencedError, api_resource
from scheduler_operator.control.io_metrics import IOMetrics
from scheduler_operator.io.transport import Credentials, Transport

DEADLINE = 10.0


class Clock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("renewals", "now", "allowed"),
    [
        pytest.param([], 0.0, False, id="never-renewed"),
        pytest.param([100.0], 100.0, True, id="just-renewed"),
        pytest.param([100.0], 109.99, True, id="inside-the-deadline"),
        pytest.param([100.0], 110.0, False, id="at-the-deadline"),
        pytest.param([100.0, 105.0], 114.0, True, id="a-later-renewal-extends"),
        pytest.param([105.0, 100.0], 114.0, True, id="a-late-report-of-an-older-renewal-never-shortens"),
    ],
)
def test_a_write_may_start_only_within_the_renew_deadline(renewals: list[float], now: float, allowed: bool) -> None:
    clock = Clock()
    fence = Fence(DEADLINE, clock=clock)
    for started in renewals:
        fence.renewed(started)
    clock.now = now

    if allowed:
        with fence.write("POST /binding"):
            assert fence.in_flight == 1
    else:
        with pytest.raises(FencedError, match="POST /binding: refused"), fence.write("POST /binding"):
            pass
    assert (fence.is_open, fence.refused, fence.in_flight) == (allowed, 0 if allowed else 1, 0)


def test_closing_refuses_at_once_but_lets_the_writes_in_flight_finish() -> None:
    clock = Clock(100.0)
    fence = Fence(DEADLINE, clock=clock)
    fence.renewed(100.0)
    started, release = threading.Event(), threading.Event()

    def write() -> None:
        with fence.write("DELETE /pods/victim"):
            started.set()
            release.wait(5)

    writer = threading.Thread(target=write)
    writer.start()
    started.wait(5)
    fence.close()

    with pytest.raises(FencedError), fence.write("POST /binding"):
        pass
    assert fence.wait_idle(timeout=0.01) is False  # shutdown must not hand over yet
    release.set()
    assert fence.wait_idle(timeout=5) is True
    writer.join(5)
    assert fence.in_flight == 0


def test_a_shut_fence_stays_shut_whatever_renewal_lands_later() -> None:
    """Shutdown shuts the fence at SIGTERM while the keeper still renews until it releases."""
    clock = Clock(100.0)
    fence = Fence(DEADLINE, clock=clock)
    fence.renewed(100.0)
    fence.close()
    fence.renewed(100.5)  # closed (lease lost): a renewal may open it again
    assert fence.is_open

    fence.shut()
    fence.renewed(101.0)

    assert not fence.is_open and fence.is_shut
    with pytest.raises(FencedError), fence.write("POST /binding"):
        pass


@pytest.mark.parametrize(
    ("method", "fenced"),
    [
        pytest.param("GET", False, id="get"),
        pytest.param("HEAD", False, id="head"),
        pytest.param("POST", True, id="post"),
        pytest.param("PATCH", True, id="patch"),
        pytest.param("PUT", True, id="put"),
        pytest.param("DELETE", True, id="delete"),
    ],
)
def test_only_writes_are_fenced(method: str, fenced: bool) -> None:
    fence = Fence(DEADLINE, clock=Clock())  # closed: never renewed

    def send() -> None:
        with fence.guard(method, "https://api:6443/api/v1/namespaces/a/pods/p/binding?dryRun=All"):
            pass

    if fenced:
        with pytest.raises(FencedError, match=f"^{method} /api/v1/namespaces/a/pods/p/binding: refused"):
            send()
    else:
        send()


@pytest.mark.parametrize(
    ("path", "resource"),
    [
        pytest.param("/api/v1/namespaces/a/pods/p/binding", "pods/binding", id="pod-binding"),
        pytest.param("/api/v1/namespaces/a/pods/p/status", "pods/status", id="pod-status"),
        pytest.param("/api/v1/namespaces/a/pods/p", "pods", id="pod"),
        pytest.param("/apis/events.k8s.io/v1/namespaces/a/events", "events", id="event"),
        pytest.param(
            "/apis/scheduling.crd-scheduler.io/v1alpha1/namespaces/a/schedulerprofiles/p/status",
            "schedulerprofiles/status",
            id="profile-status",
        ),
        pytest.param("/api/v1/persistentvolumes/pv1", "persistentvolumes", id="cluster-scoped"),
        pytest.param("/api/v1/namespaces/a", "namespaces", id="a-namespace-itself"),
        pytest.param("/api/v1/namespaces", "namespaces", id="namespaces"),
        pytest.param("/healthz", "", id="not-an-api-path"),
    ],
)
def test_api_resource(path: str, resource: str) -> None:
    assert api_resource(path) == resource


def test_refused_writes_and_failed_writes_are_counted_in_the_registry() -> None:
    """``crd_scheduler_fenced_writes_total{verb,resource}`` and ``crd_scheduler_failed_writes_total{write}``."""
    registry = Registry()
    fence = Fence(DEADLINE, clock=Clock())  # closed: never renewed
    transport = Transport(Credentials("http://127.0.0.1:1", False, lambda: None))
    IOMetrics(registry).watch(fence, transport)
    for method, path in [
        ("POST", "/api/v1/namespaces/a/pods/p/binding"),
        ("POST", "/api/v1/namespaces/a/pods/q/binding"),
        ("PATCH", "/apis/scheduling.crd-scheduler.io/v1alpha1/namespaces/a/pluginconfigs/c/status"),
        ("GET", "/api/v1/namespaces/a/pods"),  # a read: never fenced
    ]:
        with contextlib.suppress(FencedError), fence.guard(method, f"https://api:6443{path}"):
            pass
    transport.count_failure("bind")

    lines = [line for line in registry.render().splitlines() if not line.startswith("#")]
    assert lines == [
        'crd_scheduler_failed_writes_total{write="bind"} 1.0',
        'crd_scheduler_fenced_writes_total{resource="pluginconfigs/status",verb="PATCH"} 1.0',
        'crd_scheduler_fenced_writes_total{resource="pods/binding",verb="POST"} 2.0',
    ]
    assert fence.refused == 3
