"""The per-node statuses of a failed attempt (upstream ``findNodesThatPassFilters``: each
rejected node's status from ``RunFilterPluginsWithNominatedPods``).

The batch Filter pass only says which nodes fail; the diagnosis then asks the plugins why,
plugin by plugin over the rejected nodes. Each node's status must still be the one the
per-node Filter chain gives: the first plugin in Filter order that rejects it, with that
plugin's code and reasons, whether the plugin has a batch form (NodeUnschedulable,
TaintToleration, NodeAffinity, NodeResourcesFit) or runs per node only (NodePorts). The queue's
hints key on ``unschedulable_plugins``, and the FailedScheduling message counts the reasons.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import Code, CycleState, PodInfo
from scheduler_core.framework.diagnosis import FitError
from tests.unit.scheduling.support import add_nodes, add_pods, make_scheduler
from tests.wrappers import node, pod

ZONE_A = {"zone": "a"}
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
UNSCHEDULABLE = Code.UNSCHEDULABLE
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE

NODES = [
    node("cordoned-tainted", unschedulable=True, taints=[TAINT], labels=ZONE_A),
    node("tainted-small", cpu="1", taints=[TAINT], labels=ZONE_A),
    node("elsewhere", labels={"zone": "b"}),
    node("elsewhere-small", cpu="1", labels={"zone": "b"}),
    node("ports-small", cpu="1", labels=ZONE_A),
    node("small", cpu="1", labels=ZONE_A),
    node("small-both", cpu="1", memory="1Gi", labels=ZONE_A),
    node("full", cpu="4", labels=ZONE_A),
]
BOUND = [
    pod("web", uid="web", node_name="ports-small", host_ports=[8080]),
    pod("hog", uid="hog", node_name="full", cpu="3500m"),
]
# node -> (plugin, code, reasons): the first rejecting plugin in the default Filter order
# (NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit, ...).
EXPECTED = {
    "cordoned-tainted": ("NodeUnschedulable", UNRESOLVABLE, ("node(s) were unschedulable",)),
    "tainted-small": ("TaintToleration", UNRESOLVABLE, ("node(s) had untolerated taint(s)",)),
    "elsewhere": ("NodeAffinity", UNRESOLVABLE, ("node(s) didn't match Pod's node affinity/selector",)),
    "elsewhere-small": ("NodeAffinity", UNRESOLVABLE, ("node(s) didn't match Pod's node affinity/selector",)),
    "ports-small": ("NodePorts", UNSCHEDULABLE, ("node(s) didn't have free ports for the requested pod ports",)),
    # v1.36: a request above the node's whole allocatable cannot be helped by preemption.
    "small": ("NodeResourcesFit", UNRESOLVABLE, ("Insufficient cpu",)),
    "small-both": ("NodeResourcesFit", UNRESOLVABLE, ("Insufficient cpu", "Insufficient memory")),
    "full": ("NodeResourcesFit", UNSCHEDULABLE, ("Insufficient cpu",)),
}
MESSAGE = (  # upstream sorts the "count reason" strings
    "0/8 nodes are available: 1 Insufficient memory, "
    "1 node(s) didn't have free ports for the requested pod ports, "
    "1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, "
    "2 node(s) didn't match Pod's node affinity/selector, 3 Insufficient cpu."
)


def _failed_attempt(batch: bool) -> FitError:
    scheduler, cluster, _ = make_scheduler(batch=batch)
    add_nodes(scheduler, cluster, NODES)
    add_pods(scheduler, cluster, BOUND)
    info = PodInfo(pod("p", uid="p", cpu="2", memory="2Gi", node_selector=ZONE_A, host_ports=[8080]))
    fwk = scheduler.profiles.for_pod(info)
    assert fwk is not None
    assert bool(fwk.batch_filter_plugins) is batch
    with pytest.raises(FitError) as caught:
        scheduler.algorithm.schedule_pod(fwk, CycleState(), info, scheduler.cache.update_snapshot())
    return caught.value


def _statuses(error: FitError) -> dict[str, tuple[str, Code, tuple[str, ...]]]:
    return {name: (s.plugin, s.code, s.reasons) for name, s in error.diagnosis.node_to_status.items()}


@pytest.mark.parametrize("batch", [pytest.param(True, id="batch"), pytest.param(False, id="per-node")])
def test_each_rejected_node_has_the_status_of_its_first_rejecting_plugin(batch: bool) -> None:
    error = _failed_attempt(batch)
    assert _statuses(error) == EXPECTED
    assert error.diagnosis.unschedulable_plugins == {
        "NodeUnschedulable",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
    }
    assert str(error) == MESSAGE


def test_batch_diagnosis_equals_the_per_node_chain_in_search_order() -> None:
    batch, per_node = _failed_attempt(True), _failed_attempt(False)
    # The search order decides preemption's candidate order: the mapping's order is kept too.
    assert list(_statuses(batch).items()) == list(_statuses(per_node).items())


def test_nodes_rejected_alike_share_one_status() -> None:
    statuses: dict[str, Any] = _failed_attempt(True).diagnosis.node_to_status
    assert statuses["elsewhere"] is statuses["elsewhere-small"]
