"""A plugin that raises, at every extension point, never stops or starves scheduling (issue 26).

For each point a plugin raises for pod ``bad``; ``Scheduler.run`` must go on and bind ``good``,
the next pod. A raise in the scheduling or binding cycle fails ``bad``'s cycle with a
SchedulerError naming the plugin and requeues it, as upstream's ``handleSchedulingFailure``
(v1.36.3 ``pkg/scheduler/schedule_one.go``) treats an Error status; nothing of ``bad`` stays
assumed. The mechanism is :mod:`scheduler_core.framework.faults`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest

from scheduler_core.config import SchedulerProfileSpec
from scheduler_core.framework import ClusterEventWithHint, PodInfo, QueuedPodInfo, Status
from scheduler_core.profiles import ProfileKey
from scheduler_core.queue.heap import KeyedHeap
from scheduler_core.runtime.build import ProfileError
from scheduler_core.scheduler import Scheduler
from scheduler_core.simulator.backend import InMemoryCluster
from tests.unit.scheduling.support import HOME, add_nodes, add_pods, make_scheduler, node_of
from tests.wrappers import node, pod

NAME = "Raiser"
BAD, GOOD = "bad", "good"


def _raise_for_bad(point: str, pod_info: PodInfo, result: Any = None) -> Any:
    if pod_info.name == BAD:
        raise RuntimeError(f"{point} blew up")
    return result


def _raiser(point: str) -> type:
    """A plugin class serving only ``point`` (and what that point needs to run), raising for BAD."""
    methods: dict[str, Callable[..., Any]] = {}
    if point == "pre_filter":
        methods["pre_filter"] = lambda self, state, p, nodes: _raise_for_bad(point, p, (None, None))
    elif point == "filter":
        methods["filter"] = lambda self, state, p, info: _raise_for_bad(point, p)
    elif point == "post_filter":
        methods["post_filter"] = lambda self, state, p, statuses: _raise_for_bad(
            point, p, (None, Status.unschedulable())
        )
    elif point == "pre_score":
        methods["pre_score"] = lambda self, state, p, nodes: _raise_for_bad(point, p)
    elif point == "score":
        methods["score"] = lambda self, state, p, info: _raise_for_bad(point, p, (0, None))
    elif point == "normalize_score":
        methods["score"] = lambda self, state, p, info: (0, None)
        methods["normalize_score"] = lambda self, state, p, scores: _raise_for_bad(point, p)
    elif point == "reserve":
        methods["reserve"] = lambda self, state, p, host: _raise_for_bad(point, p)
        methods["unreserve"] = lambda self, state, p, host: None
    elif point == "unreserve":  # runs when Permit rejects: the rollback must survive it
        methods["reserve"] = lambda self, state, p, host: None
        methods["unreserve"] = lambda self, state, p, host: _raise_for_bad(point, p)
        methods["permit"] = lambda self, state, p, host: (
            (Status.unschedulable("denied"), 0) if p.name == BAD else (None, 0)
        )
    elif point == "permit":
        methods["permit"] = lambda self, state, p, host: _raise_for_bad(point, p, (None, 0))
    elif point in ("pre_bind", "bind", "post_bind"):

        async def hook(self: Any, state: Any, p: PodInfo, host: str) -> Status | None:
            result: Status | None = _raise_for_bad(point, p, Status.skip() if point == "bind" else None)
            return result

        methods[point] = hook
    elif point == "pre_enqueue":
        methods["pre_enqueue"] = lambda self, p: _raise_for_bad(point, p)
    elif point == "less":
        methods["less"] = lambda self, a, b: _raise_for_bad(
            point, a.pod_info, _raise_for_bad(point, b.pod_info, b.timestamp < a.timestamp)
        )
    else:
        raise AssertionError(point)
    methods["__init__"] = lambda self, args, handle: None
    return type(NAME, (), {"name": NAME, "args_model": None, **methods})


def _plugins(point: str) -> dict[str, Any]:
    if point == "less":  # one QueueSort per profile: ours instead of PrioritySort
        return {"queueSort": {"enabled": [{"name": NAME}], "disabled": [{"name": "*"}]}}
    if point == "bind":  # ahead of DefaultBinder, which would bind before it raises
        return {"bind": {"enabled": [{"name": NAME}, {"name": "DefaultBinder"}], "disabled": [{"name": "*"}]}}
    return {"multiPoint": {"enabled": [{"name": NAME}]}}


async def _run_until_bound(scheduler: Scheduler, cluster: InMemoryCluster, *names: str) -> asyncio.Task[None]:
    stop = asyncio.Event()
    loop = asyncio.ensure_future(scheduler.run(stop))
    for _ in range(500):
        await asyncio.sleep(0)
        if all(node_of(cluster, name) is not None for name in names):
            break
    assert not loop.done(), loop.exception() if loop.done() else None  # the loop survived
    stop.set()
    await loop
    return loop


# (point, its upstream name in the message): a raise fails BAD's cycle and requeues it.
CYCLE_POINTS = [
    pytest.param("pre_filter", "PreFilter", id="PreFilter"),
    pytest.param("filter", "Filter", id="Filter"),
    pytest.param("post_filter", "PostFilter", id="PostFilter"),
    pytest.param("pre_score", "PreScore", id="PreScore"),
    pytest.param("score", "Score", id="Score"),
    pytest.param("normalize_score", "NormalizeScore", id="NormalizeScore"),
    pytest.param("reserve", "Reserve", id="Reserve"),
    pytest.param("permit", "Permit", id="Permit"),
    pytest.param("pre_bind", "PreBind", id="PreBind"),
    pytest.param("bind", "Bind", id="Bind"),
]


@pytest.mark.parametrize(("point", "upstream"), CYCLE_POINTS)
async def test_a_raising_plugin_fails_only_that_pods_cycle_naming_the_plugin(point: str, upstream: str) -> None:
    scheduler, cluster, _ = make_scheduler({"plugins": _plugins(point)}, extra_plugins={NAME: _raiser(point)})
    add_nodes(scheduler, cluster, [node("n1", cpu="4"), node("n2", cpu="4")])
    # PostFilter runs only for an unschedulable pod: BAD asks for more than any node has.
    bad_cpu = "100" if point == "post_filter" else "1"
    add_pods(scheduler, cluster, [pod(BAD, uid=BAD, cpu=bad_cpu), pod(GOOD, uid=GOOD, cpu="1")])

    await _run_until_bound(scheduler, cluster, GOOD)

    assert node_of(cluster, GOOD) is not None
    assert node_of(cluster, BAD) is None
    events = [e for e in cluster.events_for("default", BAD) if e.reason == "FailedScheduling"]
    assert events, "no FailedScheduling event for the pod whose plugin raised"
    assert events[0].message == f'running {upstream} plugin "{NAME}": raised RuntimeError: {point} blew up'
    assert scheduler.queue.contains(PodInfo(cluster.pods[BAD]))  # requeued, not dropped
    for name in ("n1", "n2"):  # only GOOD's request is counted anywhere: BAD is not assumed
        info = scheduler.cache.update_snapshot().get(name)
        assert info is not None
        assert info.requested.milli_cpu == (1000 if node_of(cluster, GOOD) == name else 0)


async def test_a_raising_unreserve_is_logged_and_the_rollback_completes(caplog: pytest.LogCaptureFixture) -> None:
    scheduler, cluster, _ = make_scheduler(
        {"plugins": _plugins("unreserve")}, extra_plugins={NAME: _raiser("unreserve")}
    )
    add_nodes(scheduler, cluster, [node("n1", cpu="4")])
    add_pods(scheduler, cluster, [pod(BAD, uid=BAD, cpu="1"), pod(GOOD, uid=GOOD, cpu="1")])
    with caplog.at_level(logging.ERROR):
        await _run_until_bound(scheduler, cluster, GOOD)
    assert node_of(cluster, GOOD) == "n1" and node_of(cluster, BAD) is None
    assert f"unreserve of default/{BAD} failed" in caplog.text
    info = scheduler.cache.update_snapshot().get("n1")
    assert info is not None and info.requested.milli_cpu == 1000  # BAD forgotten all the same
    [event] = [e for e in cluster.events_for("default", BAD) if e.reason == "FailedScheduling"][:1]
    assert "denied" in event.message  # Permit's rejection is what BAD is told


async def test_a_raising_post_bind_is_logged_and_the_pod_stays_bound(caplog: pytest.LogCaptureFixture) -> None:
    scheduler, cluster, _ = make_scheduler(
        {"plugins": _plugins("post_bind")}, extra_plugins={NAME: _raiser("post_bind")}
    )
    add_nodes(scheduler, cluster, [node("n1", cpu="4")])
    add_pods(scheduler, cluster, [pod(BAD, uid=BAD, cpu="1"), pod(GOOD, uid=GOOD, cpu="1")])
    with caplog.at_level(logging.ERROR):
        await _run_until_bound(scheduler, cluster, BAD, GOOD)
    assert node_of(cluster, BAD) == "n1" and node_of(cluster, GOOD) == "n1"  # PostBind is informational
    assert f"post-bind of default/{BAD} failed" in caplog.text


async def test_a_raising_pre_enqueue_gates_the_pod_with_an_error_as_upstream(caplog: pytest.LogCaptureFixture) -> None:
    """Upstream runPreEnqueuePlugin (pkg/scheduler/backend/queue/scheduling_queue.go): an Error
    status gates the pod (the plugin becomes its gating plugin) and is logged at ERROR."""
    scheduler, cluster, _ = make_scheduler(
        {"plugins": _plugins("pre_enqueue")}, extra_plugins={NAME: _raiser("pre_enqueue")}
    )
    add_nodes(scheduler, cluster, [node("n1", cpu="4")])
    with caplog.at_level(logging.ERROR):
        add_pods(scheduler, cluster, [pod(BAD, uid=BAD, cpu="1"), pod(GOOD, uid=GOOD, cpu="1")])
        await _run_until_bound(scheduler, cluster, GOOD)
    assert node_of(cluster, GOOD) == "n1" and node_of(cluster, BAD) is None
    queued = scheduler.queue.get(PodInfo(cluster.pods[BAD]))
    assert queued is not None and NAME in queued.unschedulable_plugins
    assert (
        f'Unexpected error running PreEnqueue plugin {NAME} for pod default/{BAD}: running PreEnqueue plugin "{NAME}": '
        "raised RuntimeError: pre_enqueue blew up"
    ) in caplog.text


async def test_a_raising_queue_sort_orders_fifo_and_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    scheduler, cluster, _ = make_scheduler({"plugins": _plugins("less")}, extra_plugins={NAME: _raiser("less")})
    add_nodes(scheduler, cluster, [node("n1", cpu="8")])
    names = [BAD, GOOD, "third", "fourth"]
    with caplog.at_level(logging.ERROR):
        add_pods(scheduler, cluster, [pod(name, uid=name, cpu="1") for name in names])
        await _run_until_bound(scheduler, cluster, *names)
    assert all(node_of(cluster, name) == "n1" for name in names)
    assert caplog.text.count(f"QueueSort plugin {NAME} raised") == 1


def test_the_fifo_fallback_keeps_the_heap_whole_when_less_raises_for_some_pairs() -> None:
    """A comparator raising for some pairs only (those with a BAD pod), reverse FIFO otherwise:
    every item added comes out exactly once."""
    scheduler, _, _ = make_scheduler({"plugins": _plugins("less")}, extra_plugins={NAME: _raiser("less")})
    heap: KeyedHeap[QueuedPodInfo] = KeyedHeap(lambda q: q.pod_info.uid, scheduler._less)
    for i in range(40):
        name = BAD if i % 3 == 0 else f"p{i}"
        heap.add_or_update(QueuedPodInfo(PodInfo(pod(name, uid=f"u{i}")), timestamp=float(i)))
    heap.delete("u7")
    popped = [item.pod_info.uid for item in iter(heap.pop, None)]
    assert sorted(popped) == sorted(f"u{i}" for i in range(40) if i != 7)


def test_a_raising_events_to_register_refuses_the_profile_naming_the_plugin() -> None:
    def events(self: Any) -> list[ClusterEventWithHint]:
        raise RuntimeError("events blew up")

    plugin = type(NAME, (), {"name": NAME, "args_model": None, "__init__": lambda self, a, h: None,
                             "filter": lambda self, s, p, n: None, "events_to_register": events})  # fmt: skip
    scheduler, _, _ = make_scheduler(extra_plugins={NAME: plugin})
    spec = SchedulerProfileSpec.model_validate({"plugins": _plugins("filter")})
    with pytest.raises(ProfileError, match=f"plugin '{NAME}': running EnqueueExtensions plugin \"{NAME}\": raised "
                                           "RuntimeError: events blew up"):  # fmt: skip
        scheduler.apply_profile(ProfileKey(HOME, "other"), spec)
