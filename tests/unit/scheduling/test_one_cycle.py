"""One scheduling cycle for every profile (issue 23): ``Scheduler.schedule_one`` is a coroutine
whose extender steps run only for a profile with HTTP extenders.

For a profile without extenders nothing in the cycle may suspend: the cache's NodeInfos are the
cycle's snapshot only because no event runs between its PreFilter and its Reserve (DESIGN.md,
docs/architecture.md). PostFilter awaits a plugin's ``post_filter_async`` (DefaultPreemption
consulting the extenders) only for a profile with extenders.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import CycleState, NodeToStatus, PodInfo, PostFilterResult, Status
from scheduler_core.framework.extension_points import plugin_problems
from tests.unit.scheduling.support import add_nodes, add_pods, make_scheduler, node_of
from tests.wrappers import node, pod

# An extender with no verb: the profile calls extenders, and none of them is ever asked anything.
SILENT_EXTENDER = {"urlPrefix": "http://127.0.0.1:9/silent"}


class Both:
    """A PostFilter plugin with both forms; records which one ran."""

    name = "Both"
    args_model = None
    ran: list[str] = []

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        Both.ran.append("post_filter")
        return None, Status.unschedulable("no room made")

    async def post_filter_async(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        Both.ran.append("post_filter_async")
        return None, Status.unschedulable("no room made")


def _spec(extenders: list[dict[str, Any]]) -> dict[str, Any]:
    return {"plugins": {"postFilter": {"enabled": [{"name": "Both"}]}}, "extenders": extenders}


@pytest.mark.parametrize(
    ("cpu", "placed"),
    [
        pytest.param("1", "n1", id="fits"),
        pytest.param("64", None, id="unschedulable-post-filter-runs"),
    ],
)
async def test_a_cycle_without_extenders_never_suspends(cpu: str, placed: str | None) -> None:
    Both.ran = []
    scheduler, cluster, _ = make_scheduler(_spec([]), extra_plugins={"Both": Both})
    add_nodes(scheduler, cluster, [node("n1", cpu="4")])
    add_pods(scheduler, cluster, [pod("p", uid="p", cpu=cpu)])
    qpi = scheduler.queue.pop()
    assert qpi is not None

    cycle = scheduler.schedule_one(qpi)
    with pytest.raises(StopIteration):  # ran to its end on the first step: it never suspended
        cycle.send(None)

    assert Both.ran == ([] if placed else ["post_filter"])
    await scheduler.run_until_idle()  # the binding cycle it started
    assert node_of(cluster, "p") == placed


@pytest.mark.parametrize(
    ("extenders", "ran"),
    [
        pytest.param([], ["post_filter"], id="no-extenders"),
        pytest.param([SILENT_EXTENDER], ["post_filter_async"], id="with-extenders"),
    ],
)
async def test_post_filter_awaits_the_async_form_only_with_extenders(
    extenders: list[dict[str, Any]], ran: list[str]
) -> None:
    Both.ran = []
    scheduler, cluster, _ = make_scheduler(_spec(extenders), extra_plugins={"Both": Both})
    add_nodes(scheduler, cluster, [node("n1", cpu="4")])
    add_pods(scheduler, cluster, [pod("p", uid="p", cpu="64")])
    await scheduler.run_until_idle(max_attempts_per_pod=1)
    assert Both.ran == ran
    assert node_of(cluster, "p") is None


def test_post_filter_async_is_a_declared_hook() -> None:
    """Registration checks ``post_filter_async`` as it checks every hook: a synchronous one would
    be awaited and fail mid-cycle, so it is refused when the plugin registers."""

    class SyncAsync(Both):
        def post_filter_async(  # type: ignore[override]
            self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
        ) -> tuple[PostFilterResult | None, Status | None]:
            return None, None

    assert plugin_problems("Both", Both) == []
    assert any("post_filter_async" in problem for problem in plugin_problems("SyncAsync", SyncAsync))
