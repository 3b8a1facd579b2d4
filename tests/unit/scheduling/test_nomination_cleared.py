"""When a failed attempt ends a pod's nomination (upstream v1.36.3 ``pkg/scheduler/schedule_one.go``).

Every failure passes a nominating mode to ``handleSchedulingFailure``, which ends in ``updatePod``:
``clearNominatedNode`` (ModeOverride, no node) for a failure once a node was chosen (assume,
Reserve, Permit, PreBind, Bind: ``prepareForBindingCycle``, ``handleBindingCycleError``), for an
error of the algorithm and for a FitError with no PostFilter plugin; the PostFilter's own result
otherwise: DefaultPreemption clears it when no node has victims to offer ("Specify
nominatedNodeName to clear the pod's nominatedNodeName status, if applicable",
``framework/preemption/preemption.go`` ``Evaluate``), and leaves it (nil: ModeNoop) when the pod
may not preempt. The scheduler's own record (the nominator) and the pod's
``status.nominatedNodeName`` in the cluster end together.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from scheduler_core.framework import CycleState, PodInfo, Status
from scheduler_core.framework.types import PodUID
from tests.unit.scheduling.support import add_nodes, add_pods, make_scheduler
from tests.wrappers import make_node, make_pod


class Refuser:
    """Fails the pod's cycle at ``Refuser.point``: a rejection at Reserve or Permit, a bug at Filter."""

    name = "Refuser"
    args_model = None
    point = "reserve"

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle

    def filter(self, state: CycleState, pod: PodInfo, node_info: Any) -> Status | None:
        if Refuser.point == "filter":
            raise RuntimeError("filter blew up")
        return None

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return Status.unschedulable("reserve said no") if Refuser.point == "reserve" else None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        pass

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        return (Status.unschedulable("permit said no") if Refuser.point == "permit" else None), 0.0


REFUSER = {"plugins": {"multiPoint": {"enabled": [{"name": "Refuser"}]}}}
NO_POST_FILTER = {"plugins": {"postFilter": {"disabled": [{"name": "*"}]}}}
UID = PodUID("p")
CLEARED = ""  # upstream clearNominatedNode
KEPT = None  # upstream ModeNoop


@pytest.mark.parametrize(
    ("spec", "point", "pod_fields", "cpu", "reported"),
    [
        pytest.param(REFUSER, "reserve", {}, "1", CLEARED, id="reserve-rejects"),
        pytest.param(REFUSER, "permit", {}, "1", CLEARED, id="permit-rejects"),
        pytest.param({}, "bind", {}, "1", CLEARED, id="bind-fails"),
        pytest.param(REFUSER, "filter", {}, "1", CLEARED, id="a-plugin-raises"),
        pytest.param(NO_POST_FILTER, "", {}, "8", CLEARED, id="fits-nowhere-and-no-post-filter"),
        pytest.param({}, "", {}, "8", CLEARED, id="fits-nowhere-and-no-node-has-victims"),
        pytest.param({}, "", {"preemptionPolicy": "Never"}, "8", KEPT, id="fits-nowhere-and-may-not-preempt"),
    ],
)
async def test_a_failed_attempt_ends_the_nomination_where_upstream_does(
    spec: dict[str, Any], point: str, pod_fields: dict[str, Any], cpu: str, reported: str | None
) -> None:
    Refuser.point = point
    scheduler, cluster, _ = make_scheduler(spec, extra_plugins={"Refuser": Refuser})
    add_nodes(scheduler, cluster, [make_node().name("n").capacity(cpu="4", memory="8Gi").obj()])
    # Nominated to n by an earlier preemption.
    add_pods(
        scheduler,
        cluster,
        [make_pod().name("p").uid("p").req(cpu=cpu).nominated_node_name("n").spec(**pod_fields).obj()],
    )
    assert scheduler.queue.nominator.nominated_node_for(UID) == "n"
    nominations: list[str | None] = []
    report_failure = cluster.report_failure

    def record(pod: PodInfo, reason: str, message: str, nominated_node: str | None) -> None:
        nominations.append(nominated_node)
        report_failure(pod, reason, message, nominated_node)

    async def refuse_bind(pod: PodInfo, node_name: str, annotations: Mapping[str, str] | None = None) -> Status | None:
        return Status.as_error("apiserver unavailable")

    cluster.report_failure = record  # type: ignore[method-assign]
    if point == "bind":
        cluster.bind = refuse_bind  # type: ignore[method-assign]

    qpi = scheduler.queue.pop()
    assert qpi is not None
    await scheduler.schedule_one(qpi)  # one attempt, and its binding cycle
    while scheduler.pending_binding():
        await asyncio.sleep(0)

    assert nominations == [reported]
    carried = (cluster.pods["p"].get("status") or {}).get("nominatedNodeName")
    assert carried == ("n" if reported is KEPT else None)
    assert scheduler.queue.nominator.nominated_node_for(UID) == ("n" if reported is KEPT else None)
