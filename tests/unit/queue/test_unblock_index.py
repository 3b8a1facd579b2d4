"""The unschedulable pool's unblock index hands an assigned pod's pre-check exactly the pods a
scan of the whole pool would pass (``may_unblock``), in the pool's order, on random pools that
change between events (pods re-added with other rejectors, deleted, gated)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_core.framework import ASSIGNED_POD_ADD, ActionType, ClusterEvent, EventResource, PodInfo
from scheduler_core.plugins.names import INTER_POD_AFFINITY, NODE_RESOURCES_FIT, POD_TOPOLOGY_SPREAD
from scheduler_core.queue.pod_events import may_unblock
from scheduler_core.queue.queued import QueuedPod
from scheduler_core.queue.unschedulable import UnschedulablePods
from tests.wrappers import pod_info

NAMESPACES = ("a", "b")
KEYS = ("app", "tier")
VALUES = ("x", "y", "z")
EVENTS = (ASSIGNED_POD_ADD, ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_LABEL))
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

labels = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2)
expression = st.one_of(
    st.builds(lambda k, v: {"key": k, "operator": "In", "values": v}, st.sampled_from(KEYS),
              st.lists(st.sampled_from(VALUES), min_size=1, max_size=2, unique=True)),
    st.builds(lambda k, v: {"key": k, "operator": "NotIn", "values": [v]}, st.sampled_from(KEYS),
              st.sampled_from(VALUES)),
    st.builds(lambda k, op: {"key": k, "operator": op}, st.sampled_from(KEYS),
              st.sampled_from(["Exists", "DoesNotExist"])),
    st.just({"key": "app", "operator": "In", "values": []}),  # does not parse: no terms
)  # fmt: skip
selector = st.one_of(
    st.builds(lambda m: {"matchLabels": m}, labels),
    st.builds(lambda e: {"matchExpressions": e}, st.lists(expression, min_size=1, max_size=2)),
    st.none(),  # selects nothing
)
term = st.builds(
    lambda sel, ns, nss: {
        "topologyKey": "zone",
        **({} if sel is None else {"labelSelector": sel}),
        **({} if ns is None else {"namespaces": ns}),
        **({} if nss is None else {"namespaceSelector": nss}),
    },
    selector,
    st.one_of(st.none(), st.lists(st.sampled_from(NAMESPACES), max_size=2)),
    st.one_of(st.none(), st.just({}), st.just({"matchLabels": {"team": "t"}})),
)


@st.composite
def pending_pods(draw: Any, name: str) -> QueuedPod:
    terms = draw(st.lists(term, max_size=2))
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}} if terms else None
    pod = pod_info(name, uid=f"uid-{name}", namespace=draw(st.sampled_from(NAMESPACES)), affinity=affinity)
    rejectors = draw(
        st.sets(st.sampled_from([INTER_POD_AFFINITY, POD_TOPOLOGY_SPREAD, NODE_RESOURCES_FIT]), min_size=1)
    )
    qp = QueuedPod(pod_info=pod, unschedulable_plugins=set(rejectors))
    if draw(st.integers(0, 5)) == 0:
        qp.set_gating("Gate", draw(st.sampled_from([(ASSIGNED_POD_ADD,), ()])))
    return qp


@st.composite
def assigned_pods(draw: Any, name: str) -> PodInfo:
    namespace = draw(st.sampled_from(NAMESPACES))
    return pod_info(name, uid=f"uid-{name}", namespace=namespace, node_name="n", labels=draw(labels))


@SETTINGS
@given(st.data())
def test_unblock_candidates_equal_the_scan_of_the_pool(data: Any) -> None:
    pool = UnschedulablePods()
    names = [f"p{i}" for i in range(data.draw(st.integers(1, 12)))]
    for name in names:
        pool.add_or_update(data.draw(pending_pods(name)))
    for i in range(data.draw(st.integers(1, 6))):
        change = data.draw(st.sampled_from(["re-add", "delete", "none"]))
        name = data.draw(st.sampled_from(names))
        if change == "re-add":
            pool.add_or_update(data.draw(pending_pods(name)))
        elif change == "delete":
            for namespace in NAMESPACES:
                pool.delete(f"{namespace}/{name}")
        assigned = data.draw(assigned_pods(f"bound-{i}"))
        event = data.draw(st.sampled_from(EVENTS))
        ns_labels = data.draw(st.sampled_from([{}, {"team": "t"}]))

        def passes(qp: QueuedPod, assigned: PodInfo = assigned, ns_labels: dict[str, str] = ns_labels) -> bool:
            return may_unblock(qp.pod_info, qp.unschedulable_plugins, assigned, ns_labels)

        scanned = [qp.key for qp in pool.candidates(event) if passes(qp)]
        indexed = [qp.key for qp in pool.unblock_candidates(event, assigned) if passes(qp)]
        assert indexed == scanned
