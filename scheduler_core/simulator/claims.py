"""The in-memory cluster's ResourceClaims: the API's claim writes and the resourceclaim controller.

DynamicResources' PreBind writes a claim's ``status`` (allocation and ``reservedFor``) and, before
the first allocation, its ``resource.kubernetes.io/delete-protection`` finalizer; Unreserve and
PostFilter write the status back. :class:`ClaimStore` answers those writes as the API server does:
a ``resourceVersion`` that is not the stored one is a conflict, every write gives a new
resourceVersion, a status update changes only the status and an update everything but it.

In a cluster, kube-controller-manager's ``resourceclaim-controller`` makes the claims of pods that
name a ResourceClaimTemplate (``pkg/controller/resourceclaim/controller.go`` ``handleClaim``): a
claim with the template's spec, labels and annotations, the pod as controlling owner and the
``resource.kubernetes.io/pod-claim-name`` annotation, named by the pod's
``status.resourceClaimStatuses``. :meth:`ClaimStore.claims_for_pod` plays that part before the
simulation starts (and for pods added later, :meth:`InMemoryCluster.add_pod`), with the name
``<pod>-<claim>`` (the API server would add five random
characters to that ``generateName``; a fixed name keeps the output reproducible); and
:meth:`ClaimStore.release_pod` plays its part when a pod is deleted (a preemption victim).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
from collections.abc import Callable

from scheduler_core.framework import Manifest, manifest
from scheduler_core.framework.storage import name_of, namespace_of
from scheduler_core.framework.writes import Write, Written
from scheduler_core.simulator import apiserver
from scheduler_core.simulator.defaulting import generated_uid
from scheduler_core.simulator.objects import ObjectTable
from scheduler_core.simulator.volumes import Object

RESOURCE_CLAIM = "ResourceClaim"
RESOURCE_CLAIM_TEMPLATE = "ResourceClaimTemplate"
FINALIZER = "resource.kubernetes.io/delete-protection"  # k8s.io/api resource/v1 types.go
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"  # k8s.io/api resource/v1 types.go
# k8s.io/apiserver@v0.36.3 pkg/storage/names/generate.go, k8s.io/apimachinery pkg/util/rand/rand.go
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_SUFFIX_LENGTH = 5
_MAX_GENERATED_NAME_LENGTH = 253 - _SUFFIX_LENGTH
DELETION_TIMESTAMP = "1970-01-01T00:00:00Z"  # the in-memory cluster has no clock


class ClaimStore:
    """The ResourceClaims of the in-memory cluster (a list shared with it, by kind)."""

    def __init__(self, objects: dict[str, ObjectTable]) -> None:
        self._objects = objects
        self._versions = itertools.count(1)
        # Who hears of updates (the scheduler's informer): (old, new).
        self.on_update: Callable[[Object, Object], None] | None = None
        objects[RESOURCE_CLAIM] = ObjectTable(
            RESOURCE_CLAIM, [self._created(o) for o in objects.get(RESOURCE_CLAIM, ())]
        )

    def _created(self, obj: Manifest) -> Object:
        new = copy.deepcopy(dict(obj))
        metadata = new.setdefault("metadata", {})
        metadata.setdefault("namespace", "default")
        metadata.setdefault("uid", generated_uid(RESOURCE_CLAIM, namespace_of(new), name_of(new)))
        metadata.setdefault("resourceVersion", f"c{next(self._versions)}")
        return new

    def create(self, obj: Manifest) -> Object:
        """Add a claim as the API server creates it (uid, resourceVersion)."""
        return self._store(self._created(obj))

    def post(self, call: Write) -> Written:
        """A create; a claim without a name (DynamicResources' special claim) is named from its
        ``generateName`` with five more characters, as the API server's ``SimpleNameGenerator``
        (drawn from a counter here, not at random, so that ``simulate`` is reproducible)."""
        metadata = dict(manifest.meta(call.obj))
        namespace = str(metadata.get("namespace") or "default")
        if metadata.get("name"):
            if self.find(namespace, str(metadata["name"])) is not None:
                return None, apiserver.already_exists(call.resource, str(metadata["name"]))
        else:
            base = str(metadata.get("generateName") or "")[:_MAX_GENERATED_NAME_LENGTH]
            for attempt in itertools.count():
                name = base + _suffix(f"{namespace}/{base}/{attempt}")
                if self.find(namespace, name) is None:
                    break
            metadata["name"] = name
        return self.create({**call.obj, "metadata": metadata}), None

    def delete(self, call: Write) -> Written:
        """A delete; a claim with finalizers only gets its ``deletionTimestamp``, as the API
        server does."""
        stored = self.find(call.namespace or "default", call.name)
        problem = apiserver.check(call, stored)
        if problem is not None or stored is None:
            return None, problem
        if manifest.meta(stored).get("finalizers"):
            marked = {**stored, "metadata": {**stored["metadata"], "deletionTimestamp": DELETION_TIMESTAMP}}
            return self._store(marked), None
        self._objects[RESOURCE_CLAIM].remove([stored])
        return stored, None

    def find(self, namespace: str, name: str) -> Object | None:
        return self._objects[RESOURCE_CLAIM].get(namespace, name)

    def _store(self, new: Object) -> Object:
        new["metadata"] = {**new.get("metadata", {}), "resourceVersion": f"c{next(self._versions)}"}
        old = self._objects[RESOURCE_CLAIM].put(new)
        if old is not None and self.on_update is not None:
            self.on_update(old, new)
        return new

    # -- the ClusterAPI writes ---------------------------------------------------------------------
    def get(self, call: Write) -> Written:
        stored = self.find(call.namespace or "default", call.name)
        if stored is None:
            return None, apiserver.not_found(call.resource, call.name)
        return copy.deepcopy(stored), None

    def put_status(self, call: Write) -> Written:
        """An update of the status subresource: only the status changes."""
        stored = self.find(call.namespace or "default", call.name)
        problem = apiserver.check(call, stored)
        if problem is not None or stored is None:
            return None, problem
        new = dict(stored)
        new["status"] = copy.deepcopy(dict(manifest.status(call.obj)))
        return self._store(new), None

    def put(self, call: Write) -> Written:
        """An update of the claim: everything but its uid and status."""
        stored = self.find(call.namespace or "default", call.name)
        problem = apiserver.check(call, stored)
        if problem is not None or stored is None:
            return None, problem
        new = copy.deepcopy(dict(call.obj))
        new["metadata"] = {**new.get("metadata", {}), "uid": manifest.meta(stored).get("uid")}
        new["status"] = manifest.status(stored)
        return self._store(new), None

    # -- the resourceclaim controller --------------------------------------------------------------
    def claims_for_pod(self, pod: Manifest) -> list[dict[str, str]]:
        """Create the claims of ``pod``'s templates that do not exist yet; the pod's new
        ``status.resourceClaimStatuses`` (empty when it names no template)."""
        namespace = namespace_of(pod)
        pod_name = name_of(pod)
        known = {s.get("name"): s for s in manifest.status(pod).get("resourceClaimStatuses") or ()}
        statuses: list[dict[str, str]] = []
        for pod_claim in manifest.spec(pod).get("resourceClaims") or ():
            template_name = pod_claim.get("resourceClaimTemplateName")
            if not template_name:
                continue
            if pod_claim["name"] in known:
                statuses.append(dict(known[pod_claim["name"]]))
                continue
            template = self._template(namespace, template_name)
            if template is None:
                continue  # the controller retries until the template exists; the pod stays pending
            claim_name = f"{pod_name}-{pod_claim['name']}"
            if self.find(namespace, claim_name) is None:
                self._store(self._created(_claim_from_template(template, pod, pod_claim["name"], claim_name)))
            statuses.append({"name": pod_claim["name"], "resourceClaimName": claim_name})
        return statuses

    def release_pod(self, pod: Manifest) -> None:
        """The controller on a deleted pod (``syncClaim``): the pod leaves ``reservedFor``; a claim
        reserved by nobody is deallocated and loses its finalizer; a claim made for the pod is
        deleted (its owner is gone, as the garbage collector would)."""
        uid = manifest.meta(pod).get("uid")
        claims = self._objects[RESOURCE_CLAIM]
        for claim in list(claims):
            status = manifest.status(claim)
            reserved = status.get("reservedFor") or []
            if not any(r.get("uid") == uid for r in reserved):
                continue
            remaining = [r for r in reserved if r.get("uid") != uid]
            new = dict(claim)
            new["status"] = {**status, "reservedFor": remaining}
            if not remaining:
                new["status"].pop("allocation", None)
                new["status"].pop("reservedFor", None)
                finalizers = [f for f in manifest.meta(claim).get("finalizers") or () if f != FINALIZER]
                new["metadata"] = {**manifest.meta(claim), "finalizers": finalizers}
            self._store(new)
        claims.remove([c for c in claims if _controlled_by(c, uid)])

    def _template(self, namespace: str, name: str) -> Object | None:
        templates = self._objects.get(RESOURCE_CLAIM_TEMPLATE)
        return templates.get(namespace, name) if templates is not None else None


def _suffix(seed: str) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_NAME_ALPHABET[b % len(_NAME_ALPHABET)] for b in digest[:_SUFFIX_LENGTH])


def _controlled_by(claim: Manifest, uid: object) -> bool:
    references = manifest.meta(claim).get("ownerReferences") or ()
    return any(o.get("controller") and o.get("uid") == uid for o in references)


def _claim_from_template(template: Object, pod: Manifest, pod_claim: str, name: str) -> Object:
    template_spec = manifest.spec(template)
    template_meta = manifest.meta(template_spec)
    pod_meta = manifest.meta(pod)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": RESOURCE_CLAIM,
        "metadata": {
            "name": name,
            "namespace": namespace_of(pod),
            "annotations": {**(template_meta.get("annotations") or {}), POD_CLAIM_NAME_ANNOTATION: pod_claim},
            "labels": dict(template_meta.get("labels") or {}),
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod_meta.get("name"),
                    "uid": pod_meta.get("uid"),
                    "controller": True,
                }
            ],
        },
        "spec": copy.deepcopy(manifest.spec(template_spec)),
    }


def allocated_devices(pod: Manifest, claims: list[Object]) -> dict[str, list[str]]:
    """What DynamicResources' PreBind wrote for ``pod``: per claim reserved for it, its devices."""
    uid = manifest.meta(pod).get("uid")
    found: dict[str, list[str]] = {}
    for claim in claims:
        status = manifest.status(claim)
        if not any(r.get("uid") == uid for r in status.get("reservedFor") or ()):
            continue
        results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or ()
        found[name_of(claim)] = [f"{r.get('driver')}/{r.get('pool')}/{r.get('device')}" for r in results]
    return found
