"""The scheduler's backend over the Kubernetes API: the twin of ``scheduler_core.simulator.backend``.

Same contract (:class:`scheduler_core.scheduler.Backend` and the plugins' ``ClusterAPI``), with
the API server in place of the in-memory store. Writes are not fed back by hand here: the
watch (``scheduler_operator.informer``) brings them back, as upstream's informers do.

* ``bind``: the pods/binding subresource with the pod's UID as precondition
  (``binding``). A 409 Conflict whose pod is found bound under the same UID (another
  replica got there first during a failover, or a watch event is late) is not an error: the
  binding cycle ends as bound, the watch event moves the pod to where it really is, and no
  Scheduled event is posted for it. A 409 for a pod re-created under the same name, or a 404, is
  an error: the scheduler forgets the pod.
* ``delete_pod`` (preemption): upstream's DisruptionTarget condition first, then a delete with
  the UID as precondition; a pod already gone is not an error.
* ``set_nominated_node``: a status patch of ``nominatedNodeName``.
* ``patch_pv_claim_ref``, ``patch_pvc_selected_node`` (VolumeBinding's PreBind, upstream
  ``bindAPIUpdate``): JSON merge patches of a PV's ``claimRef`` (and bound-by-controller
  annotation) and of a claim's selected-node annotation, with the ``resourceVersion`` the
  scheduler saw as precondition (upstream writes with Update, which has the same conflict);
  an API error fails PreBind with the API server's message.
* ``update_claim_status``, ``update_claim`` (DynamicResources: PreBind's allocation and
  ``reservedFor``, the delete-protection finalizer before it, Unreserve, PostFilter's
  deallocation; upstream ``UpdateStatus`` and ``Update``): a PUT of the ResourceClaim's
  ``status`` subresource, or of the claim, with its ``resourceVersion`` as precondition; a 409
  is final here (the plugin decides: it retries on the claim as the watch brings it back, as
  upstream's ``RetryOnConflict``).
* ``create_claim``, ``delete_claim``, ``set_extended_resource_claim_status`` (DynamicResources'
  extended resources backed by DRA): a POST of the special ResourceClaim, a DELETE with its uid
  as precondition, and a strategic merge patch of the pod's ``status.extendedResourceClaimStatus``.
* ``report_failure``: the PodScheduled=False condition and the ``nominatedNodeName`` the
  scheduler asks for (upstream ``updatePod`` in ``schedule_one.go``: a node sets it, ``""``
  clears it, ``None`` leaves it), in one status patch, skipped when the pod already carries
  them or is bound meanwhile; and a Warning FailedScheduling event through the spam filter.
* ``report_scheduled``: a Normal Scheduled event, "Successfully assigned ns/name to node".

Every call goes through the async HTTP layer (``scheduler_operator.transport``: timeouts,
client-side QPS/burst, retries of 429, 5xx and lost connections) on a bounded lane
(``scheduler_operator.calls``): binding and preemption on the critical lane, reports on the
report lane. A write that finally fails is logged and counted (``Transport.failed_writes``); a
failed bind, delete or nomination fails the cycle (the scheduler forgets the pod and requeues
it, upstream ``handleBindingCycleError``), and a failed PodScheduled condition is written again
at the pod's next failed attempt.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

from kubernetes import client

from scheduler_core.framework import ClusterAPI, Code, PodInfo, Status
from scheduler_core.framework.storage import ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE
from scheduler_operator import kube
from scheduler_operator.calls import Lanes
from scheduler_operator.informer import Store
from scheduler_operator.recorder import NORMAL, WARNING, EventRecorder
from scheduler_operator.resources import COMPONENT
from scheduler_operator.transport import CONTENT_JSON, Transport

log = logging.getLogger(__name__)

POD_SCHEDULED = "PodScheduled"
DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION = "PreemptionByScheduler"  # upstream v1.PodReasonPreemptionByScheduler
ACTION_SCHEDULING = "Scheduling"
ACTION_BINDING = "Binding"


def rfc3339(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def nomination_patch(carried: str | None, wanted: str | None) -> dict[str, Any]:
    """The status fields that bring ``status.nominatedNodeName`` from ``carried`` to ``wanted``.

    Upstream ``updatePod`` (v1.36.3 ``pkg/scheduler/schedule_one.go``): only ModeOverride writes
    (``wanted`` not None; ``""`` is ``clearNominatedNode``), and only a change. A strategic merge
    patch removes a field set to null.
    """
    if wanted is None or wanted == (carried or ""):
        return {}
    return {"nominatedNodeName": wanted or None}


def scheduled_condition(pod: Mapping[str, Any], reason: str, message: str) -> dict[str, Any] | None:
    """The PodScheduled=False condition to write, or None when the pod carries it already."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    current = next((c for c in conditions if c.get("type") == POD_SCHEDULED), None)
    if (
        current is not None
        and current.get("status") == "False"
        and (current.get("reason"), current.get("message")) == (reason, message)
    ):
        return None
    condition: dict[str, Any] = {"type": POD_SCHEDULED, "status": "False", "reason": reason, "message": message}
    if current is not None and current.get("status") == "False" and current.get("lastTransitionTime"):
        condition["lastTransitionTime"] = current["lastTransitionTime"]
    return condition


class KubeBackend:
    def __init__(
        self, transport: Transport, lanes: Lanes, recorder: EventRecorder, *, stores: Mapping[str, Store]
    ) -> None:
        """``stores`` by kind: what ``objects(kind)`` reads ("Pod" and "Node" included)."""
        self._transport = transport
        self._lanes = lanes
        self.recorder = recorder
        self._pods: Store | None = stores.get("Pod")
        self._stores: Mapping[str, Store] = stores
        self._reported: dict[str, tuple[str, str, str | None]] = {}  # uid -> last condition written
        self._conflicted: set[str] = set()  # uids bound by someone else (no Scheduled event)
        self.now: Callable[[], datetime] = lambda: datetime.now(UTC)
        self.binds = 0
        self.bind_conflicts = 0

    def forget(self, uid: str) -> None:
        """The pod is gone or bound: drop what was kept to report on it."""
        self._reported.pop(uid, None)
        self.recorder.spam.forget(uid)

    async def _patch_status(self, pod: PodInfo, body: dict[str, Any]) -> None:
        await self._transport.request(
            "PATCH", _pod_path(pod.namespace, pod.name) + "/status", body=body,
            content_type=kube.CONTENT_STRATEGIC_MERGE_PATCH, decode=False,
        )  # fmt: skip

    # -- Backend ---------------------------------------------------------------------------------
    @property
    def api(self) -> ClusterAPI:
        return self

    def objects(self, kind: str) -> Iterable[Any]:
        store = self._stores.get(kind)
        return store.values() if store is not None else ()

    def report_failure(self, pod: PodInfo, reason: str, message: str, nominated_node: str | None) -> None:
        current = (self._pods.get(pod.uid) if self._pods is not None else None) or pod.pod
        if (current.get("spec") or {}).get("nodeName"):
            return  # bound meanwhile (upstream: "Pod has been assigned to node. Abort adding it back")
        self.recorder.record(current, WARNING, "FailedScheduling", ACTION_SCHEDULING, message)
        condition = scheduled_condition(current, reason, message)
        nomination = nomination_patch((current.get("status") or {}).get("nominatedNodeName"), nominated_node)
        wanted = (reason, message, nominated_node)
        if self._reported.get(pod.uid) == wanted or (condition is None and not nomination):
            return
        self._reported[pod.uid] = wanted
        if condition is not None:
            condition.setdefault("lastTransitionTime", rfc3339(self.now()))
        status: dict[str, Any] = {"conditions": [condition]} if condition is not None else {}
        status.update(nomination)
        body = {"metadata": {"uid": pod.uid}, "status": status}  # uid: a precondition of the patch

        async def patch() -> None:
            try:
                await self._patch_status(pod, body)
            except client.ApiException as error:
                if error.status in (HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT):  # gone, or re-created
                    return
                self._failed_report(pod.uid, wanted)
                raise
            except Exception:
                self._failed_report(pod.uid, wanted)
                raise

        if not self._lanes.report(f"PodScheduled condition of {pod.key}", patch):
            self._failed_report(pod.uid, wanted)

    def _failed_report(self, uid: str, wanted: tuple[str, str, str | None]) -> None:
        """The condition did not land: counted, and written again at the pod's next failure."""
        self._transport.count_failure("pod condition")
        if self._reported.get(uid) == wanted:
            del self._reported[uid]

    def report_scheduled(self, pod: PodInfo, node_name: str) -> None:
        if pod.uid in self._conflicted:
            self._conflicted.discard(pod.uid)
            return
        note = f"Successfully assigned {pod.namespace}/{pod.name} to {node_name}"
        self.recorder.record(pod.pod, NORMAL, "Scheduled", ACTION_BINDING, note)

    # -- ClusterAPI ------------------------------------------------------------------------------
    async def bind(self, pod: PodInfo, node_name: str, annotations: Mapping[str, str] | None = None) -> Status | None:
        path = _pod_path(pod.namespace, pod.name)
        try:
            # The answer is a metav1.Status, not a Binding (the generated client fails to read
            # it): only the HTTP status matters, so its body is not decoded. Upstream reads it
            # the same way: client-go's Pods.Bind ends in ``Do(ctx).Error()``
            # (kubernetes/typed/core/v1/pod_expansion.go), an error only for a status outside
            # 200-206 (rest/request.go transformResponse); BindingREST.Create answers
            # ``Status{Status: Success}`` with 201 or an error status (pkg/registry/core/pod/
            # storage/storage.go), v1.36.3. A retried POST whose first attempt landed answers
            # 409, read below as bound.
            await self._lanes.critical.run(
                self._transport.request, "POST", path + "/binding", body=binding(pod, node_name, annotations),
                decode=False,
            )  # fmt: skip
            self.binds += 1
            log.info(
                "bound %s uid=%s node=%s", pod.key, pod.uid, node_name,
                extra={"pod": pod.key, "uid": pod.uid, "node": node_name},
            )  # fmt: skip
            return None
        except client.ApiException as error:
            if error.status == HTTPStatus.NOT_FOUND:
                return Status(Code.ERROR, f'pods "{pod.name}" not found')
            if error.status != HTTPStatus.CONFLICT:
                self._transport.count_failure("bind")
                return Status(Code.ERROR, f"binding {pod.key} to {node_name}: {api_message(error)}")
        except Exception as error:  # network and the like: the scheduler retries the pod
            self._transport.count_failure("bind")
            return Status.as_error(error)
        try:
            current = await self._lanes.critical.run(self._transport.request, "GET", path)
        except Exception as error:
            return Status.as_error(error)
        meta, spec = current.get("metadata") or {}, current.get("spec") or {}
        if meta.get("uid") == pod.uid and spec.get("nodeName"):
            self.bind_conflicts += 1
            self._conflicted.add(pod.uid)
            log.info("already bound %s uid=%s node=%s (wanted %s)", pod.key, pod.uid, spec["nodeName"], node_name)
            return None
        return Status(Code.ERROR, f'Operation cannot be fulfilled on pods/binding "{pod.name}": the pod was re-created')

    async def delete_pod(self, pod: PodInfo, reason: str) -> Status | None:
        condition = {
            "type": DISRUPTION_TARGET, "status": "True", "reason": REASON_PREEMPTION,
            "message": reason, "lastTransitionTime": rfc3339(self.now()),
        }  # fmt: skip
        patch = {"metadata": {"uid": pod.uid}, "status": {"conditions": [condition]}}
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": pod.uid}}
        try:
            await self._lanes.critical.run(self._patch_status, pod, patch)
            await self._lanes.critical.run(
                self._transport.request, "DELETE", _pod_path(pod.namespace, pod.name), body=options, decode=False
            )
        except client.ApiException as error:
            if error.status in (HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT):
                return None  # gone already (or re-created: not the victim chosen)
            self._transport.count_failure("preemption")
            return Status(Code.ERROR, f"preempting {pod.key}: HTTP {error.status} {error.reason or ''}")
        except Exception as error:
            self._transport.count_failure("preemption")
            return Status.as_error(error)
        log.info("preempted %s uid=%s: %s", pod.key, pod.uid, reason)
        return None

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> Status | None:
        body = {"metadata": {"uid": pod.uid}, "status": {"nominatedNodeName": node_name or None}}
        try:
            await self._lanes.critical.run(self._patch_status, pod, body)
        except client.ApiException as error:
            if error.status == HTTPStatus.NOT_FOUND:
                return Status(Code.ERROR, f'pods "{pod.name}" not found')
            self._transport.count_failure("nomination")
            return Status(Code.ERROR, f"nominating {pod.key}: HTTP {error.status} {error.reason or ''}")
        except Exception as error:
            self._transport.count_failure("nomination")
            return Status.as_error(error)
        return None

    async def patch_pv_claim_ref(self, pv: Mapping[str, Any]) -> tuple[dict[str, Any] | None, Status | None]:
        metadata = pv.get("metadata") or {}
        patch: dict[str, Any] = {
            "metadata": {"resourceVersion": metadata.get("resourceVersion")},
            "spec": {"claimRef": (pv.get("spec") or {}).get("claimRef")},
        }
        bound_by = (metadata.get("annotations") or {}).get(ANN_BOUND_BY_CONTROLLER)
        if bound_by is not None:
            patch["metadata"]["annotations"] = {ANN_BOUND_BY_CONTROLLER: bound_by}
        return await self._patch_storage(f"/api/v1/persistentvolumes/{metadata.get('name')}", patch)

    async def patch_pvc_selected_node(
        self, pvc: Mapping[str, Any], node_name: str
    ) -> tuple[dict[str, Any] | None, Status | None]:
        metadata = pvc.get("metadata") or {}
        patch = {
            "metadata": {
                "resourceVersion": metadata.get("resourceVersion"),
                "annotations": {ANN_SELECTED_NODE: node_name},
            }
        }
        namespace = metadata.get("namespace") or "default"
        path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{metadata.get('name')}"
        return await self._patch_storage(path, patch)

    async def update_claim_status(self, claim: Mapping[str, Any]) -> tuple[dict[str, Any] | None, Status | None]:
        return await self._update_claim(claim, "/status")

    async def update_claim(self, claim: Mapping[str, Any]) -> tuple[dict[str, Any] | None, Status | None]:
        return await self._update_claim(claim, "")

    async def _update_claim(
        self, claim: Mapping[str, Any], subresource: str
    ) -> tuple[dict[str, Any] | None, Status | None]:
        """A PUT of the claim (or its status), its resourceVersion the precondition."""
        metadata = claim.get("metadata") or {}
        path = _claims_path(metadata) + f"/{metadata.get('name')}{subresource}"
        return await self._write("PUT", path, dict(claim), params={"fieldManager": COMPONENT})

    async def create_claim(self, claim: Mapping[str, Any]) -> tuple[dict[str, Any] | None, Status | None]:
        """A POST of the special claim; a retried POST whose first attempt landed makes a second
        claim (generated names differ), which the pod's owner reference garbage-collects."""
        body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", **claim}
        params = {"fieldManager": COMPONENT}
        return await self._write("POST", _claims_path(claim.get("metadata") or {}), body, params=params)

    async def delete_claim(self, claim: Mapping[str, Any]) -> Status | None:
        """A DELETE with the claim's uid as precondition."""
        metadata = claim.get("metadata") or {}
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if metadata.get("uid"):
            options["preconditions"] = {"uid": metadata["uid"]}
        _, status = await self._write("DELETE", _claims_path(metadata) + f"/{metadata.get('name')}", options)
        return status

    async def set_extended_resource_claim_status(self, pod: PodInfo, value: Mapping[str, Any]) -> Status | None:
        """A strategic merge patch of the pod's status (upstream ``PatchPodStatus``), its uid the
        precondition."""
        body = {"metadata": {"uid": pod.uid}, "status": {"extendedResourceClaimStatus": dict(value)}}
        path = _pod_path(pod.namespace, pod.name) + "/status"
        _, status = await self._write("PATCH", path, body, content_type=kube.CONTENT_STRATEGIC_MERGE_PATCH)
        return status

    async def _patch_storage(self, path: str, patch: dict[str, Any]) -> tuple[dict[str, Any] | None, Status | None]:
        return await self._write("PATCH", path, patch, content_type=kube.CONTENT_MERGE_PATCH)

    async def _write(
        self,
        method: str,
        path: str,
        body: dict[str, Any],
        *,
        content_type: str = CONTENT_JSON,
        params: Mapping[str, str] | None = None,
    ) -> tuple[dict[str, Any] | None, Status | None]:
        """A write of a PV, PVC or ResourceClaim: the stored object, or the error (the transport
        retries 429, 5xx and lost connections). A retry is safe: each write carries its
        resourceVersion, so one that landed before its answer was lost comes back as a 409
        conflict, and PreBind fails and requeues the pod as on any conflict."""
        try:
            stored = await self._lanes.critical.run(
                self._transport.request, method, path, params=params, body=body, content_type=content_type
            )
        except Exception as error:
            # PreBind fails with the server's message; the pod is unreserved and retried.
            if isinstance(error, client.ApiException):
                return None, Status(Code.ERROR, api_message(error))
            return None, Status.as_error(error)
        return stored, None


def _pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{name}"


def _claims_path(metadata: Mapping[str, Any]) -> str:
    return f"/apis/resource.k8s.io/v1/namespaces/{metadata.get('namespace') or 'default'}/resourceclaims"


def binding(pod: PodInfo, node_name: str, annotations: Mapping[str, str] | None) -> dict[str, Any]:
    """The ``v1.Binding`` of ``pod`` to ``node_name``: the UID is a precondition, so a pod
    deleted and re-created under the same name is never bound by mistake; ``annotations`` land
    on the pod in the same write."""
    metadata: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": "v1", "kind": "Binding", "metadata": metadata,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }  # fmt: skip


def api_message(error: client.ApiException) -> str:
    """The API server's own message (``metav1.Status.message``), as client-go's error reads."""
    try:
        message = json.loads(error.body or "{}").get("message")
    except (ValueError, AttributeError):
        message = None
    return str(message) if message else f"HTTP {error.status} {error.reason or ''}".strip()
