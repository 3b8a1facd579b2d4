"""The ClusterAPI a tenant profile's Handle gets: pods and claims of its own namespace only.

DESIGN.md, tenant safety: a tenant profile affects only pods of its own namespace, whatever
its plugins (out-of-tree ones included) try. Every write goes through one check here
(:meth:`ScopedClusterAPI._scope`, for ``bind`` and every ``write``), before the backend sees
it: the object's namespace must be the profile's, else an Error status naming the profile,
the write and the object; the refusal is logged, since only a faulty or hostile plugin gets
there. A cluster-scoped object is refused, but for a PersistentVolume, which VolumeBinding
binds to a claim: the namespace checked is the claim's, at both ends.

A PV's ``claimRef`` write is checked at both ends: the claim it will name, and the claim it
names now, read from the scheduler's view of PVs (``Handle.objects``). The write is conditioned
on the PV's ``resourceVersion`` (``Write.expected``), so it is passed on only when that version
is the one the view holds: the API server then refuses it if the PV changed meanwhile, and the
claim checked is the claim overwritten. A PV the view does not hold is refused likewise.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from scheduler_core.framework import PodInfo, Status, manifest
from scheduler_core.framework.storage import PERSISTENT_VOLUME, name_of
from scheduler_core.framework.writes import (
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    PODS,
    RESOURCE_CLAIMS,
    ClusterAPI,
    Resource,
    Verb,
    Write,
    Written,
)

log = logging.getLogger(__name__)

# How a refusal names what the profile may touch, and the object refused.
_CLAIMS = ("claims", "for claim")
_SUBJECTS = {
    PODS: ("pods", "pod"),
    PERSISTENT_VOLUME_CLAIMS: _CLAIMS,
    RESOURCE_CLAIMS: _CLAIMS,
    PERSISTENT_VOLUMES: _CLAIMS,
}
_DOING = {
    Verb.GET: "reading",
    Verb.CREATE: "creating",
    Verb.UPDATE: "updating",
    Verb.PATCH: "patching",
    Verb.DELETE: "deleting",
}


class ScopedClusterAPI(ClusterAPI):
    """:class:`scheduler_core.framework.ClusterAPI` over ``inner`` for one namespace."""

    def __init__(
        self, inner: ClusterAPI, *, namespace: str, profile: str, objects: Callable[[str], Iterable[Any]]
    ) -> None:
        self._inner = inner
        self.namespace = namespace
        self._profile = profile
        self._objects = objects  # the backend's view by kind (Handle.objects)

    async def bind(self, pod: PodInfo, node_name: str, annotations: Mapping[str, str] | None = None) -> Status | None:
        refused = self._scope(PODS, "binding", pod.namespace, pod.name)
        return refused if refused is not None else await self._inner.bind(pod, node_name, annotations)

    async def write(self, call: Write) -> Written:
        refused = self._check(call)
        return (None, refused) if refused is not None else await self._inner.write(call)

    def _check(self, call: Write) -> Status | None:
        """The namespace ``call`` acts in must be this profile's."""
        resource, meta = call.resource, manifest.meta(call.obj)
        doing = _doing(call)
        if resource == PERSISTENT_VOLUMES:
            ref = manifest.spec(call.obj).get("claimRef") or {}
            doing = f"{doing} PersistentVolume {call.name}"
            refused = self._scope(resource, doing, ref.get("namespace"), ref.get("name"))
            return refused if refused is not None else self._refuse_rebinding(call)
        if not resource.namespaced:
            return self._refuse(resource, f"{doing} {resource.kind} {call.name} refused (not namespaced)")
        # A create by generateName is named by it (the name the API server will make from it).
        name = meta.get("generateName") if call.verb is Verb.CREATE and meta.get("generateName") else call.name
        return self._scope(resource, doing, meta.get("namespace"), name)

    def _scope(self, resource: Resource, doing: str, namespace: object, name: object) -> Status | None:
        """The one namespace check: None when ``namespace`` is this profile's."""
        if namespace == self.namespace:
            return None
        return self._refuse(resource, f"{doing} {_subject(resource)[1]} {namespace}/{name} refused")

    def _refuse(self, resource: Resource, why: str) -> Status:
        message = (
            f"profile {self._profile} may act only on {_subject(resource)[0]} of namespace {self.namespace!r}: {why}"
        )
        log.warning("%s", message)
        return Status.as_error(PermissionError(message))

    def _refuse_rebinding(self, call: Write) -> Status | None:
        """The claim the PV is bound to now must be of this namespace too (or none)."""
        name = call.name
        version = call.expected().resource_version
        stored = next((o for o in self._objects(PERSISTENT_VOLUME) if name_of(o) == name), None)
        known = manifest.meta(stored or {}).get("resourceVersion")
        if stored is None:
            why = f"PersistentVolume {name} is not one the scheduler knows"
        elif not version:
            why = f"PersistentVolume {name} carries no resourceVersion (the claim it overwrites cannot be checked)"
        elif version != known:
            why = (
                f"PersistentVolume {name} at resourceVersion {version} is not the version the scheduler knows ({known})"
            )
        else:
            old = manifest.spec(stored).get("claimRef") or {}
            if not old or old.get("namespace") == self.namespace:
                return None
            why = f"rebinding PersistentVolume {name} from claim {old.get('namespace')}/{old.get('name')} refused"
        return self._refuse(PERSISTENT_VOLUMES, why)


def _subject(resource: Resource) -> tuple[str, str]:
    return _SUBJECTS.get(resource) or (resource.qualified, resource.kind)


def _doing(call: Write) -> str:
    """What the write does, for the refusal: ``updating the status``, or for a patch of a
    subresource the fields it writes (``patching nominatedNodeName of`` a pod)."""
    doing = _DOING[call.verb]
    if not call.subresource:
        return doing
    section = call.obj.get(call.subresource)
    if call.verb is Verb.PATCH and isinstance(section, Mapping) and section:
        of = "" if _subject(call.resource)[1].startswith("for ") else " of"
        return f"{doing} {', '.join(section)}{of}"
    return f"{doing} the {call.subresource}"
