"""ImageLocality: prefer nodes that already hold the pod's container images.

Upstream: ``pkg/scheduler/framework/plugins/imagelocality/image_locality.go`` (v1.36). Score
sums, over the images of the pod's init containers, containers and image volumes that the node
already has (``NodeInfo.image_states``, kept by the cache from ``node.status.images``), each
image's size scaled by the share of nodes holding it (so a widely spread image helps every node
alike, which avoids piling pods onto the few nodes holding it). The sum is clamped to
[23 MiB, 1000 MiB x number of containers] and mapped linearly to 0..100. Image names are
normalised as upstream: a reference without a tag or digest gets ``:latest``.

There is no PreScore and no NormalizeScore. ``score_batch`` computes each distinct image's
scaled score once and then only looks names up per node. Which images some node of the
snapshot holds is found once per image and snapshot version (``NodeColumns.version``), so a
pod whose images no node has (the common case on a cluster that has not pulled them yet)
costs a dict lookup instead of a scan of the feasible nodes.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np

from scheduler_core.framework import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    ImageStateSummary,
    IntArray,
    Manifest,
    NodeColumns,
    NodeInfo,
    PodInfo,
    Status,
    manifest,
)
from scheduler_core.framework.gomath import go_div
from scheduler_core.plugins import names

NAME = names.IMAGE_LOCALITY

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """The CRI name of an image: ``:latest`` added when the reference has no tag or digest
    (upstream ``normalizedImageName``: the last ``:`` is not after the last ``/``)."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    """Upstream ``calculatePriority``: clamp the sum, then scale it to 0..MAX_NODE_SCORE."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    return go_div(MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD), max_threshold - MIN_THRESHOLD)


def scaled_image_score(state: ImageStateSummary, total_num_nodes: int) -> int:
    """Upstream ``scaledImageScore``: ``int64(float64(size) * spread)`` in float64, truncated."""
    spread = float(state.num_nodes) / float(total_num_nodes)
    return int(float(state.size) * spread)


def _pod_images(pod: PodInfo) -> tuple[tuple[str, ...], int]:
    """The pod's normalised image names in upstream order (init containers, containers,
    image volumes) and its number of containers (image volumes do not count)."""
    memo = pod.images
    if memo is None:
        spec: Manifest = manifest.spec(pod.pod)
        init = spec.get("initContainers") or ()
        containers = spec.get("containers") or ()
        images = [normalized_image_name(c.get("image") or "") for c in (*init, *containers)]
        for volume in spec.get("volumes") or ():
            image = volume.get("image")
            if image is not None:
                images.append(normalized_image_name(image.get("reference") or ""))
        memo = pod.images = (tuple(images), len(init) + len(containers))
    return memo


def sum_image_scores(node: NodeInfo, images: Sequence[str], total_num_nodes: int) -> int:
    """Upstream ``sumImageScores`` (an image listed twice in the pod counts twice)."""
    states = node.image_states
    total = 0
    for image in images:
        state = states.get(image)
        if state is not None:
            total += scaled_image_score(state, total_num_nodes)
    return total


class ImageLocality:
    name = NAME
    args_model = None

    def __init__(self, args: object, handle: Handle) -> None:
        self._handle = handle
        # (columns, their version, image -> the summary some node of theirs holds, or None)
        self._held: tuple[weakref.ref[NodeColumns], int, dict[str, ImageStateSummary | None]] | None = None

    # Score only: no cluster event can make a pod schedulable through this plugin, so it
    # registers no events (upstream implements no EnqueueExtensions).

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        total_num_nodes = len(self._handle.snapshot().list())
        images, num_containers = _pod_images(pod)
        return calculate_priority(sum_image_scores(node, images, total_num_nodes), num_containers), None

    def score_batch(self, state: CycleState, pod: PodInfo, columns: NodeColumns, rows: IntArray) -> IntArray | None:
        images, num_containers = _pod_images(pod)
        if num_containers == 0:
            return None  # image volumes only: the per-node form handles the degenerate thresholds
        held = [(image, summary) for image in images if (summary := self._summary(columns, image)) is not None]
        if not held:
            return np.zeros(len(rows), np.int64)  # every node's sum is below the lower threshold: 0
        total_num_nodes = len(self._handle.snapshot().list())
        names = columns.names
        row_list = rows.tolist()
        totals = np.zeros(len(row_list), np.int64)
        for _, summary in held:
            # One summary per image, shared by every node holding it (the cache's ImageStates):
            # test membership by name.
            holders = summary.nodes
            has = np.fromiter((names[row] in holders for row in row_list), np.bool_, len(row_list))
            totals += scaled_image_score(summary, total_num_nodes) * has
        max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
        clamped = np.clip(totals, MIN_THRESHOLD, max_threshold)
        # Non-negative after the clamp, so floor division is Go's truncation.
        scores: IntArray = MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)
        return scores

    def _summary(self, columns: NodeColumns, image: str) -> ImageStateSummary | None:
        """The cache's summary of ``image`` if a node of ``columns`` holds it, found once per
        image until the columns' nodes change."""
        cached = self._held
        if cached is None or cached[0]() is not columns or cached[1] != columns.version:
            cached = self._held = (weakref.ref(columns), columns.version, {})
        known = cached[2]
        if image in known:
            return known[image]
        summary = None
        for info in columns.infos:
            states = info.image_states
            if states and (summary := states.get(image)) is not None:
                break
        known[image] = summary
        return summary
