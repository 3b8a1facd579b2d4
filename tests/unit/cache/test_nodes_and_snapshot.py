"""Nodes in the cache (placeholders included) and when the snapshot is rebuilt.

Upstream: ``pkg/scheduler/backend/cache/cache.go`` (AddNode, UpdateNode, RemoveNode and the
"imaginary"/ghost NodeInfo kept for pods whose node is unknown or deleted; UpdateSnapshot
re-creating the node list only when nodes were added or removed) and its ``cache_test.go``
(TestNodeOperators, TestSchedulerCache_UpdateSnapshot, TestRemovePod with a deleted node).
Here a snapshot is rebuilt (a new object with new columns) exactly when the node set or
order changed; every other change updates NodeInfos and columns rows in place.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest

from scheduler_core.cache import Cache, Snapshot
from tests import wrappers
from tests.unit.cache.steps import Step, check_consistent, new_cache, run, zone_labels

NODES = [
    pytest.param(
        [("add", "p", "n3")],
        ["n1", "n2"],
        {"n3": True},
        False,
        id="pod-on-unknown-node-gets-a-placeholder",
    ),
    pytest.param(
        [("add", "p", "n3"), ("node+", "n3")],
        ["n1", "n2", "n3"],
        {"n3": False},
        True,
        id="node-arrives-after-its-pod",
    ),
    pytest.param(
        [("assume", "p", "n3"), ("forget", "p", "n3")],
        ["n1", "n2"],
        {"n3": None},
        False,
        id="placeholder-goes-with-its-last-pod",
    ),
    pytest.param(
        [("add", "p", "n1"), ("node-", "n1")],
        ["n2"],
        {"n1": True},
        True,
        id="removed-node-with-pods-stays-as-placeholder",
    ),
    pytest.param(
        [("add", "p", "n1"), ("node-", "n1"), ("remove", "p", "n1")],
        ["n2"],
        {"n1": None},
        True,
        id="removed-node-goes-with-its-last-pod",
    ),
    pytest.param([("node-", "n1")], ["n2"], {"n1": None}, True, id="remove-empty-node"),
    pytest.param(
        [("add", "p", "n1"), ("node-", "n1"), ("node+", "n1")],
        ["n2", "n1"],
        {"n1": False},
        True,
        id="re-added-node-keeps-its-pods",
    ),
    pytest.param([("node~", "n1", "", "8")], ["n1", "n2"], {"n1": False}, False, id="update-allocatable"),
    pytest.param([("node+", "n1", "", "8")], ["n1", "n2"], {"n1": False}, False, id="re-list-is-an-update"),
    pytest.param([("node~", "n3", "", "8")], ["n1", "n2", "n3"], {"n3": False}, True, id="update-unknown-node-adds"),
    pytest.param(
        [("add", "p", "n3"), ("node~", "n3")],
        ["n1", "n2", "n3"],
        {"n3": False},
        True,
        id="update-of-placeholder-adds",
    ),
    pytest.param(
        [("node+", "n3", "r/b"), ("node~", "n1", "r/b")],
        ["n2", "n3", "n1"],
        {"n1": False},
        True,
        id="zone-change-moves-node",
    ),
]


@pytest.mark.parametrize(("steps", "names", "placeholders", "rebuilt"), NODES)
def test_nodes(steps: list[Step], names: list[str], placeholders: dict[str, bool | None], rebuilt: bool) -> None:
    cache, clock = new_cache("n1", "n2")
    first = cache.update_snapshot()
    first_columns = first.columns
    for step in steps:
        run(cache, clock, step)
    snapshot = cache.update_snapshot()
    assert [i.name for i in snapshot.list()] == names
    assert (snapshot is not first) is rebuilt
    assert (snapshot.columns is not first_columns) is rebuilt
    for name, placeholder in placeholders.items():
        info = cache.get_node(name)
        if placeholder is None:
            assert info is None
            continue
        assert info is not None
        assert (info.node is None) is placeholder
        assert (snapshot.get(name) is None) is placeholder
        if placeholder:
            assert info.columns is None or info.columns is not snapshot.columns
    assert cache.node_count() == len(names) + sum(1 for p in placeholders.values() if p)
    check_consistent(cache, snapshot)
    assert cache.update_snapshot() is snapshot  # nothing changed since


def test_update_node_rewrites_the_row_in_place() -> None:
    cache, clock = new_cache("n1", "n2")
    snapshot = cache.update_snapshot()
    run(cache, clock, ("add", "p", "n1"))
    cache.update_node(
        None, wrappers.node("n1", cpu="8", unschedulable=True, taints=[{"key": "k", "effect": "NoSchedule"}])
    )
    assert cache.update_snapshot() is snapshot
    info = snapshot.get("n1")
    assert info is not None
    assert int(snapshot.columns.alloc_cpu[info.row]) == 8000
    assert bool(snapshot.columns.unschedulable[info.row])
    assert [str(t) for t in snapshot.columns.taints().taints] == ["k=:NoSchedule"]
    assert int(snapshot.columns.req_cpu[info.row]) == 500  # pods kept
    check_consistent(cache, snapshot)


def test_rebuild_detaches_the_old_columns() -> None:
    cache, clock = new_cache("n1", "n2")
    old = cache.update_snapshot()
    n1 = old.get("n1")
    n2 = old.get("n2")
    assert n1 is not None and n2 is not None
    run(cache, clock, ("node-", "n2"))
    new = cache.update_snapshot()
    assert n1.columns is new.columns and n1.row == 0
    assert n2.columns is None and n2.row == -1
    assert old.get("n2") is None  # a removed node is gone from an older snapshot too
    run(cache, clock, ("add", "p", "n1"))
    assert int(new.columns.req_cpu[0]) == 500
    assert int(old.columns.req_cpu[0]) == 0  # the detached columns no longer follow


def test_snapshot_lists_nodes_round_robin_over_zones() -> None:
    cache = Cache()
    for name, zone in [("a1", "r/a"), ("a2", "r/a"), ("a3", "r/a"), ("b1", "r/b"), ("c1", "r/c"), ("c2", "r/c")]:
        cache.add_node(wrappers.node(name, labels=zone_labels(zone)))
    snapshot = cache.update_snapshot()
    assert [i.name for i in snapshot.list()] == ["a1", "b1", "c1", "a2", "c2", "a3"]
    assert snapshot.columns.names == ["a1", "b1", "c1", "a2", "c2", "a3"]
    check_consistent(cache, snapshot)


@pytest.mark.parametrize(
    ("steps", "affinity", "anti"),
    [
        pytest.param([("add", "a", "n2")], ["n2"], [], id="required-affinity"),
        pytest.param([("add", "x", "n2"), ("add", "a", "n1")], ["n1", "n2"], ["n2"], id="lists-in-snapshot-order"),
        pytest.param([("add", "s", "n1")], ["n1"], [], id="preferred-anti-affinity-is-not-required"),
        pytest.param([("assume", "x", "n1")], ["n1"], ["n1"], id="assumed-pods-count"),
        pytest.param([("add", "x", "n1"), ("remove", "x", "n1")], [], [], id="removed"),
        pytest.param([("add", "a", "n3")], [], [], id="placeholder-is-not-listed"),
        pytest.param([("add", "a", "n3"), ("node+", "n3")], ["n3"], [], id="listed-once-node-arrives"),
        pytest.param([("add", "x", "n1"), ("node-", "n1")], [], [], id="removed-node-is-not-listed"),
        pytest.param([("add", "p", "n1")], [], [], id="no-affinity"),
    ],
)
def test_have_pods_with_affinity(steps: list[Step], affinity: list[str], anti: list[str]) -> None:
    cache, clock = new_cache("n1", "n2")
    for step in steps:
        run(cache, clock, step)
        check_consistent(cache, cache.update_snapshot())
    snapshot = cache.update_snapshot()
    assert [i.name for i in snapshot.have_pods_with_affinity()] == affinity
    assert [i.name for i in snapshot.have_pods_with_required_anti_affinity()] == anti
    fresh = cache.update_snapshot()
    fresh.affinity_changed()  # the lists not derived: any_pods_with_* answer on their own
    assert fresh.any_pods_with_affinity() == bool(affinity)
    assert fresh.any_pods_with_required_anti_affinity() == bool(anti)


class _Counted(Mapping[str, int]):
    """Counters that count how many node names were looked at, by any route."""

    def __init__(self, counts: dict[str, int]) -> None:
        self._counts = counts
        self.looked = 0

    def __getitem__(self, name: str) -> int:
        self.looked += 1
        return self._counts[name]

    def __iter__(self) -> Iterator[str]:
        for name in self._counts:
            self.looked += 1
            yield name

    def __len__(self) -> int:
        return len(self._counts)


def test_any_pods_with_affinity_looks_only_at_nodes_that_have_such_pods() -> None:
    # SchedulingBasic at 5,000 nodes ran 2.5x slower when each cycle's PreFilter and PreScore
    # asked every node's counter (bench/run.py, 1,522 -> 605 pods/s, 48a6cbc).
    cache, _ = new_cache(*(f"n{i}" for i in range(500)))
    infos = cache.update_snapshot().list()
    none, last = _Counted({}), _Counted({"n499": 1, "gone": 2})
    snapshot = Snapshot(infos, pods_with_affinity=none, pods_with_required_anti_affinity=last)
    assert not snapshot.any_pods_with_affinity()
    assert snapshot.any_pods_with_required_anti_affinity()
    assert none.looked == 0
    assert last.looked <= 4
    assert [i.name for i in snapshot.have_pods_with_required_anti_affinity()] == ["n499"]


def test_affinity_lists_are_rederived_only_when_a_node_flips() -> None:
    cache, clock = new_cache("n1", "n2")
    snapshot = cache.update_snapshot()
    run(cache, clock, ("add", "x", "n1"))
    affinity, anti = snapshot.have_pods_with_affinity(), snapshot.have_pods_with_required_anti_affinity()
    run(cache, clock, ("add", "p", "n1"))  # no affinity: nothing to re-derive
    run(cache, clock, ("add", "a1", "n1"))  # n1 already listed in the affinity list
    assert snapshot.have_pods_with_affinity() is affinity
    assert snapshot.have_pods_with_required_anti_affinity() is anti
    run(cache, clock, ("add", "a2", "n2"))  # n2 starts having affinity pods
    assert [i.name for i in snapshot.have_pods_with_affinity()] == ["n1", "n2"]
    assert snapshot.have_pods_with_required_anti_affinity() is anti
    run(cache, clock, ("remove", "x", "n1"))  # n1 keeps "a1", loses its only anti-affinity pod
    assert [i.name for i in snapshot.have_pods_with_affinity()] == ["n1", "n2"]
    assert list(snapshot.have_pods_with_required_anti_affinity()) == []


def test_image_states_are_shared_across_nodes() -> None:
    cache, _ = new_cache()
    image = {"names": ["registry/app:1", "registry/app@sha256:abc"], "sizeBytes": 500}
    cache.add_node(wrappers.node("n1", images=[image]))
    cache.add_node(wrappers.node("n2", images=[image, {"names": ["other:1"], "sizeBytes": 7}]))
    n1 = cache.get_node("n1")
    assert n1 is not None
    state = n1.image_states["registry/app:1"]
    assert (state.size, state.num_nodes) == (500, 2)
    assert n1.image_states["registry/app@sha256:abc"].num_nodes == 2
    assert "other:1" not in n1.image_states
    cache.remove_node("n2")
    assert state.num_nodes == 1
    cache.update_node(None, wrappers.node("n1"))  # the image is gone from n1 too
    assert n1.image_states == {}
    assert cache.dump()["images"] == 0


def test_snapshot_is_a_snapshot_lister() -> None:
    from scheduler_core.framework import SnapshotLister

    cache, _ = new_cache("n1")
    lister: SnapshotLister = cache.update_snapshot()
    assert isinstance(lister, Snapshot)
    assert lister.get("missing") is None
    assert len(lister.list()) == 1
