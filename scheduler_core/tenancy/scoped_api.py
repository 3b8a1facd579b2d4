"""The ClusterAPI a tenant profile's Handle gets: pods and claims of its own namespace only.

DESIGN.md, tenant safety: a tenant profile affects only pods of its own namespace, whatever
its plugins (out-of-tree ones included) try. Every call about a pod of another namespace, a
claim of another namespace, or a PV bound to such a claim is refused here, before the backend
sees it, with an Error status naming the profile, the call and the object; the refusal is
logged, since only a faulty or hostile plugin gets there.

A PV's ``claimRef`` write is checked at both ends: the claim it will name, and the claim it
names now, read from the scheduler's view of PVs (``Handle.objects``). The write is a patch
conditioned on the PV's ``resourceVersion``, so it is passed on only when that version is the
one the view holds: the API server then refuses it if the PV changed meanwhile, and the claim
checked is the claim overwritten. A PV the view does not hold is refused likewise.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from scheduler_core.framework import ClusterAPI, PodInfo, Status
from scheduler_core.framework.storage import PERSISTENT_VOLUME, name_of

log = logging.getLogger(__name__)


class ScopedClusterAPI:
    """Implements :class:`scheduler_core.framework.ClusterAPI` over ``inner`` for one namespace."""

    def __init__(
        self, inner: ClusterAPI, *, namespace: str, profile: str, objects: Callable[[str], Iterable[Any]]
    ) -> None:
        self._inner = inner
        self.namespace = namespace
        self._profile = profile
        self._objects = objects  # the backend's view by kind (Handle.objects)

    def _refuse(self, call: str, pod: PodInfo) -> Status | None:
        if pod.namespace == self.namespace:
            return None
        message = (
            f"profile {self._profile} may act only on pods of namespace {self.namespace!r}: "
            f"{call} of pod {pod.namespace}/{pod.name} refused"
        )
        log.warning("%s", message)
        return Status.as_error(PermissionError(message))

    async def bind(self, pod: PodInfo, node_name: str, annotations: Mapping[str, str] | None = None) -> Status | None:
        refused = self._refuse("bind", pod)
        return refused if refused is not None else await self._inner.bind(pod, node_name, annotations)

    async def delete_pod(self, pod: PodInfo, reason: str) -> Status | None:
        refused = self._refuse("delete", pod)
        return refused if refused is not None else await self._inner.delete_pod(pod, reason)

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> Status | None:
        refused = self._refuse("nominate", pod)
        return refused if refused is not None else await self._inner.set_nominated_node(pod, node_name)

    # -- volume binding (VolumeBinding's PreBind) --------------------------------------------
    def _refuse_claim(self, call: str, namespace: object, name: object) -> Status | None:
        if namespace == self.namespace:
            return None
        message = (
            f"profile {self._profile} may act only on claims of namespace {self.namespace!r}: "
            f"{call} for claim {namespace}/{name} refused"
        )
        log.warning("%s", message)
        return Status.as_error(PermissionError(message))

    async def patch_pv_claim_ref(self, pv: Mapping[str, Any]) -> tuple[dict[str, Any] | None, Status | None]:
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        refused = self._refuse_claim("binding a PersistentVolume", ref.get("namespace"), ref.get("name"))
        if refused is None:
            refused = self._refuse_rebinding(pv)
        return (None, refused) if refused is not None else await self._inner.patch_pv_claim_ref(pv)

    def _refuse_rebinding(self, pv: Mapping[str, Any]) -> Status | None:
        """The claim ``pv`` is bound to now must be of this namespace too (or none)."""
        name = name_of(pv)
        version = (pv.get("metadata") or {}).get("resourceVersion")
        stored = next((o for o in self._objects(PERSISTENT_VOLUME) if name_of(o) == name), None)
        known = ((stored or {}).get("metadata") or {}).get("resourceVersion")
        if stored is None:
            why = f"PersistentVolume {name} is not one the scheduler knows"
        elif not version:
            why = f"PersistentVolume {name} carries no resourceVersion (the claim it overwrites cannot be checked)"
        elif version != known:
            why = (
                f"PersistentVolume {name} at resourceVersion {version} is not the version the scheduler knows ({known})"
            )
        else:
            old = (stored.get("spec") or {}).get("claimRef") or {}
            if not old or old.get("namespace") == self.namespace:
                return None
            why = f"rebinding PersistentVolume {name} from claim {old.get('namespace')}/{old.get('name')} refused"
        message = f"profile {self._profile} may act only on claims of namespace {self.namespace!r}: {why}"
        log.warning("%s", message)
        return Status.as_error(PermissionError(message))

    async def patch_pvc_selected_node(
        self, pvc: Mapping[str, Any], node_name: str
    ) -> tuple[dict[str, Any] | None, Status | None]:
        meta = pvc.get("metadata") or {}
        refused = self._refuse_claim("selecting a node", meta.get("namespace"), meta.get("name"))
        return (None, refused) if refused is not None else await self._inner.patch_pvc_selected_node(pvc, node_name)

    # -- resource claims (DynamicResources' PreBind, Unreserve, PostFilter) -------------------------
    async def update_claim_status(self, claim: Mapping[str, Any]) -> tuple[dict[str, Any] | None, Status | None]:
        meta = claim.get("metadata") or {}
        refused = self._refuse_claim("updating the status", meta.get("namespace"), meta.get("name"))
        return (None, refused) if refused is not None else await self._inner.update_claim_status(claim)

    async def update_claim(self, claim: Mapping[str, Any]) -> tuple[dict[str, Any] | None, Status | None]:
        meta = claim.get("metadata") or {}
        refused = self._refuse_claim("updating", meta.get("namespace"), meta.get("name"))
        return (None, refused) if refused is not None else await self._inner.update_claim(claim)

    async def create_claim(self, claim: Mapping[str, Any]) -> tuple[dict[str, Any] | None, Status | None]:
        meta = claim.get("metadata") or {}
        refused = self._refuse_claim("creating", meta.get("namespace"), meta.get("generateName"))
        return (None, refused) if refused is not None else await self._inner.create_claim(claim)

    async def delete_claim(self, claim: Mapping[str, Any]) -> Status | None:
        meta = claim.get("metadata") or {}
        refused = self._refuse_claim("deleting", meta.get("namespace"), meta.get("name"))
        return refused if refused is not None else await self._inner.delete_claim(claim)

    async def set_extended_resource_claim_status(self, pod: PodInfo, value: Mapping[str, Any]) -> Status | None:
        refused = self._refuse("extendedResourceClaimStatus", pod)
        return refused if refused is not None else await self._inner.set_extended_resource_claim_status(pod, value)
