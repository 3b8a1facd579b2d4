"""The kinds of dynamic resource allocation as plugins read them: ResourceClaim, DeviceClass and
ResourceSlice (``resource.k8s.io/v1``).

Objects reach plugins as plain manifests (``handle.objects(kind)``); a view here reads the fields
a scheduler needs once, when it is made, into slots. Stores never change an object, they replace
it, so a view stays true to its object: make one per object (or per version of an object) and
keep it as long as the object is stored, as DynamicResources' claim index does, never once per
cycle. ``manifest`` is the object itself, for what reads it whole (the allocator, writes).

Absent and null fields read as Go's zero values, as :mod:`~scheduler_core.framework.manifest`
reads them. Field names follow ``k8s.io/api/resource/v1/types.go`` (v0.36.3).
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler_core.framework import manifest
from scheduler_core.framework.manifest import Manifest

RESOURCE_CLAIM = "ResourceClaim"
RESOURCE_SLICE = "ResourceSlice"
DEVICE_CLASS = "DeviceClass"
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"

DeviceID = tuple[str, str, str]
"""A device as allocations name it: driver, pool, device."""


def allocated_devices(allocation: Manifest) -> list[DeviceID]:
    """The devices an allocation (``status.allocation``, or one in flight) holds; admin access
    ones excepted, as upstream's allocated-devices cache: they take no device."""
    return [
        (result.get("driver", ""), result.get("pool", ""), result.get("device", ""))
        for result in (allocation.get("devices") or {}).get("results") or ()
        if not result.get("adminAccess")
    ]


class ResourceClaim:
    """A ResourceClaim's fields that scheduling reads, read once."""

    __slots__ = (
        "allocation",
        "annotations",
        "deleting",
        "devices",
        "finalizers",
        "key",
        "manifest",
        "name",
        "namespace",
        "owner_references",
        "requests",
        "reserved_for",
        "status",
        "uid",
    )

    def __init__(self, obj: Manifest) -> None:
        meta = manifest.meta(obj)
        status = manifest.status(obj)
        self.manifest = obj
        self.namespace = str(meta.get("namespace") or manifest.DEFAULT_NAMESPACE)
        self.name = str(meta.get("name") or "")
        self.key = (self.namespace, self.name)
        # A claim not from the API server (a hand-written manifest) may lack a uid: its key stands in.
        self.uid = str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")
        self.annotations: Manifest = meta.get("annotations") or {}
        self.owner_references: Sequence[Manifest] = meta.get("ownerReferences") or ()
        self.finalizers: Sequence[str] = meta.get("finalizers") or ()
        self.deleting = meta.get("deletionTimestamp") is not None
        self.requests: Sequence[Manifest] | None = (manifest.spec(obj).get("devices") or {}).get("requests")
        self.status = status
        self.allocation: Manifest | None = status.get("allocation") or None
        self.reserved_for: Sequence[Manifest] = status.get("reservedFor") or ()
        self.devices = allocated_devices(self.allocation) if self.allocation else []

    def __repr__(self) -> str:
        return f"ResourceClaim({self.namespace}/{self.name})"

    def controlled_by(self, uid: str) -> bool:
        """Whether an owner with ``uid`` is the claim's controller (``metav1.IsControlledBy``)."""
        return any(o.get("controller") and o.get("uid") == uid for o in self.owner_references)

    def is_reserved_for(self, uid: str) -> bool:
        """Whether ``status.reservedFor`` names a consumer with ``uid``."""
        return any(r.get("uid") == uid for r in self.reserved_for)

    @property
    def controllers(self) -> tuple[str, ...]:
        """The uids of the claim's controlling owners."""
        return tuple(str(o.get("uid")) for o in self.owner_references if o.get("controller"))

    @property
    def is_extended_resource_claim(self) -> bool:
        """Annotated as a pod's claim of extended resources backed by DRA."""
        return self.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true"

    @property
    def has_first_available(self) -> bool:
        """Whether a request offers a prioritized list (``firstAvailable``)."""
        return any(request.get("firstAvailable") for request in self.requests or ())


class DeviceClass:
    """A DeviceClass's fields that scheduling reads, read once."""

    __slots__ = ("config", "created", "extended_resource_name", "manifest", "name", "selectors")

    def __init__(self, obj: Manifest) -> None:
        meta = manifest.meta(obj)
        spec = manifest.spec(obj)
        self.manifest = obj
        self.name = str(meta.get("name") or "")
        self.created = str(meta.get("creationTimestamp") or "")  # RFC 3339 in UTC: sorts as text
        extended = spec.get("extendedResourceName")
        self.extended_resource_name: str | None = str(extended) if extended else None
        self.selectors: Sequence[Manifest] = spec.get("selectors") or ()
        self.config: Sequence[Manifest] = spec.get("config") or ()

    def __repr__(self) -> str:
        return f"DeviceClass({self.name})"


class ResourceSlice:
    """A ResourceSlice's fields that scheduling reads, read once: its pool, where its devices
    are (one of ``nodeName``, ``nodeSelector``, ``allNodes``, ``perDeviceNodeSelection``) and
    the devices."""

    __slots__ = (
        "all_nodes",
        "devices",
        "driver",
        "generation",
        "manifest",
        "name",
        "node_name",
        "node_selector",
        "per_device_node_selection",
        "pool",
        "slice_count",
    )

    def __init__(self, obj: Manifest) -> None:
        spec = manifest.spec(obj)
        pool = spec.get("pool") or {}
        self.manifest = obj
        self.name = manifest.name_of(obj)
        self.driver = str(spec.get("driver") or "")
        self.pool = str(pool.get("name") or "")
        self.generation = int(pool.get("generation") or 0)
        self.slice_count = int(pool.get("resourceSliceCount") or 0)
        self.node_name = str(spec.get("nodeName") or "")
        self.node_selector: Manifest | None = spec.get("nodeSelector")
        self.all_nodes = bool(spec.get("allNodes"))
        self.per_device_node_selection = bool(spec.get("perDeviceNodeSelection"))
        self.devices: Sequence[Manifest] = spec.get("devices") or ()

    def __repr__(self) -> str:
        return f"ResourceSlice({self.name})"
