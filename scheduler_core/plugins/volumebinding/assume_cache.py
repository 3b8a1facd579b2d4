"""In-memory assumptions of PV and PVC changes, between Reserve and the API catching up.

Upstream: ``volumebinding/passive_assume_cache.go`` and ``assume_cache.go``. Reserve assumes a
PV pre-bound to its claim (``claimRef``) and a claim to provision annotated with the selected
node; later cycles then see those objects, so two pods never take the same PV. An assumption
holds while the stored object keeps the resourceVersion it was made against: a newer object
from the API replaces it, and a deleted object drops it. Unreserve restores the stored object.

PreBind writes the assumed objects through the ClusterAPI; the stored objects then carry a
newer resourceVersion and replace the assumptions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from scheduler_core.framework.storage import Manifest, meta, name_of, namespace_of


def resource_version(obj: Manifest) -> str:
    return str(meta(obj).get("resourceVersion") or "")


def pv_key(pv: Manifest) -> str:
    return name_of(pv)


def pvc_key(pvc: Manifest) -> str:
    return f"{namespace_of(pvc)}/{name_of(pvc)}"


class AssumeCache:
    """Assumed versions of one kind of object, keyed as upstream (``name`` or ``ns/name``)."""

    __slots__ = ("_assumed", "_key")

    def __init__(self, key: Callable[[Manifest], str]) -> None:
        self._key = key
        self._assumed: dict[str, Manifest] = {}

    def get(self, stored: Manifest) -> Manifest:
        """The assumed version of ``stored`` while it is current, else ``stored``."""
        assumed = self._assumed.get(self._key(stored))
        if assumed is not None and resource_version(assumed) == resource_version(stored):
            return assumed
        return stored

    def assume(self, obj: Manifest, stored: Manifest | None) -> str | None:
        """Record ``obj``; the error message when ``stored`` is missing or of another version."""
        key = self._key(obj)
        if stored is None:
            return f'"{key}" not found'
        if resource_version(stored) != resource_version(obj):
            return f'"{key}" is out of sync (stored: {resource_version(stored)}, assume: {resource_version(obj)})'
        self._assumed[key] = obj
        return None

    def restore(self, obj: Manifest) -> None:
        key = self._key(obj)
        assumed = self._assumed.get(key)
        if assumed is not None and resource_version(assumed) == resource_version(obj):
            del self._assumed[key]

    def expire(self, stored: Iterable[Manifest]) -> None:
        """Drop assumptions whose object is gone or has a newer version (upstream does this on
        informer events; here once per cycle that reads the objects)."""
        if not self._assumed:
            return
        current = {self._key(obj): resource_version(obj) for obj in stored}
        for key in [k for k, obj in self._assumed.items() if current.get(k) != resource_version(obj)]:
            del self._assumed[key]

    def __len__(self) -> int:
        return len(self._assumed)
