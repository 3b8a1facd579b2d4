"""Node names grouped by zone, listed zone by zone in round-robin.

Upstream ``pkg/scheduler/backend/cache/node_tree.go``: the snapshot lists nodes in this
order, so the first nodes the scheduler evaluates (with ``percentageOfNodesToScore`` below
100) are spread across zones. Zones are kept in the order they first appeared; nodes within
a zone in the order they were added. A node whose zone label changes moves to the end of
its new zone.

The zone key is upstream ``GetZoneKey`` (``k8s.io/component-helpers/node/topology``): the
deprecated ``failure-domain.beta.kubernetes.io`` labels win over the ``topology.kubernetes.io``
ones, and region and zone are joined by ``":\\x00:"``; a node with neither has zone ``""``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping

from scheduler_core.cache.errors import CacheError
from scheduler_core.framework import Manifest, manifest

log = logging.getLogger(__name__)

LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION = "topology.kubernetes.io/region"
LABEL_FAILURE_DOMAIN_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_FAILURE_DOMAIN_BETA_REGION = "failure-domain.beta.kubernetes.io/region"


def node_name(node: Manifest) -> str:
    return manifest.name_of(node)


def get_zone_key(node: Manifest) -> str:
    """A string unique per failure zone, ``""`` for none (upstream ``GetZoneKey``)."""
    labels: Mapping[str, str] = manifest.meta(node).get("labels") or {}
    zone = (
        labels[LABEL_FAILURE_DOMAIN_BETA_ZONE]
        if LABEL_FAILURE_DOMAIN_BETA_ZONE in labels
        else labels.get(LABEL_TOPOLOGY_ZONE, "")
    )
    region = (
        labels[LABEL_FAILURE_DOMAIN_BETA_REGION]
        if LABEL_FAILURE_DOMAIN_BETA_REGION in labels
        else labels.get(LABEL_TOPOLOGY_REGION, "")
    )
    if not region and not zone:
        return ""
    # The NUL character keeps "a:b" + "c" apart from "a" + "b:c".
    return f"{region}:\x00:{zone}"


class NodeTree:
    """Node names per zone. Not a snapshot: the cache owns it and lists it on rebuild."""

    __slots__ = ("_members", "num_nodes", "tree", "zones")

    def __init__(self, nodes: Iterable[Manifest] = ()) -> None:
        self.tree: dict[str, list[str]] = {}
        self.zones: list[str] = []
        self.num_nodes = 0
        # (zone, name) of every node in the tree: upstream scans the zone's list for a duplicate,
        # which makes adding n nodes to one zone quadratic.
        self._members: set[tuple[str, str]] = set()
        for node in nodes:
            self.add_node(node)

    def add_node(self, node: Manifest) -> None:
        zone = get_zone_key(node)
        name = node_name(node)
        if (zone, name) in self._members:
            log.info("Did not add to the NodeTree because it already exists: node=%s", name)
            return
        names = self.tree.get(zone)
        if names is None:
            self.zones.append(zone)
            self.tree[zone] = [name]
        else:
            names.append(name)
        self._members.add((zone, name))
        self.num_nodes += 1

    def remove_node(self, node: Manifest) -> None:
        zone = get_zone_key(node)
        name = node_name(node)
        names = self.tree.get(zone)
        if names is not None and (zone, name) in self._members:
            names.remove(name)
            self._members.discard((zone, name))
            if not names:
                del self.tree[zone]
                self.zones.remove(zone)
            self.num_nodes -= 1
            return
        raise CacheError(f"node {name!r} in group {zone!r} was not found")

    def update_node(self, old: Manifest | None, new: Manifest) -> bool:
        """Move the node if its zone changed; True when it moved (the list order changed)."""
        old_zone = get_zone_key(old) if old is not None else ""
        if old_zone == get_zone_key(new):
            return False
        if old is not None:
            # As upstream: whether the old node was in the tree or not does not matter.
            with contextlib.suppress(CacheError):
                self.remove_node(old)
        self.add_node(new)
        return True

    def list(self) -> list[str]:
        """Node names zone by zone: the first of each zone, then the second of each..."""
        result: list[str] = []
        exhausted = 0
        index = 0
        while len(result) < self.num_nodes:
            if exhausted >= len(self.zones):
                log.error("all zones exhausted before reaching count of nodes expected")
                break
            for zone in self.zones:
                names = self.tree[zone]
                if index >= len(names):
                    if index == len(names):  # exhausted just now
                        exhausted += 1
                    continue
                result.append(names[index])
            index += 1
        return result
