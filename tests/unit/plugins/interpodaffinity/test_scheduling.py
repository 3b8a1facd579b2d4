"""InterPodAffinity inside the whole scheduler (default profile, batch and per-node runtimes):
placements, the FailedScheduling message, and requeueing by its queueing hints."""

from __future__ import annotations

from typing import Any

from scheduler_core.plugins.interpodaffinity import InterPodAffinity
from tests.unit.plugins.interpodaffinity.helpers import affinity, term, weighted
from tests.unit.scheduling.support import add_nodes, add_pods, make_scheduler, node_of
from tests.wrappers import expr, node, pod, selector

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
PLUGINS = {InterPodAffinity.name: InterPodAffinity}


def app(name: str) -> dict[str, Any]:
    return selector(expr("app", "In", name))


# A replica that refuses to share a node with another replica.
REPLICA = affinity(anti_required=[term(app("web"), HOSTNAME)])


async def test_required_anti_affinity_spreads_replicas_and_waits_for_a_new_node() -> None:
    scheduler, cluster, _ = make_scheduler(extra_plugins=PLUGINS)
    add_nodes(scheduler, cluster, [node(f"n{i}") for i in range(3)])
    add_pods(
        scheduler, cluster, [pod(f"web-{i}", uid=f"web-{i}", labels={"app": "web"}, affinity=REPLICA) for i in range(4)]
    )
    await scheduler.run_until_idle()
    placed = [node_of(cluster, f"web-{i}") for i in range(4)]
    assert sorted(n for n in placed if n) == ["n0", "n1", "n2"]
    stuck = next(f"web-{i}" for i, n in enumerate(placed) if n is None)
    events = cluster.events_for("default", stuck)
    assert events[-1].reason == "FailedScheduling"
    assert events[-1].message.startswith("0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules.")
    # A new node is the hinted event (anti-affinity: any node added may help).
    add_nodes(scheduler, cluster, [node("n3")])
    await scheduler.run_until_idle()
    assert node_of(cluster, stuck) == "n3"


async def test_existing_pods_anti_affinity_repels_a_pod_without_affinity() -> None:
    scheduler, cluster, _ = make_scheduler(extra_plugins=PLUGINS)
    add_nodes(scheduler, cluster, [node("a", labels={ZONE: "z1"}), node("b", labels={ZONE: "z2"})])
    guard = pod("guard", uid="guard", node_name="a", affinity=affinity(anti_required=[term(app("noisy"), ZONE)]))
    add_pods(scheduler, cluster, [guard, pod("noisy", uid="noisy", labels={"app": "noisy"})])
    await scheduler.run_until_idle()
    assert node_of(cluster, "noisy") == "b"


async def test_required_affinity_follows_the_matching_pod_and_requeues_when_it_arrives() -> None:
    scheduler, cluster, _ = make_scheduler(extra_plugins=PLUGINS)
    add_nodes(
        scheduler,
        cluster,
        [node("a", labels={ZONE: "z1"}), node("b", labels={ZONE: "z2"}), node("c", labels={ZONE: "z2"})],
    )
    web = pod("web", uid="web", affinity=affinity(required=[term(app("db"), ZONE)]))
    add_pods(scheduler, cluster, [web])
    await scheduler.run_until_idle()
    assert node_of(cluster, "web") is None
    assert cluster.events_for("default", "web")[-1].message.startswith(
        "0/3 nodes are available: 3 node(s) didn't match pod affinity rules."
    )
    # The db pod lands on c (zone z2): the web pod is requeued and joins zone z2.
    add_pods(scheduler, cluster, [pod("db", uid="db", labels={"app": "db"}, node_selector={HOSTNAME: "c"})])
    await scheduler.run_until_idle()
    assert node_of(cluster, "db") == "c"
    assert node_of(cluster, "web") in {"b", "c"}


async def test_first_pod_of_a_self_affine_group_is_not_blocked() -> None:
    scheduler, cluster, _ = make_scheduler(extra_plugins=PLUGINS)
    add_nodes(scheduler, cluster, [node("a", labels={ZONE: "z1"}), node("b", labels={ZONE: "z2"})])
    group = [
        pod(f"g{i}", uid=f"g{i}", labels={"app": "g"}, affinity=affinity(required=[term(app("g"), ZONE)]))
        for i in range(3)
    ]
    add_pods(scheduler, cluster, group)
    await scheduler.run_until_idle()
    zones = {node_of(cluster, f"g{i}") for i in range(3)}
    assert None not in zones
    assert len({"z1" if z == "a" else "z2" for z in zones}) == 1


async def test_preferred_affinity_outweighs_least_allocated_spreading() -> None:
    """Without the plugin the resource scorers would spread these pods; the preferred affinity
    (normalized to 100, weight 2 in the default profile) keeps them together."""
    scheduler, cluster, _ = make_scheduler(extra_plugins=PLUGINS)
    add_nodes(scheduler, cluster, [node(f"n{i}") for i in range(3)])
    soft = affinity(preferred=[weighted(100, term(app("api"), HOSTNAME))])
    for i in range(3):
        add_pods(scheduler, cluster, [pod(f"api-{i}", uid=f"api-{i}", labels={"app": "api"}, affinity=soft)])
        await scheduler.run_until_idle()
    assert len({node_of(cluster, f"api-{i}") for i in range(3)}) == 1
