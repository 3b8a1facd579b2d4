"""ImageLocality, as upstream ``imagelocality/image_locality_test.go`` (TestImageLocalityPriority),
plus the name normalisation and the batch form on generated clusters."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.cache import ImageStates
from scheduler_core.cache.snapshot import Snapshot
from scheduler_core.framework import MAX_NODE_SCORE, CycleState, Handle, NodeInfo, PodInfo, SnapshotLister
from scheduler_core.plugins.imagelocality import ImageLocality
from scheduler_core.plugins.imagelocality.image_locality import MB, calculate_priority, normalized_image_name
from tests.wrappers import make_pod, node

Image = dict[str, Any]


class SnapshotHandle:
    """The part of the Handle ImageLocality uses."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    def snapshot(self) -> SnapshotLister:
        return self._snapshot


def image(size_mb: int, *names: str) -> Image:
    return {"names": list(names), "sizeBytes": size_mb * MB}


def image_cluster(node_images: Iterable[tuple[str, list[Image]]]) -> tuple[list[NodeInfo], Snapshot]:
    """NodeInfos with image states as the cache builds them (shared summaries)."""
    states = ImageStates()
    infos = []
    for name, images in node_images:
        manifest = node(name, images=images)
        info = NodeInfo(manifest)
        info.image_states = states.add_node(manifest)
        infos.append(info)
    return infos, Snapshot(infos)


NODE_40_300_2000 = [
    image(40, "gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"),
    image(300, "gcr.io/300:latest", "gcr.io/300:v1"),
    image(2000, "gcr.io/2000:latest"),
]
NODE_250_10 = [image(250, "gcr.io/250:latest"), image(10, "gcr.io/10:latest", "gcr.io/10:v1")]
NODE_600_40_900 = [image(600, "gcr.io/600:latest"), image(40, "gcr.io/40:latest"), image(900, "gcr.io/900:latest")]
NODE_300_600_900 = [image(300, "gcr.io/300:latest"), image(600, "gcr.io/600:latest"), image(900, "gcr.io/900:latest")]
NODE_4000_30 = [image(4000, "gcr.io/4000:latest"), image(30, "gcr.io/30:latest")]
NODE_20_30_40 = [image(20, "gcr.io/20:latest"), image(30, "gcr.io/30:latest"), image(40, "gcr.io/40:latest")]


@pytest.mark.parametrize(
    ("the_pod", "node_images", "expected"),
    [
        pytest.param(
            make_pod().container(image="gcr.io/40").container(image="gcr.io/250").info(),
            [("node1", NODE_40_300_2000), ("node2", NODE_250_10)],
            [0, 5],
            id="TestImageLocalityPriority/two images spread on two nodes, prefer the larger image one",
        ),
        pytest.param(
            make_pod().container(image="gcr.io/40").container(image="gcr.io/300").info(),
            [("node1", NODE_40_300_2000), ("node2", NODE_250_10)],
            [7, 0],
            id="TestImageLocalityPriority/two images on one node, prefer this node",
        ),
        pytest.param(
            make_pod().container(image="gcr.io/10").container(image="gcr.io/4000").info(),
            [("node1", NODE_4000_30), ("node2", NODE_250_10)],
            [MAX_NODE_SCORE, 0],
            id="TestImageLocalityPriority/if exceed limit, use limit",
        ),
        pytest.param(
            make_pod().container(image="gcr.io/10").container(image="gcr.io/4000").info(),
            [("node1", NODE_4000_30), ("node2", NODE_250_10), ("node3", [])],
            [66, 0, 0],
            id="TestImageLocalityPriority/if exceed limit, use limit (with node which has no images present)",
        ),
        pytest.param(
            make_pod().container(image="gcr.io/300").container(image="gcr.io/600").container(image="gcr.io/900").info(),
            [("node1", NODE_600_40_900), ("node2", NODE_300_600_900), ("node3", [])],
            [32, 36, 0],
            id="TestImageLocalityPriority/pod with multiple large images, node2 is preferred",
        ),
        pytest.param(
            make_pod().container(image="gcr.io/30").container(image="gcr.io/40").info(),
            [("node1", NODE_20_30_40), ("node2", NODE_4000_30)],
            [1, 0],
            id="TestImageLocalityPriority/pod with multiple small images",
        ),
        pytest.param(
            make_pod()
            .container(image="gcr.io/30")
            .spec(volumes=[{"name": "v0", "image": {"reference": "gcr.io/300"}}])
            .info(),
            [("node1", NODE_300_600_900), ("node2", NODE_4000_30)],
            [12, 0],
            id="TestImageLocalityPriority/pod with ImageVolume",
        ),
        pytest.param(
            make_pod().container(image="gcr.io/30").init_container(image="gcr.io/300").info(),
            [("node1", NODE_40_300_2000), ("node2", NODE_20_30_40)],
            [6, 0],
            id="TestImageLocalityPriority/include InitContainers: two images spread on two nodes, "
            "prefer the larger image one",
        ),
    ],
)
def test_score(the_pod: PodInfo, node_images: list[tuple[str, list[Image]]], expected: list[int]) -> None:
    infos, snapshot = image_cluster(node_images)
    plugin = ImageLocality(None, cast(Handle, SnapshotHandle(snapshot)))
    state = CycleState()
    got = []
    for info in infos:
        score, status = plugin.score(state, the_pod, info)
        assert status is None
        got.append(score)
    assert got == expected
    batch = plugin.score_batch(state, the_pod, snapshot.columns, np.arange(len(infos), dtype=np.int64))
    assert batch is not None and batch.tolist() == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("gcr.io/40", "gcr.io/40:latest", id="no tag gets latest"),
        pytest.param("gcr.io/40:v1", "gcr.io/40:v1", id="tag kept"),
        pytest.param("localhost:5000/img", "localhost:5000/img:latest", id="registry port is not a tag"),
        pytest.param("localhost:5000/img:v2", "localhost:5000/img:v2", id="registry port and tag"),
        pytest.param("img@sha256:abcd", "img@sha256:abcd", id="digest kept"),
        pytest.param("myimage", "myimage:latest", id="TestImageSignature/one image"),
    ],
)
def test_normalized_image_name(name: str, expected: str) -> None:
    assert normalized_image_name(name) == expected


@pytest.mark.parametrize(
    ("sum_scores", "containers", "expected"),
    [
        pytest.param(0, 1, 0, id="below the minimum threshold"),
        pytest.param(1000 * MB, 1, MAX_NODE_SCORE, id="at the per-container maximum"),
        pytest.param(5000 * MB, 2, MAX_NODE_SCORE, id="above the maximum is clamped"),
        pytest.param(125 * MB, 2, 5, id="integer division truncates"),
    ],
)
def test_calculate_priority(sum_scores: int, containers: int, expected: int) -> None:
    assert calculate_priority(sum_scores, containers) == expected


def test_images_shared_by_all_nodes_are_scaled_by_spread() -> None:
    # The 900 MB image is on 1 of 4 nodes: 900/4 = 225 MB, 100*(225-23)/(1000-23) = 20.
    infos, snapshot = image_cluster([("a", [image(900, "big:latest")]), ("b", []), ("c", []), ("d", [])])
    plugin = ImageLocality(None, cast(Handle, SnapshotHandle(snapshot)))
    assert plugin.score(CycleState(), make_pod().container(image="big").info(), infos[0]) == (20, None)


NAMES = ["a", "b:v1", "c", "r:5000/d"]


@settings(max_examples=100, deadline=None)
@given(
    node_images=st.lists(st.lists(st.sampled_from(NAMES), max_size=4, unique=True), min_size=1, max_size=10),
    containers=st.lists(st.sampled_from([*NAMES, "a:latest", "zzz"]), min_size=1, max_size=4),
    init=st.lists(st.sampled_from(NAMES), max_size=2),
    data=st.data(),
)
def test_batch_equals_per_node(
    node_images: list[list[str]], containers: list[str], init: list[str], data: st.DataObject
) -> None:
    # Sizes per image name are fixed across nodes, as a registry image has one size.
    sizes = {name: 7 * MB * (1 + i) ** 3 for i, name in enumerate(NAMES)}
    infos, snapshot = image_cluster(
        (f"n{i}", [image(sizes[name] // MB, normalized_image_name(name)) for name in images])
        for i, images in enumerate(node_images)
    )
    plugin = ImageLocality(None, cast(Handle, SnapshotHandle(snapshot)))
    wrapper = make_pod()
    for name in containers:
        wrapper.container(image=name)
    for name in init:
        wrapper.init_container(image=name)
    the_pod = wrapper.info()
    state = CycleState()
    rows = np.array(data.draw(st.lists(st.integers(0, len(infos) - 1), unique=True)), dtype=np.int64)
    batch = plugin.score_batch(state, the_pod, snapshot.columns, rows)
    assert batch is not None
    assert batch.tolist() == [plugin.score(state, the_pod, infos[r])[0] for r in rows.tolist()]
