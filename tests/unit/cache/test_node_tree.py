"""The node tree and the zone key.

Tables ported from upstream ``pkg/scheduler/backend/cache/node_tree_test.go`` (TestNodeTree_AddNode,
_RemoveNode, _UpdateNode, _List, TestNodeTreeMultiOperations) and the behaviour of
``GetZoneKey`` in ``k8s.io/component-helpers/node/topology/helpers.go``.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.cache import CacheError, NodeTree, get_zone_key

REGION = "topology.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"


def n(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": dict(labels)}}


def labelled(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


ALL = [
    n("node-0"),
    labelled("node-1", {REGION: "region-1"}),
    labelled("node-2", {ZONE: "zone-2"}),
    labelled("node-3", {REGION: "region-1", ZONE: "zone-2"}),
    labelled("node-4", {REGION: "region-1", ZONE: "zone-2"}),
    labelled("node-5", {REGION: "region-1", ZONE: "zone-3"}),
    labelled("node-6", {REGION: "region-2", ZONE: "zone-2"}),
    labelled("node-7", {REGION: "region-2", ZONE: "zone-2"}),
    labelled("node-8", {REGION: "region-2", ZONE: "zone-2"}),
    labelled("node-9", {REGION: "region-2", ZONE: "zone-2", BETA_REGION: "region-2", BETA_ZONE: "zone-2"}),
    labelled("node-10", {BETA_REGION: "region-2", BETA_ZONE: "zone-3"}),
]


def verify(tree: NodeTree, expected: dict[str, list[str]]) -> None:
    assert tree.tree == expected
    assert tree.num_nodes == sum(len(v) for v in expected.values())
    assert sorted(tree.zones) == sorted(expected)


@pytest.mark.parametrize(
    ("labels", "key"),
    [
        pytest.param({}, "", id="no-labels"),
        pytest.param({REGION: "r"}, "r:\x00:", id="region-only"),
        pytest.param({ZONE: "z"}, ":\x00:z", id="zone-only"),
        pytest.param({REGION: "r", ZONE: "z"}, "r:\x00:z", id="region-and-zone"),
        pytest.param({BETA_REGION: "br", BETA_ZONE: "bz", REGION: "r", ZONE: "z"}, "br:\x00:bz", id="beta-labels-win"),
        pytest.param({BETA_ZONE: "", ZONE: "z"}, "", id="empty-beta-zone-still-wins"),
        pytest.param({REGION: "", ZONE: ""}, "", id="empty-values"),
    ],
)
def test_zone_key(labels: dict[str, str], key: str) -> None:
    assert get_zone_key(labelled("x", labels)) == key


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        pytest.param(ALL[:1], {"": ["node-0"]}, id="single-node-no-labels"),
        pytest.param([ALL[0], ALL[0]], {"": ["node-0"]}, id="same-node-twice"),
        pytest.param(
            ALL[:4],
            {
                "": ["node-0"],
                "region-1:\x00:": ["node-1"],
                ":\x00:zone-2": ["node-2"],
                "region-1:\x00:zone-2": ["node-3"],
            },
            id="mixed-labels",
        ),
        pytest.param(
            ALL[:7],
            {
                "": ["node-0"],
                "region-1:\x00:": ["node-1"],
                ":\x00:zone-2": ["node-2"],
                "region-1:\x00:zone-2": ["node-3", "node-4"],
                "region-1:\x00:zone-3": ["node-5"],
                "region-2:\x00:zone-2": ["node-6"],
            },
            id="zones-with-several-nodes",
        ),
        pytest.param(
            ALL[9:],
            {"region-2:\x00:zone-2": ["node-9"], "region-2:\x00:zone-3": ["node-10"]},
            id="deprecated-labels",
        ),
    ],
)
def test_add_node(nodes: list[dict[str, Any]], expected: dict[str, list[str]]) -> None:
    tree = NodeTree()
    for node in nodes:
        tree.add_node(node)
    verify(tree, expected)


@pytest.mark.parametrize(
    ("existing", "to_remove", "expected", "error"),
    [
        pytest.param(
            ALL[:7],
            ALL[:1],
            {
                "region-1:\x00:": ["node-1"],
                ":\x00:zone-2": ["node-2"],
                "region-1:\x00:zone-2": ["node-3", "node-4"],
                "region-1:\x00:zone-3": ["node-5"],
                "region-2:\x00:zone-2": ["node-6"],
            },
            False,
            id="remove-node-without-labels",
        ),
        pytest.param(
            ALL[:7],
            ALL[1:4],
            {
                "": ["node-0"],
                "region-1:\x00:zone-2": ["node-4"],
                "region-1:\x00:zone-3": ["node-5"],
                "region-2:\x00:zone-2": ["node-6"],
            },
            False,
            id="remove-a-few",
        ),
        pytest.param(ALL[:7], ALL[:7], {}, False, id="remove-all"),
        pytest.param([], ALL[:5], {}, True, id="remove-missing"),
    ],
)
def test_remove_node(
    existing: list[dict[str, Any]], to_remove: list[dict[str, Any]], expected: dict[str, list[str]], error: bool
) -> None:
    tree = NodeTree(existing)
    for node in to_remove:
        if error:
            with pytest.raises(CacheError, match=r"^node 'node-.*' in group '.*' was not found$"):
                tree.remove_node(node)
        else:
            tree.remove_node(node)
    verify(tree, expected)


@pytest.mark.parametrize(
    ("existing", "old", "new", "expected", "moved"),
    [
        pytest.param(
            ALL[:7],
            ALL[0],
            labelled("node-0", {REGION: "region-1", ZONE: "zone-2"}),
            {
                "region-1:\x00:": ["node-1"],
                ":\x00:zone-2": ["node-2"],
                "region-1:\x00:zone-2": ["node-3", "node-4", "node-0"],
                "region-1:\x00:zone-3": ["node-5"],
                "region-2:\x00:zone-2": ["node-6"],
            },
            True,
            id="node-gets-a-zone",
        ),
        pytest.param(
            ALL[:1],
            ALL[0],
            labelled("node-0", {REGION: "region-1", ZONE: "zone-2"}),
            {"region-1:\x00:zone-2": ["node-0"]},
            True,
            id="only-node",
        ),
        pytest.param(
            ALL[:1],
            n("nonexisting-node"),
            labelled("node-new", {REGION: "region-1", ZONE: "zone-2"}),
            {"": ["node-0"], "region-1:\x00:zone-2": ["node-new"]},
            True,
            id="unknown-node-is-added",
        ),
        pytest.param(
            ALL[3:5],
            ALL[3],
            labelled("node-3", {REGION: "region-1", ZONE: "zone-2", "other": "x"}),
            {"region-1:\x00:zone-2": ["node-3", "node-4"]},
            False,
            id="same-zone-keeps-place",
        ),
    ],
)
def test_update_node(
    existing: list[dict[str, Any]],
    old: dict[str, Any],
    new: dict[str, Any],
    expected: dict[str, list[str]],
    moved: bool,
) -> None:
    tree = NodeTree(existing)
    assert tree.update_node(old, new) is moved
    verify(tree, expected)


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        pytest.param([], [], id="empty"),
        pytest.param(ALL[:1], ["node-0"], id="one"),
        pytest.param(ALL[:4], ["node-0", "node-1", "node-2", "node-3"], id="four-zones"),
        pytest.param(
            ALL[:9],
            ["node-0", "node-1", "node-2", "node-3", "node-5", "node-6", "node-4", "node-7", "node-8"],
            id="round-robin-over-zones",
        ),
    ],
)
def test_list(nodes: list[dict[str, Any]], expected: list[str]) -> None:
    assert NodeTree(nodes).list() == expected


def test_list_stops_when_zones_are_exhausted() -> None:
    tree = NodeTree(ALL[:9])
    tree.num_nodes += 1  # an inconsistent count must not loop forever
    assert len(tree.list()) == 9


@pytest.mark.parametrize(
    ("to_add", "to_remove", "ops", "expected"),
    [
        pytest.param(ALL[2:9], ALL[2:9], "aaarrr", [], id="add-and-remove-all"),
        pytest.param(ALL[2:9], ALL[2:9], "aaar", ["node-3", "node-4"], id="add-and-remove-some"),
        pytest.param(ALL[2:9], ALL[2:9], "aaarrra", ["node-5"], id="remove-three"),
        pytest.param(
            [*ALL[4:9], ALL[3]],
            [],
            "aaaaaa",
            ["node-4", "node-5", "node-6", "node-3", "node-7", "node-8"],
            id="add-to-exhausted-zone",
        ),
        pytest.param([*ALL[3:5], *ALL[6:8]], ALL[3:5], "aaraar", ["node-6", "node-7"], id="remove-zone-and-add-new"),
    ],
)
def test_multi_operations(
    to_add: list[dict[str, Any]], to_remove: list[dict[str, Any]], ops: str, expected: list[str]
) -> None:
    tree = NodeTree()
    adds, removes = iter(to_add), iter(to_remove)
    for op in ops:
        if op == "a":
            tree.add_node(next(adds))
        else:
            tree.remove_node(next(removes))
    assert tree.list() == expected
