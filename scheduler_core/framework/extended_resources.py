"""Extended resources backed by DRA (``DRAExtendedResource``, beta and on in v1.36): which
DeviceClass, if any, stands behind a resource name a pod requests.

Shared by NodeResourcesFit (which leaves such a resource to DynamicResources on a node that
does not advertise it) and DynamicResources (which allocates it through a special claim).

A DeviceClass maps two names to itself: the implicit ``deviceclass.resource.kubernetes.io/<class>``
and, when set, its ``spec.extendedResourceName``. Upstream keeps the mapping in an
event-driven cache (``k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache``,
v0.36.3); :class:`DeviceClassResolver` derives the same mapping from the DeviceClasses as they
are now. When two classes name the same extended resource, the newer one (``creationTimestamp``)
wins and equal times go to the lower name, as upstream's ``updateResourceName2class``. (Upstream's
cache does not bring the older class back when the newer one is deleted; derived from the list,
it comes back here.)
"""

from __future__ import annotations

from collections.abc import Iterable
from operator import is_

from scheduler_core.framework import manifest
from scheduler_core.framework.dra import DEVICE_CLASS as DEVICE_CLASS
from scheduler_core.framework.dra import EXTENDED_RESOURCE_CLAIM_ANNOTATION as EXTENDED_RESOURCE_CLAIM_ANNOTATION
from scheduler_core.framework.dra import DeviceClass
from scheduler_core.framework.interface import Handle
from scheduler_core.framework.manifest import Manifest
from scheduler_core.framework.resource import is_extended_resource_name

# k8s.io/api@v0.36.3 resource/v1/types.go
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"  # ResourceDeviceClassPrefix


def is_dra_extended_resource_name(name: str) -> bool:
    """``schedutil.IsDRAExtendedResourceName``: an extended resource name, or an implicit one."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_PREFIX)


def extended_resource_name(device_class: Manifest) -> str | None:
    """The class's ``spec.extendedResourceName``, or None."""
    name = manifest.spec(device_class).get("extendedResourceName")
    return str(name) if name else None


class DeviceClassResolver:
    """Extended resource name -> DeviceClass (upstream ``fwk.DeviceClassResolver``)."""

    __slots__ = ("_classes",)

    def __init__(self, classes: Iterable[Manifest]) -> None:
        mapping: dict[str, Manifest] = {}
        explicit: dict[str, Manifest] = {}
        for device_class in classes:
            meta = manifest.meta(device_class)
            mapping[DEVICE_CLASS_PREFIX + str(meta.get("name") or "")] = device_class
            name = extended_resource_name(device_class)
            if name is None:
                continue
            current = explicit.get(name)
            if current is None or _preferred(device_class, current):
                explicit[name] = device_class
        # The implicit names cannot clash with an explicit one (validation refuses the prefix).
        self._classes = {**explicit, **mapping}

    def __bool__(self) -> bool:
        return bool(self._classes)

    def get(self, resource_name: str) -> Manifest | None:
        """``GetDeviceClass``: the class behind ``resource_name``, or None."""
        return self._classes.get(resource_name)


def _preferred(candidate: Manifest, current: Manifest) -> bool:
    """Newer first, then the lower name (``updateResourceName2class``)."""
    a, b = manifest.meta(candidate), manifest.meta(current)
    created_a, created_b = str(a.get("creationTimestamp") or ""), str(b.get("creationTimestamp") or "")
    if created_a != created_b:
        return created_a > created_b  # RFC 3339 in UTC sorts as text
    return str(a.get("name") or "") < str(b.get("name") or "")


class StoredClasses:
    """The stored DeviceClasses by name and their :class:`DeviceClassResolver`, read again only
    when the classes changed: not at all while the store's ``objects_version`` stays; from a
    backend that cannot count (None), listed and compared by identity (a store replaces an
    object it changes). One per scheduler (:func:`stored_classes`), for NodeResourcesFit's
    PreFilter and hints and DynamicResources' PreFilter: building the resolver per pod cost 21 %
    of a cycle with 500 classes (bench/README.md, "Sixteenth pass")."""

    __slots__ = ("_objects", "_resolver", "_version", "by_name")

    def __init__(self) -> None:
        self._objects: list[Manifest] = []
        self._resolver: DeviceClassResolver | None = None
        self._version: int | None = None
        self.by_name: dict[str, Manifest] = {}

    def refresh(self, handle: Handle) -> None:
        version = handle.objects_version(DEVICE_CLASS)
        if version is not None and version == self._version:
            return
        self._version = version
        current = list(handle.objects(DEVICE_CLASS))
        if len(current) == len(self._objects) and all(map(is_, current, self._objects)):
            return
        self._objects = current
        self._resolver = None
        self.by_name = {c.name: c.manifest for c in map(DeviceClass, current)}

    @property
    def resolver(self) -> DeviceClassResolver:
        if self._resolver is None:
            self._resolver = DeviceClassResolver(self._objects)
        return self._resolver


def stored_classes(handle: Handle) -> StoredClasses:
    """The scheduler's :class:`StoredClasses` (``Handle.shared``), brought up to date."""
    classes = handle.shared("DeviceClasses", StoredClasses)
    classes.refresh(handle)
    return classes
