"""Which nodes hold which container images, for ImageLocality.

Upstream ``cache.go`` (``addNodeImageStates``/``removeNodeImageStates``) keeps one summary
per image name across all nodes and gives each NodeInfo the summaries of its own images.
The summaries are shared, so ``num_nodes`` is always current; upstream freezes it per
snapshot, which is the same thing here as no event interleaves with a cycle.
"""

from __future__ import annotations

from scheduler_core.cache.node_tree import node_name
from scheduler_core.framework import ImageStateSummary, Manifest, manifest

__all__ = ["ImageStateSummary", "ImageStates"]


def _images(node: Manifest) -> list[Manifest]:
    return list(manifest.status(node).get("images") or ())


class ImageStates:
    """Image name -> summary over every node in the cache."""

    __slots__ = ("_states",)

    def __init__(self) -> None:
        self._states: dict[str, ImageStateSummary] = {}

    def add_node(self, node: Manifest) -> dict[str, ImageStateSummary]:
        """Record ``node``'s images; return its per-node map (``NodeInfo.image_states``)."""
        name = node_name(node)
        summaries: dict[str, ImageStateSummary] = {}
        for image in _images(node):
            for image_name in image.get("names") or ():
                state = self._states.get(image_name)
                if state is None:
                    state = self._states[image_name] = ImageStateSummary(int(image.get("sizeBytes") or 0))
                state.nodes.add(name)
                summaries.setdefault(image_name, state)
        return summaries

    def remove_node(self, node: Manifest | None) -> None:
        if node is None:
            return
        name = node_name(node)
        for image in _images(node):
            for image_name in image.get("names") or ():
                state = self._states.get(image_name)
                if state is not None:
                    state.nodes.discard(name)
                    if not state.nodes:
                        # Keep len() equal to the number of distinct images on live nodes.
                        del self._states[image_name]

    def get(self, image_name: str) -> ImageStateSummary | None:
        return self._states.get(image_name)

    def __len__(self) -> int:
        return len(self._states)
