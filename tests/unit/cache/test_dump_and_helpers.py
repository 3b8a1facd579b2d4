"""``Cache.dump`` (upstream ``Dump``: nodes and assumed pods) and ``new_snapshot``
(upstream ``NewSnapshot`` in ``snapshot.go``)."""

from __future__ import annotations

import json

from scheduler_core.cache import new_snapshot
from tests import wrappers
from tests.unit.cache.steps import check_consistent, new_cache, pod_spec, run, zone_labels


def test_dump_shows_nodes_placeholders_and_assumed_pods() -> None:
    cache, clock = new_cache("n1")
    run(cache, clock, ("assume", "p", "n1"))
    run(cache, clock, ("add", "q", "ghost"))
    dump = cache.dump()
    json.dumps(dump)  # JSON-ready
    assert dump["assumedPods"] == {"uid-p": {"pod": "default/p", "node": "n1"}}
    n1 = dump["nodes"]["n1"]
    assert n1["placeholder"] is False
    assert n1["pods"] == n1["assumedPods"] == ["default/p"]
    assert n1["requested"]["milliCPU"] == 500
    assert n1["allocatable"] == {"milliCPU": 4000, "memory": 32 * 1024**3, "ephemeralStorage": 0, "pods": 110}
    assert n1["snapshotRow"] == -1  # no snapshot taken yet
    ghost = dump["nodes"]["ghost"]
    assert ghost["placeholder"] is True
    assert ghost["nonZeroRequested"]["milliCPU"] == 100
    assert dump["snapshotStale"] is True
    cache.update_snapshot()
    assert cache.dump()["snapshotStale"] is False
    assert cache.dump()["nodes"]["n1"]["snapshotRow"] == 0


def test_new_snapshot_places_pods_and_leaves_out_unknown_nodes() -> None:
    snapshot = new_snapshot(
        [
            wrappers.node("a1", labels=zone_labels("r/a")),
            wrappers.node("a2", labels=zone_labels("r/a")),
            wrappers.node("b1", labels=zone_labels("r/b")),
        ],
        [
            wrappers.pod_info("p", node_name="a2", **pod_spec("p")),
            wrappers.pod_info("x", node_name="b1", **pod_spec("x")),
            wrappers.pod_info("q", node_name="elsewhere", **pod_spec("q")),
        ],
    )
    assert [i.name for i in snapshot.list()] == ["a1", "b1", "a2"]
    a2 = snapshot.get("a2")
    assert a2 is not None and [p.name for p in a2.pods] == ["p"]
    assert [i.name for i in snapshot.have_pods_with_required_anti_affinity()] == ["b1"]
    assert snapshot.get("elsewhere") is None
    assert sum(len(i.pods) for i in snapshot.list()) == 2
    cache, _ = new_cache()
    check_consistent(cache, snapshot)
