"""Nominated pods in the scheduling cycle (upstream ``schedule_one.go``: ``findNodesThatFitPod``
tries the pod's nominated node first, ``evaluateNominatedNode``; every Filter runs through
``RunFilterPluginsWithNominatedPods``, which counts the pods nominated to the node with a
priority at least the pod's; ``assume`` ends the pod's own nomination).
"""

from __future__ import annotations

import pytest

from tests.unit.scheduling.support import add_nodes, add_pods, make_scheduler, node_of
from tests.wrappers import make_node, make_pod


def four_cpu(name: str) -> dict[str, object]:
    return make_node().name(name).capacity(cpu="4", memory="8Gi").obj()


@pytest.mark.parametrize(
    ("priority", "expected_node"),
    [
        # upstream schedule_one_test.go TestSchedulerSchedulePod "test with nominated pods":
        # a nominated pod of equal or higher priority takes its room on the node.
        pytest.param(10, None, id="equal-priority-counts-the-nominated-pod"),
        pytest.param(5, None, id="lower-priority-counts-the-nominated-pod"),
        pytest.param(20, "node-a", id="higher-priority-ignores-the-nominated-pod"),
    ],
)
async def test_a_nominated_pod_keeps_its_room_from_other_pods(priority: int, expected_node: str | None) -> None:
    scheduler, cluster, _ = make_scheduler()
    add_nodes(scheduler, cluster, [four_cpu("node-a")])
    # Nominated to node-a (a preemption's outcome); held back by a scheduling gate here so that
    # it stays pending and nominated while the other pod is scheduled.
    nominated = make_pod().name("nominated").uid("nominated").priority(10).req(cpu="3").nominated_node_name("node-a")
    add_pods(scheduler, cluster, [nominated.scheduling_gates("wait").obj()])
    add_pods(scheduler, cluster, [make_pod().name("other").uid("other").priority(priority).req(cpu="2").obj()])
    await scheduler.run_until_idle()
    assert node_of(cluster, "other") == expected_node


@pytest.mark.parametrize(
    ("nominated_to", "expected_node"),
    [
        # node-c scores lowest (half its CPU is used), yet the pod goes back to it.
        pytest.param("node-c", "node-c", id="the-nominated-node-is-tried-first"),
        # The nominated node no longer fits: the full search (node-a and node-b tie).
        pytest.param("node-full", {"node-a", "node-b"}, id="a-nominated-node-that-no-longer-fits-falls-back"),
        pytest.param("node-gone", {"node-a", "node-b"}, id="a-nominated-node-that-is-gone-falls-back"),
    ],
)
async def test_the_nominated_node_is_evaluated_before_the_others(
    nominated_to: str, expected_node: str | set[str]
) -> None:
    scheduler, cluster, _ = make_scheduler()
    add_nodes(scheduler, cluster, [four_cpu(n) for n in ("node-a", "node-b", "node-c", "node-full")])
    add_pods(
        scheduler,
        cluster,
        [
            make_pod().name("half").uid("half").req(cpu="2").node("node-c").obj(),
            make_pod().name("full").uid("full").req(cpu="4").node("node-full").obj(),
        ],
    )
    pod = make_pod().name("p").uid("p").req(cpu="1").nominated_node_name(nominated_to)
    add_pods(scheduler, cluster, [pod.obj()])
    await scheduler.run_until_idle()
    node = node_of(cluster, "p")
    assert node in expected_node if isinstance(expected_node, set) else node == expected_node
    # Once the pod is assumed its nomination is over (upstream ``assume``).
    assert scheduler.queue.nominator.nominated_node_for(pod.info().uid) is None


async def test_evaluating_the_nominated_node_leaves_the_rotating_start_index_alone() -> None:
    """``evaluateNominatedNode`` returns before ``nextStartNodeIndex`` is advanced."""
    scheduler, cluster, _ = make_scheduler({"percentageOfNodesToScore": 50})
    add_nodes(scheduler, cluster, [four_cpu(f"node-{i}") for i in range(200)])
    add_pods(scheduler, cluster, [make_pod().name("p").uid("p").req(cpu="1").nominated_node_name("node-150").obj()])
    await scheduler.run_until_idle()
    assert node_of(cluster, "p") == "node-150"
    # A full search would have examined 100 nodes and moved the index to 100.
    assert scheduler.algorithm.next_start_node_index == 0
