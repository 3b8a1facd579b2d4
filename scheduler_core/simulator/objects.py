"""The in-memory cluster's objects of one kind, in creation order and by namespace and name.

An informer's indexer: a list (``objects(kind)``, in the order objects were created, as the
simulator always listed them) and a lister's ``Get`` (``lookup``) in one dict, so a lookup
costs the same with 10 or 10,000 objects of the kind. A replaced object keeps its place, as it
did in the list before.

Each table keeps a change counter (``version``, the backend's ``objects_version``): a fresh
number from one sequence shared by all tables at every add, replacement and removal, so a
number is never seen twice, even across tables made anew.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

from scheduler_core.framework import Manifest, manifest
from scheduler_core.simulator.defaulting import DEFAULT_NAMESPACE
from scheduler_core.simulator.manifests import CLUSTER_SCOPED_KINDS

Object = dict[str, Any]
Key = tuple[str, str]

_changes = itertools.count(1)


class ObjectTable:
    """Objects of one kind keyed by (namespace, name); a cluster-scoped kind's namespace is ""."""

    __slots__ = ("_by_key", "_namespaced", "version")

    def __init__(self, kind: str, objects: Iterable[Object] = ()) -> None:
        self._namespaced = kind not in CLUSTER_SCOPED_KINDS
        self._by_key: dict[Key, Object] = {}
        self.version = next(_changes)
        for obj in objects:
            self.put(obj)

    def key(self, obj: Manifest) -> Key:
        meta = manifest.meta(obj)
        namespace = str(meta.get("namespace") or DEFAULT_NAMESPACE) if self._namespaced else ""
        return namespace, str(meta.get("name") or "")

    def get(self, namespace: str, name: str) -> Object | None:
        return self._by_key.get((namespace if self._namespaced else "", name))

    def put(self, obj: Object) -> Object | None:
        """Store ``obj`` (in its old place when one of its name exists); the replaced object."""
        key = self.key(obj)
        old = self._by_key.get(key)
        self._by_key[key] = obj
        self.version = next(_changes)
        return old

    def pop(self, namespace: str, name: str) -> Object | None:
        popped = self._by_key.pop((namespace if self._namespaced else "", name), None)
        if popped is not None:
            self.version = next(_changes)
        return popped

    def remove(self, doomed: Iterable[Object]) -> None:
        """Drop these stored objects (by identity)."""
        for obj in list(doomed):
            key = self.key(obj)
            if self._by_key.get(key) is obj:
                del self._by_key[key]
                self.version = next(_changes)

    def __iter__(self) -> Iterator[Object]:
        return iter(self._by_key.values())

    def __len__(self) -> int:
        return len(self._by_key)

    def __bool__(self) -> bool:
        return bool(self._by_key)
