"""Bounded reconcile work under an edit storm (issue 26): status writes coalesced per object
(the newest wins) and rate-limited per namespace, PluginConfig-driven rebuilds debounced per
profile. Fake time (``looptime``): every figure below is seconds of the loop's clock.

The writer is driven through a recording twin of the transport's ``request`` (what it sends and
when); the writes themselves go to the real API server in tests/e2e/test_edit_storm.py."""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import Iterator
from typing import Any

import pytest

from scheduler_core.defaults import default_plugins
from scheduler_core.runtime.framework import Framework
from scheduler_core.runtime.registry import default_registry
from scheduler_core.scheduler import Scheduler
from scheduler_core.simulator import InMemoryCluster
from scheduler_operator.control import collector
from scheduler_operator.control.reconciler import COLLECT_AFTER_REBUILDS, Reconciler
from scheduler_operator.control.recorder import EventRecorder
from scheduler_operator.control.writer import StatusWriter
from scheduler_operator.io.calls import Lanes
from scheduler_operator.io.transport import Credentials, Transport
from scheduler_operator.resources import PROFILE_PLURAL
from tests.unit.operator.control.test_reconciler import HOME, config, profile

LATENCY = 0.1  # the API server's answer to a status PATCH, in fake seconds


class RecordingTransport:
    """The transport's ``request`` as the writer uses it: each PATCH takes :data:`LATENCY`."""

    def __init__(self) -> None:
        self.sent: list[tuple[float, str, dict[str, Any]]] = []  # (loop time, path, body)
        self.failed_writes: dict[str, int] = {}

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> None:
        assert method == "PATCH"
        self.sent.append((asyncio.get_running_loop().time(), path, body))
        await asyncio.sleep(LATENCY)

    def count_failure(self, what: str) -> None:
        self.failed_writes[what] = self.failed_writes.get(what, 0) + 1

    def to(self, namespace: str, name: str | None = None) -> list[tuple[float, dict[str, Any]]]:
        prefix = f"/namespaces/{namespace}/{PROFILE_PLURAL}/{name or ''}"
        return [(at, body) for at, path, body in self.sent if prefix in path]


@pytest.fixture
def recorded() -> Iterator[tuple[StatusWriter, RecordingTransport]]:
    transport = RecordingTransport()
    events = Transport(Credentials("http://127.0.0.1:9", False, lambda: None))  # never called: no event
    writer = StatusWriter(transport, EventRecorder(events, Lanes(), instance="t"))  # type: ignore[arg-type]
    yield writer, transport
    writer.close()


def body(namespace: str, name: str) -> dict[str, Any]:
    return {"metadata": {"namespace": namespace, "name": name, "uid": f"u-{namespace}-{name}"}}


# -- the status writer ----------------------------------------------------------------------------


@pytest.mark.looptime
async def test_a_burst_of_statuses_for_one_object_writes_the_one_in_flight_and_the_newest(
    recorded: tuple[StatusWriter, RecordingTransport],
) -> None:
    writer, transport = recorded
    writer.lead(True)
    writer.set(PROFILE_PLURAL, body("team", "p"), {"observedGeneration": 1})
    await asyncio.sleep(0.01)  # generation 1 is in flight
    for generation in range(2, 51):
        writer.set(PROFILE_PLURAL, body("team", "p"), {"observedGeneration": generation})

    await writer.drain()

    assert [b["status"]["observedGeneration"] for _, b in transport.to("team", "p")] == [1, 50]
    assert writer.pending() == 0


@pytest.mark.looptime
async def test_a_status_set_before_its_token_comes_replaces_the_pending_one(
    recorded: tuple[StatusWriter, RecordingTransport],
) -> None:
    writer, transport = recorded
    writer.namespace_qps, writer.namespace_burst = 1.0, 1
    writer.lead(True)
    writer.set(PROFILE_PLURAL, body("team", "a"), {"observedGeneration": 1})
    for generation in range(1, 21):  # b waits for the namespace's next token meanwhile
        writer.set(PROFILE_PLURAL, body("team", "b"), {"observedGeneration": generation})
        await asyncio.sleep(0.04)

    await writer.drain()

    assert [b["status"]["observedGeneration"] for _, b in transport.to("team", "b")] == [20]
    assert writer.pending("team") == 0


@pytest.mark.looptime
async def test_a_namespace_writes_its_burst_at_once_then_at_its_rate(
    recorded: tuple[StatusWriter, RecordingTransport],
) -> None:
    writer, transport = recorded
    writer.namespace_qps, writer.namespace_burst = 5.0, 10
    writer.lead(True)
    for i in range(30):
        writer.set(PROFILE_PLURAL, body("team", f"p{i}"), {"observedGeneration": 1})

    await writer.drain()

    times = [at for at, _ in transport.to("team")]
    assert len(times) == 30
    assert times[9] < 1.0 and times[10] >= 1.0 / 5 - 1e-9  # ten at once, the 11th waits a token
    assert times[-1] == pytest.approx(20 / 5, abs=0.15)  # the 20 beyond the burst at 5 a second


@pytest.mark.looptime
async def test_one_namespaces_storm_does_not_delay_another_namespaces_writes(
    recorded: tuple[StatusWriter, RecordingTransport],
) -> None:
    writer, transport = recorded
    writer.namespace_qps, writer.namespace_burst = 2.0, 1
    writer.lead(True)
    for i in range(100):  # 50 s of writes for the stormy namespace
        writer.set(PROFILE_PLURAL, body("storm", f"p{i}"), {"observedGeneration": 1})
    await asyncio.sleep(5)
    started = asyncio.get_running_loop().time()
    writer.set(PROFILE_PLURAL, body("calm", "p"), {"observedGeneration": 1})
    await asyncio.sleep(LATENCY + 0.01)

    assert [at - started for at, _ in transport.to("calm")] == [pytest.approx(0, abs=0.01)]
    assert writer.pending("storm") > 80
    writer.lead(False)


@pytest.mark.looptime
async def test_a_status_dropped_while_pending_is_never_written(
    recorded: tuple[StatusWriter, RecordingTransport],
) -> None:
    writer, transport = recorded
    writer.namespace_qps, writer.namespace_burst = 1.0, 1
    writer.lead(True)
    writer.set(PROFILE_PLURAL, body("team", "a"), {"observedGeneration": 1})
    writer.set(PROFILE_PLURAL, body("team", "gone"), {"observedGeneration": 1})
    writer.drop(PROFILE_PLURAL, body("team", "gone"))

    await writer.drain()

    assert transport.to("team", "gone") == [] and len(transport.to("team", "a")) == 1


@pytest.mark.looptime
async def test_a_standby_writes_nothing_and_the_newest_status_once_it_leads(
    recorded: tuple[StatusWriter, RecordingTransport],
) -> None:
    writer, transport = recorded
    for generation in range(1, 11):
        writer.set(PROFILE_PLURAL, body("team", "p"), {"observedGeneration": generation})
    await asyncio.sleep(1)
    assert transport.sent == []

    writer.lead(True)
    await writer.drain()

    assert [b["status"]["observedGeneration"] for _, b in transport.to("team", "p")] == [10]


@pytest.mark.looptime
async def test_a_status_seen_older_than_the_one_wanted_is_written_again(
    recorded: tuple[StatusWriter, RecordingTransport],
) -> None:
    """Level-triggered: whatever the object shows last (an older write's echo seen late, a write
    by someone else), the leader ends with the newest status written."""
    writer, transport = recorded
    writer.lead(True)
    writer.set(PROFILE_PLURAL, body("team", "p"), {"observedGeneration": 2})
    await writer.drain()
    writer.observe(PROFILE_PLURAL, {**body("team", "p"), "status": {"observedGeneration": 1}})
    await writer.drain()
    writer.observe(PROFILE_PLURAL, {**body("team", "p"), "status": {"observedGeneration": 2}})
    await writer.drain()

    assert [b["status"]["observedGeneration"] for _, b in transport.to("team", "p")] == [2, 2]


# -- the reconciler's debounce -------------------------------------------------------------------


@pytest.fixture
def reconciler() -> Iterator[Reconciler]:
    registry = default_registry()
    scheduler = Scheduler(
        InMemoryCluster(), registry=registry, default_multi_point=default_plugins(registry), home_namespace=HOME
    )
    transport = Transport(Credentials("http://127.0.0.1:9", False, lambda: None))  # never called: not leading
    writer = StatusWriter(transport, EventRecorder(transport, Lanes(), instance="test"))
    yield Reconciler(scheduler, registry, writer, home_namespace=HOME, quiet=1.0, max_delay=10.0)
    writer.close()


def weighted(weight: int) -> dict[str, Any]:
    return {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": weight}]}}


def served_weight(reconciler: Reconciler, name: str) -> int:
    """The cpu weight in the PluginConfig args the profile's last good (serving) spec holds."""
    status = reconciler.writer.desired(PROFILE_PLURAL, "team", name)
    assert status is not None
    (fit,) = [c for c in status["lastGood"]["spec"]["pluginConfig"] if c["name"] == "NodeResourcesFit"]
    weight: int = fit["args"]["scoringStrategy"]["resources"][0]["weight"]
    return weight


async def edit_storm(reconciler: Reconciler, edits: int, every: float) -> None:
    for generation in range(1, edits + 1):
        reconciler.plugin_config_changed(config("team", "fit", "NodeResourcesFit", weighted(generation), generation))
        await asyncio.sleep(every)


@pytest.mark.looptime
async def test_one_edit_rebuilds_each_profile_after_the_quiet_period(reconciler: Reconciler) -> None:
    for i in range(3):
        reconciler.profile_changed(profile("team", f"p{i}", {"schedulerName": f"s{i}"}))
    before = reconciler.rebuilds

    reconciler.plugin_config_changed(config("team", "fit", "NodeResourcesFit", weighted(7)))
    await asyncio.sleep(0.9)
    assert reconciler.rebuilds == before
    await asyncio.sleep(0.2)

    assert reconciler.rebuilds == before + 3
    assert [served_weight(reconciler, f"p{i}") for i in range(3)] == [7, 7, 7]


@pytest.mark.looptime
async def test_an_edit_storm_rebuilds_each_profile_once_per_max_delay_and_once_after_it(
    reconciler: Reconciler,
) -> None:
    """30 edits, one every 0.5 s: each profile is rebuilt at 10 s (the longest delay) and once
    after the last edit, from the newest args: 2 rebuilds per profile, not 30."""
    for i in range(3):
        reconciler.profile_changed(profile("team", f"p{i}", {"schedulerName": f"s{i}"}))
    before = reconciler.rebuilds

    await edit_storm(reconciler, edits=30, every=0.5)
    during = reconciler.rebuilds - before
    await asyncio.sleep(1.0)

    assert during == 3  # the rebuild forced at 10 s
    assert reconciler.rebuilds - before == 6
    assert [served_weight(reconciler, f"p{i}") for i in range(3)] == [30, 30, 30]


@pytest.mark.looptime
async def test_a_profile_deleted_while_its_rebuild_waits_is_not_rebuilt(reconciler: Reconciler) -> None:
    reconciler.profile_changed(profile("team", "kept", {"schedulerName": "kept"}))
    reconciler.profile_changed(profile("team", "gone", {"schedulerName": "gone"}))
    before = reconciler.rebuilds
    reconciler.plugin_config_changed(config("team", "fit", "NodeResourcesFit", weighted(3)))

    reconciler.profile_deleted(profile("team", "gone", {"schedulerName": "gone"}))
    await asyncio.sleep(2)

    assert reconciler.rebuilds == before + 1
    assert reconciler.writer.desired(PROFILE_PLURAL, "team", "gone") is None


@pytest.mark.looptime
async def test_the_plugin_config_status_is_refreshed_once_per_batch_of_rebuilds(reconciler: Reconciler) -> None:
    sets: list[str] = []
    original = reconciler.writer.set

    def counting(plural: str, obj: Any, status: dict[str, Any]) -> None:
        sets.append(f"{plural}/{obj['metadata']['name']}")
        original(plural, obj, status)

    for i in range(10):  # the default profiles-per-namespace cap
        reconciler.profile_changed(profile("team", f"p{i}", {"schedulerName": f"s{i}"}))
    reconciler.writer.set = counting  # type: ignore[method-assign,assignment]
    reconciler.plugin_config_changed(config("team", "fit", "NodeResourcesFit", weighted(2)))
    await asyncio.sleep(2)

    assert sets.count("pluginconfigs/fit") == 2  # at the edit, and after the 10 rebuilds
    assert sets.count(f"{PROFILE_PLURAL}/p0") == 1
    found = reconciler.writer.desired("pluginconfigs", "team", "fit")
    assert found is not None and json.dumps(found).count("p9") == 1


async def test_replaced_frameworks_do_not_pile_up_under_the_operators_collector(reconciler: Reconciler) -> None:
    """With the operator's collector thresholds, a replaced framework (cyclic garbage) waited for
    a full collection that came some 20 million containers later: each round of rebuilds left
    its frameworks behind. The reconciler collects after every COLLECT_AFTER_REBUILDS rebuilds."""
    gc.collect()  # what earlier tests left
    thresholds = gc.get_threshold()
    gc.set_threshold(collector.YOUNG_THRESHOLD, *collector.OLDER_THRESHOLDS)
    try:
        for i in range(10):
            reconciler.profile_changed(profile("team", f"p{i}", {"schedulerName": f"s{i}"}))
        for generation in range(1, 21):  # 200 rebuilds
            reconciler.plugin_config_changed(
                config("team", "fit", "NodeResourcesFit", weighted(generation), generation)
            )
            await reconciler.settle()
            gc.collect(1)  # as the operator's frameworks live long enough: the oldest generation
        alive = sum(1 for o in gc.get_objects() if type(o) is Framework)
    finally:
        gc.set_threshold(*thresholds)

    assert reconciler.rebuilds >= 200
    assert alive <= 10 + COLLECT_AFTER_REBUILDS + 1  # the ten serving, the garbage since the last collection
