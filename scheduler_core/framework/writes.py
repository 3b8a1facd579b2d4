"""The plugins' one write API: ``bind``, and ``create``/``update``/``patch``/``delete`` of any resource.

Upstream gives plugins a clientset and runs the loop's own pod writes as typed API calls
(``pkg/scheduler/framework/api_calls/``, v1.36.3). Here ``Handle.api`` is a :class:`ClusterAPI`:
``bind`` (per pod, on the hot path: a method of its own that builds no call object), and four
verbs that each build one :class:`Write` (a named tuple) for ``write``, the one method every
implementation has for all of them: the operator's backend sends one HTTP request, the
simulator's hands it to the store of the resource (which plays the API server and its
controllers), a tenant profile's checks the namespace, ``extender serve``'s refuses it. A plugin
that writes a new kind of object needs no new method anywhere.

A verb means what the API server makes of it (each verb's docstring). ``precondition`` is the
uid and/or resourceVersion the stored object must have, else 409 Conflict; a PUT's and a patch's
own ``metadata.resourceVersion`` is one too (``Write.expected``). The answer is ``(stored,
None)``, the object as the API answers the write, or ``(None, status)``: an Error status with
the API server's message whose ``error`` is a :class:`WriteError` (HTTP code and
``metav1.Status`` reason), read by :func:`is_not_found` and :func:`is_conflict` (client-go's
``apierrors.IsNotFound``, ``IsConflict``). :func:`patch_pod_status` and :func:`preempt` are the
pod writes several plugins make, written once here. One read goes the same way, ``get``: the
object again after a conflict, from the API itself, since the stores the plugins read may lag.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

from scheduler_core.framework import manifest
from scheduler_core.framework.manifest import Manifest
from scheduler_core.framework.status import Code, Status
from scheduler_core.framework.types import PodInfo

STATUS = "status"  # the subresource


class Resource(NamedTuple):
    """An API resource: what a write's URL names (``/api/v1/namespaces/NS/pods``)."""

    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """The group-qualified resource, as the API server's messages name it (``resourceclaims.resource.k8s.io``)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


PODS = Resource("", "v1", "pods", "Pod")
PERSISTENT_VOLUMES = Resource("", "v1", "persistentvolumes", "PersistentVolume", namespaced=False)
PERSISTENT_VOLUME_CLAIMS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
RESOURCE_CLAIMS = Resource("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim")


class Verb(enum.StrEnum):
    GET = "get"  # a read, for the retries after a conflict (module doc)
    CREATE = "create"
    UPDATE = "update"
    PATCH = "patch"
    DELETE = "delete"


class Precondition(NamedTuple):
    """What the stored object must be for a write to apply (``metav1.Preconditions``)."""

    uid: str | None = None
    resource_version: str | None = None


class Write(NamedTuple):
    """One write of one object: what ``ClusterAPI.write`` receives (module doc)."""

    verb: Verb
    resource: Resource
    obj: Manifest
    precondition: Precondition | None = None
    subresource: str = ""
    reason: str = ""

    @property
    def name(self) -> str:
        return manifest.name_of(self.obj)

    @property
    def namespace(self) -> str:
        return str(manifest.meta(self.obj).get("namespace") or "")

    @property
    def target(self) -> str:
        """The resource written, with its subresource: ``resourceclaims.resource.k8s.io/status``."""
        qualified = self.resource.qualified
        return f"{qualified}/{self.subresource}" if self.subresource else qualified

    def expected(self) -> Precondition:
        """The uid and resourceVersion the stored object must have: the precondition given,
        else, for an update or a patch, the object's own ``metadata.resourceVersion`` (the API
        server reads a PUT's and a patch's as one)."""
        given = self.precondition or Precondition()
        if given.resource_version or self.verb not in (Verb.UPDATE, Verb.PATCH):
            return given
        version = manifest.meta(self.obj).get("resourceVersion")
        return given._replace(resource_version=str(version)) if version else given


Written = tuple[dict[str, Any] | None, Status | None]


class WriteError(Exception):
    """The API's refusal of a write: its HTTP ``code`` and ``metav1.Status`` ``reason``
    (``NotFound``, ``Conflict``, ``AlreadyExists``, ``Invalid``, ``Forbidden``...)."""

    def __init__(self, message: str, *, code: int, reason: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason


def refused(message: str, *, code: int, reason: str) -> Status:
    """The Error status of a write the API refused, with its message."""
    return Status(Code.ERROR, message, error=WriteError(message, code=code, reason=reason))


def is_not_found(status: Status) -> bool:
    """The object is not there (404)."""
    return isinstance(status.error, WriteError) and status.error.code == 404


def is_conflict(status: Status) -> bool:
    """A precondition failed (409 Conflict: a stale resourceVersion, another uid), not a
    create of a name that exists (409 AlreadyExists)."""
    error = status.error
    return isinstance(error, WriteError) and error.code == 409 and error.reason != "AlreadyExists"


class ClusterAPI(Protocol):
    """What a plugin may do to the cluster (``Handle.api``; module doc). An implementation
    subclasses it and defines ``bind`` and ``write``; the four verbs are written here, once."""

    async def bind(self, pod: PodInfo, node_name: str, annotations: Mapping[str, str] | None = None) -> Status | None:
        """Bind ``pod`` to ``node_name`` (the pods/binding subresource, the pod's UID its
        precondition); ``annotations`` land on the pod in the same write."""
        ...

    async def write(self, call: Write) -> Written:
        """Carry ``call`` out: the stored object, or the API's refusal."""
        ...

    async def get(self, resource: Resource, obj: Manifest) -> Written:
        """A GET of the object ``obj`` names, from the API server itself (not a store that may
        lag it): what a write refused with 409 Conflict reads before trying again, as client-go's
        ``retry.RetryOnConflict`` loops do (DynamicResources' ``bindClaim``)."""
        return await self.write(Write(Verb.GET, resource, obj))

    async def create(self, resource: Resource, obj: Manifest) -> Written:
        """A POST of ``obj``, named by its name or else its ``generateName``."""
        return await self.write(Write(Verb.CREATE, resource, obj))

    async def update(
        self,
        resource: Resource,
        obj: Manifest,
        *,
        precondition: Precondition | None = None,
        subresource: str = "",
    ) -> Written:
        """A PUT of ``obj`` (of its status only, with ``subresource=STATUS``); its own
        ``metadata.resourceVersion`` is a precondition."""
        return await self.write(Write(Verb.UPDATE, resource, obj, precondition, subresource))

    async def patch(
        self,
        resource: Resource,
        obj: Manifest,
        *,
        precondition: Precondition | None = None,
        subresource: str = "",
    ) -> Written:
        """A strategic merge patch (the kinds the plugins write are built in: maps merge, a null
        removes a field, conditions merge by type); ``obj`` is the patch and names the object."""
        return await self.write(Write(Verb.PATCH, resource, obj, precondition, subresource))

    async def delete(
        self, resource: Resource, obj: Manifest, *, precondition: Precondition | None = None, reason: str = ""
    ) -> Written:
        """A DELETE of the object ``obj`` names, ``precondition`` its DeleteOptions'. A pod's
        ``reason`` (preemption's) is written first as its DisruptionTarget condition (upstream
        ``PreemptPod``); the simulator records it (``InMemoryCluster.deleted``)."""
        if reason and resource != PODS:
            meta = manifest.meta(obj)
            raise ValueError(
                f"delete of {resource.qualified} {meta.get('namespace')}/{meta.get('name')}: reason: "
                "only a pod is deleted with a reason (its DisruptionTarget condition)"
            )
        return await self.write(Write(Verb.DELETE, resource, obj, precondition, reason=reason))


async def patch_pod_status(api: ClusterAPI, pod: PodInfo, status: Manifest) -> Status | None:
    """A strategic merge patch of ``pod``'s status under its UID (upstream ``util.PatchPodStatus``):
    ``{"nominatedNodeName": None}`` clears the nomination."""
    patch = {"metadata": {"name": pod.name, "namespace": pod.namespace}, STATUS: status}
    _, error = await api.patch(PODS, patch, precondition=Precondition(uid=pod.uid), subresource=STATUS)
    return error


async def preempt(api: ClusterAPI, victim: PodInfo, reason: str) -> Status | None:
    """Upstream ``PreemptPod``'s API calls: the DisruptionTarget condition with ``reason`` as its
    message, then the delete, both under the victim's UID. A victim already gone (404), or
    re-created under its name (409: not the pod chosen), is preempted already."""
    _, error = await api.delete(PODS, victim.pod, precondition=Precondition(uid=victim.uid), reason=reason)
    if error is None or is_not_found(error) or is_conflict(error):
        return None
    return error
