"""What-if: the same snapshot under the live profiles and with candidates overlaid."""

from __future__ import annotations

import json

from scheduler_core.simulator.whatif import compare, overlay, render_json, render_table
from tests.unit.simulator.support import load, most_allocated, profile
from tests.wrappers import node, pod

LIVE_DEFAULT = profile("default", schedulerName="crd-scheduler")
CANDIDATE = most_allocated("default")  # same key: replaces the live profile


def _live(*pods: object):  # type: ignore[no-untyped-def]
    return load(*(node(f"n{i}", cpu="4", memory="8Gi") for i in range(1, 5)), LIVE_DEFAULT, *pods)


def test_most_allocated_packs_pending_pods_onto_fewer_nodes_and_says_so() -> None:
    live = _live(*(pod(f"web-{i}", cpu="500m", memory="512Mi") for i in range(4)))
    result = compare(live, load(CANDIDATE))
    assert {p.live_node for p in result.placements} == {"n1", "n2", "n3", "n4"}  # spread
    assert len({p.candidate_node for p in result.placements}) == 1  # packed
    assert (result.nodes_used_before, result.nodes_used_after) == (4, 1)
    assert result.summary().endswith("nodes used 4 -> 1 (toward fewer nodes)")
    assert len(result.moves) == 3
    packed = next(p.candidate_node for p in result.placements)
    assert packed is not None
    assert result.after[packed].cpu == 0.5 and result.after[packed].pods == 4
    assert result.before[packed].pods == 1
    table = render_table(result)
    assert "moved" in table and "toward fewer nodes" in table
    data = json.loads(render_json(result))
    assert data["nodesUsed"] == {"live": 4, "candidate": 1}
    assert data["pods"][0]["live"]["scores"]  # the same per-pod report as simulate's


def test_replace_all_places_bound_pods_again_under_both() -> None:
    live = _live(*(pod(f"web-{i}", cpu="500m", node_name=f"n{i + 1}") for i in range(4)))
    assert compare(live, load(CANDIDATE)).placements == []  # nothing pending
    result = compare(live, load(CANDIDATE), replace_all=True)
    assert len(result.placements) == 4
    assert (result.nodes_used_before, result.nodes_used_after) == (4, 1)


def test_pods_no_profile_handles_stay_where_they_are_under_replace_all() -> None:
    live = _live(pod("system", cpu="1", node_name="n4", scheduler_name="default-scheduler"))
    result = compare(live, load(CANDIDATE), replace_all=True)
    assert result.placements == []
    assert result.after["n4"].pods == result.before["n4"].pods == 1


def test_overlay_replaces_same_key_and_adds_new_ones() -> None:
    live = _live()
    merged = overlay(live, load(CANDIDATE, most_allocated("packing", namespace="team-a")))
    assert [str(p.key) for p in merged.profiles] == ["crd-scheduler/default", "team-a/packing"]
    assert merged.profiles[0].spec.plugin_config[0].name == "NodeResourcesFit"
    assert merged.nodes is live.nodes


def test_namespace_limits_the_pods_placed_and_compared() -> None:
    live = _live(
        *(pod(f"web-{i}", cpu="500m") for i in range(2)),
        *(pod(f"other-{i}", "team-b", cpu="500m") for i in range(2)),
        *(pod(f"bound-{i}", "team-b", cpu="500m", node_name="n1") for i in range(2)),
    )  # fmt: skip
    result = compare(live, load(CANDIDATE), namespace="default", replace_all=True)
    assert [(p.namespace, p.name) for p in result.placements] == [("default", "web-0"), ("default", "web-1")]
    assert result.after["n1"].pods >= 2  # team-b's bound pods stayed put
