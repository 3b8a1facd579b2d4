"""The selector of default constraints: ``helper.DefaultSelector``.

Upstream (k8s.io/kubernetes v1.36.3) ``pkg/scheduler/framework/plugins/helper/spread.go``: the
selectors of the Services selecting the pod (a Service with a nil selector selects nothing),
ANDed with the selector of the ReplicationController, ReplicaSet (apps/v1) or StatefulSet
(apps/v1) controlling it. Objects come from ``Handle.objects(kind)`` as manifests; a missing
namespace is "default".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from scheduler_core.framework import Manifest, PodInfo, manifest
from scheduler_core.framework import labels as labelselector
from scheduler_core.framework.labels import Selector

Objects = Callable[[str], Iterable[Any]]

_RC = ("", "v1", "ReplicationController")
_RS = ("apps", "v1", "ReplicaSet")
_SS = ("apps", "v1", "StatefulSet")


def _parse_group_version(api_version: str) -> tuple[str, str] | None:
    """``schema.ParseGroupVersion``: "" is the empty version, "v1" the core group, "g/v" a
    group; more slashes are an error (``None``)."""
    if not api_version:
        return "", ""
    parts = api_version.split("/")
    if len(parts) == 1:
        return "", api_version
    if len(parts) == 2:
        return parts[0], parts[1]
    return None


def controller_of(pod: PodInfo) -> Manifest | None:
    """``metav1.GetControllerOfNoCopy``: the owner reference with ``controller: true``."""
    for ref in manifest.meta(pod.pod).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def default_selector(pod: PodInfo, objects: Objects) -> Selector:
    """``helper.DefaultSelector``: the selectors of the Services selecting the pod, and of the
    ReplicationController, ReplicaSet or StatefulSet controlling it, ANDed. ``objects`` is
    ``Handle.objects``."""
    label_set: dict[str, str] = {}
    for service in objects("Service"):
        if manifest.namespace_of(service) != pod.namespace:
            continue
        selector = manifest.spec(service).get("selector")
        # Services with a nil selector match nothing, not everything.
        if selector is not None and labelselector.set_matches(selector, pod.labels):
            label_set.update(selector)
    result = labelselector.from_set(label_set)
    owner = controller_of(pod)
    if owner is None:
        return result
    group_version = _parse_group_version(str(owner.get("apiVersion") or ""))
    if group_version is None:
        return result
    kind = (*group_version, str(owner.get("kind") or ""))
    name = str(owner.get("name") or "")
    if kind == _RC:
        rc = _find(objects("ReplicationController"), pod.namespace, name)
        if rc is not None:
            label_set.update(manifest.spec(rc).get("selector") or {})
            result = labelselector.from_set(label_set)
    elif kind in (_RS, _SS):
        controller = _find(objects(kind[2]), pod.namespace, name)
        if controller is not None:
            try:
                other = labelselector.parse(manifest.spec(controller).get("selector"))
            except labelselector.SelectorError:
                return result
            # Nothing has no requirements to add (Requirements() is not ok).
            result = result.add(other.requirements)
    return result


def _find(objects: Iterable[Manifest], namespace: str, name: str) -> Manifest | None:
    for obj in objects:
        if manifest.namespace_of(obj) == namespace and manifest.name_of(obj) == name:
            return obj
    return None
