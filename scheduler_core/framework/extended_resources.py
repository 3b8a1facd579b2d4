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

from scheduler_core.framework import manifest
from scheduler_core.framework.dra import DEVICE_CLASS as DEVICE_CLASS
from scheduler_core.framework.dra import EXTENDED_RESOURCE_CLAIM_ANNOTATION as EXTENDED_RESOURCE_CLAIM_ANNOTATION
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
