"""The scheduler's backend over the Kubernetes API: the twin of ``scheduler_core.simulator.backend``.

Same contract (:class:`scheduler_core.scheduler.Backend` and the plugins' ``ClusterAPI``), with
the API server in place of the in-memory store. Writes are not fed back by hand here: the
watch (``scheduler_operator.watch.informer``) brings them back, as upstream's informers do.

* ``bind``: the pods/binding subresource with the pod's UID as precondition
  (``binding``). A 409 Conflict whose pod is found bound under the same UID (another
  replica got there first during a failover, or a watch event is late) is not an error: the
  binding cycle ends as bound, the watch event moves the pod to where it really is, and no
  Scheduled event is posted for it. A 409 for a pod re-created under the same name, or a 404, is
  an error: the scheduler forgets the pod.
* ``write`` (the four other verbs of ``ClusterAPI``, ``scheduler_core.framework.writes``): one
  request each, built by :func:`request`: create is a POST (with the field manager), update a
  PUT, patch a strategic merge patch, delete a DELETE; the precondition goes into the body's
  metadata, or the DeleteOptions. A pod deleted with a reason (preemption) gets upstream's
  DisruptionTarget condition first, under the same precondition. The answer is the stored
  object, or the API server's message with its code and reason (``writes.WriteError``): a 409 is
  final here (the plugin decides: DynamicResources retries on the claim as the watch brings it
  back, as upstream's ``RetryOnConflict``; preemption counts a victim gone, 404, or re-created,
  409, as preempted). The writes the plugins make this way: VolumeBinding's PreBind patches a
  PV's ``claimRef`` and a claim's selected-node annotation (upstream ``bindAPIUpdate`` writes
  with Update, which has the same conflict); DynamicResources PUTs claims and their status,
  creates and deletes the special claim of extended resources and patches the pod's
  ``status.extendedResourceClaimStatus``; preemption deletes victims and clears nominations.
* ``report_failure``: the PodScheduled=False condition and the ``nominatedNodeName`` the
  scheduler asks for (upstream ``updatePod`` in ``schedule_one.go``: a node sets it, ``""``
  clears it, ``None`` leaves it), in one status patch, skipped when the pod already carries
  them or is bound meanwhile; and a Warning FailedScheduling event through the spam filter.
  The patch is never dropped under pressure (events may be): it is the pod's one pending report
  on the report lane (``Lanes.report_on``), replaced by a newer failure and cancelled by the
  pod's binding, as upstream's API dispatcher merges per pod.
* ``report_scheduled``: a Normal Scheduled event, "Successfully assigned ns/name to node".

Every call goes through the async HTTP layer (``scheduler_operator.io.transport``: timeouts,
client-side QPS/burst, retries of 429, 5xx and lost connections) on a bounded lane
(``scheduler_operator.io.calls``): binding and preemption on the critical lane, reports on the
report lane. A write that finally fails is logged and counted (``Transport.failed_writes``, by
``bind``, ``pod condition`` or verb and resource: ``delete pods``; a 404 or 409 answers about the
object and is not counted); a failed bind, delete or nomination fails the cycle (the scheduler
forgets the pod and requeues it, upstream ``handleBindingCycleError``), and a failed
PodScheduled condition is written again at the pod's next failed attempt.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

from scheduler_core.framework import ClusterAPI, Code, Manifest, PodInfo, Status, manifest
from scheduler_core.framework.storage import scan
from scheduler_core.framework.writes import PODS, STATUS, Precondition, Verb, Write, Written, refused
from scheduler_operator.control.recorder import NORMAL, WARNING, EventRecorder
from scheduler_operator.control.status import timestamp
from scheduler_operator.io import kube
from scheduler_operator.io.calls import Lanes
from scheduler_operator.io.kube import ApiError
from scheduler_operator.io.transport import CONTENT_JSON, Transport
from scheduler_operator.resources import COMPONENT
from scheduler_operator.watch.informer import Store

log = logging.getLogger(__name__)

POD_SCHEDULED = "PodScheduled"
DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION = "PreemptionByScheduler"  # upstream v1.PodReasonPreemptionByScheduler
ACTION_SCHEDULING = "Scheduling"
ACTION_BINDING = "Binding"


def nomination_patch(carried: str | None, wanted: str | None) -> dict[str, Any]:
    """The status fields that bring ``status.nominatedNodeName`` from ``carried`` to ``wanted``.

    Upstream ``updatePod`` (v1.36.3 ``pkg/scheduler/schedule_one.go``): only ModeOverride writes
    (``wanted`` not None; ``""`` is ``clearNominatedNode``), and only a change. A strategic merge
    patch removes a field set to null.
    """
    if wanted is None or wanted == (carried or ""):
        return {}
    return {"nominatedNodeName": wanted or None}


def scheduled_condition(pod: Manifest, reason: str, message: str) -> dict[str, Any] | None:
    """The PodScheduled=False condition to write, or None when the pod carries it already."""
    conditions = manifest.status(pod).get("conditions") or []
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


class KubeBackend(ClusterAPI):
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
        # uid -> the nominatedNodeName this operator last wrote ("" cleared): the pod store may
        # not show it yet when the next failure decides whether to clear it.
        self._nominations: dict[str, str] = {}
        self.now: Callable[[], datetime] = lambda: datetime.now(UTC)

    def forget(self, uid: str) -> None:
        """The pod is gone or bound: drop what was kept to report on it."""
        self._reported.pop(uid, None)
        self._nominations.pop(uid, None)
        self._lanes.forget(uid)
        self.recorder.spam.forget(uid)

    # -- Backend ---------------------------------------------------------------------------------
    @property
    def api(self) -> ClusterAPI:
        return self

    def objects(self, kind: str) -> Iterable[Any]:
        store = self._stores.get(kind)
        return store.values() if store is not None else ()

    def lookup(self, kind: str, namespace: str, name: str) -> Any | None:
        store = self._stores.get(kind)
        if store is None:
            return None
        if kind == "Pod":  # keyed by uid
            return scan(store.values(), namespace, name)
        # Nodes by name; the other kinds by namespace/name ("/name" when cluster-scoped)
        return store.get(name if kind == "Node" else f"{namespace}/{name}")

    def objects_version(self, kind: str) -> int | None:
        store = self._stores.get(kind)
        return store.version if store is not None else 0  # a kind not carried never changes

    def report_failure(self, pod: PodInfo, reason: str, message: str, nominated_node: str | None) -> None:
        current = (self._pods.get(pod.uid) if self._pods is not None else None) or pod.pod
        if manifest.spec(current).get("nodeName"):
            return  # bound meanwhile (upstream: "Pod has been assigned to node. Abort adding it back")
        self.recorder.record(current, WARNING, "FailedScheduling", ACTION_SCHEDULING, message)
        condition = scheduled_condition(current, reason, message)
        nomination = nomination_patch(manifest.status(current).get("nominatedNodeName"), nominated_node)
        written = self._nominations.get(pod.uid)
        if not nomination and written is not None:  # the store may lag our own last write
            nomination = nomination_patch(written, nominated_node)
        wanted = (reason, message, nominated_node)
        if self._reported.get(pod.uid) == wanted or (condition is None and not nomination):
            return
        self._reported[pod.uid] = wanted
        if condition is not None:
            condition.setdefault("lastTransitionTime", timestamp(self.now()))
        status: dict[str, Any] = {"conditions": [condition]} if condition is not None else {}
        status.update(nomination)
        body = {"metadata": {"uid": pod.uid}, "status": status}  # uid: a precondition of the patch

        async def patch() -> None:
            try:
                await self._transport.request(
                    "PATCH", _pod_path(pod.namespace, pod.name) + "/status", body=body,
                    content_type=kube.CONTENT_STRATEGIC_MERGE_PATCH, decode=False,
                )  # fmt: skip
                if nomination:
                    self._nominations[pod.uid] = nominated_node or ""
            except Exception as error:
                if isinstance(error, ApiError) and error.status in (HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT):
                    return  # gone, or re-created
                self._failed_report(pod.uid, wanted)
                raise

        self._lanes.report_on(pod.uid, f"PodScheduled condition of {pod.key}", patch)

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
        # A failure report of an earlier attempt, still waiting, would mark the bound pod
        # PodScheduled=False after the binding: it goes (one in flight lands first).
        await self._lanes.settle(pod.uid)
        self._reported.pop(pod.uid, None)
        self._nominations.pop(pod.uid, None)  # the binding clears it (ClearingNominatedNodeNameAfterBinding)
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
            log.info(
                "bound %s uid=%s node=%s", pod.key, pod.uid, node_name,
                extra={"pod": pod.key, "uid": pod.uid, "node": node_name},
            )  # fmt: skip
            return None
        except ApiError as error:
            if error.status == HTTPStatus.NOT_FOUND:
                return Status(Code.ERROR, f'pods "{pod.name}" not found')
            if error.status != HTTPStatus.CONFLICT:
                self._transport.count_failure("bind")
                return Status(Code.ERROR, f"binding {pod.key} to {node_name}: {error.message}")
        except Exception as error:  # network and the like: the scheduler retries the pod
            self._transport.count_failure("bind")
            return Status.as_error(error)
        try:
            current = await self._lanes.critical.run(self._transport.request, "GET", path)
        except Exception as error:
            return Status.as_error(error)
        meta, spec = manifest.meta(current), manifest.spec(current)
        if meta.get("uid") == pod.uid and spec.get("nodeName"):
            self._conflicted.add(pod.uid)
            log.info("already bound %s uid=%s node=%s (wanted %s)", pod.key, pod.uid, spec["nodeName"], node_name)
            return None
        return Status(Code.ERROR, f'Operation cannot be fulfilled on pods/binding "{pod.name}": the pod was re-created')

    async def write(self, call: Write) -> Written:
        """One request on the critical lane (two for a pod deleted with a reason: its
        DisruptionTarget condition first). A retry of the transport is safe: a write that
        landed before its answer was lost comes back as a 409 (its precondition), or as a
        second object for a create by ``generateName`` (the special claim: its owner, the pod,
        garbage-collects it)."""
        nominated = _nomination_written(call)
        if nominated is not None:
            uid, node = nominated
            if node:
                # The binding cycle's nomination: a failure report of an earlier attempt, still
                # waiting, would land after it and undo it (upstream writes in order).
                await self._lanes.settle(uid)
            self._reported.pop(uid, None)  # report_failure's memory no longer says what is there
        if call.reason:
            condition = {
                "type": DISRUPTION_TARGET, "status": "True", "reason": REASON_PREEMPTION,
                "message": call.reason, "lastTransitionTime": timestamp(self.now()),
            }  # fmt: skip
            target = {
                "metadata": {"name": call.name, "namespace": call.namespace},
                "status": {"conditions": [condition]},
            }
            _, error = await self._send(Write(Verb.PATCH, PODS, target, call.precondition, STATUS), decode=False)
            if error is not None:
                return None, error
        stored, error = await self._send(call)
        if error is None and nominated is not None:
            self._nominations[nominated[0]] = nominated[1]
        if error is None and call.reason:
            victim = call.precondition.uid if call.precondition is not None else None
            log.info("preempted %s/%s uid=%s: %s", call.namespace, call.name, victim, call.reason)
        return stored, error

    async def _send(self, call: Write, *, decode: bool = True) -> Written:
        method, path, body, content_type, params = request(call)
        try:
            stored = await self._lanes.critical.run(
                self._transport.request, method, path, params=params, body=body, content_type=content_type,
                decode=decode,
            )  # fmt: skip
        except ApiError as error:
            if error.status not in (HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT):  # answers about the object
                self._transport.count_failure(f"{call.verb} {_resource_path(call)}")
            return None, refused(error.message, code=error.status, reason=error.reason)
        except Exception as error:  # network and the like, after the transport's retries
            self._transport.count_failure(f"{call.verb} {_resource_path(call)}")
            return None, Status.as_error(error)
        return stored, None


def _nomination_written(call: Write) -> tuple[str, str] | None:
    """(uid, node, "" to clear) of a pod status patch that writes ``nominatedNodeName`` under a
    UID precondition (``writes.patch_pod_status``), else None."""
    if call.resource != PODS or call.subresource != STATUS or call.verb is not Verb.PATCH:
        return None
    status = call.obj.get(STATUS) or {}
    uid = call.precondition.uid if call.precondition is not None else None
    if "nominatedNodeName" not in status or not uid:
        return None
    return uid, str(status["nominatedNodeName"] or "")


def _pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{name}"


def request(call: Write) -> tuple[str, str, Mapping[str, Any] | None, str, Mapping[str, str] | None]:
    """The HTTP request of ``call``: method, path, body, content type and query.

    A get has no body; a create gets the resource's apiVersion and kind; a precondition goes into the body's
    ``metadata`` (update, patch) or the DeleteOptions (delete); creates and updates name the
    field manager, as the writes of PreBind always did."""
    resource, obj, precondition = call.resource, call.obj, call.precondition
    root = f"/apis/{resource.group}/{resource.version}" if resource.group else f"/api/{resource.version}"
    if resource.namespaced:
        root += f"/namespaces/{call.namespace or 'default'}"
    path = f"{root}/{resource.plural}"
    if call.verb is Verb.CREATE:
        return "POST", path, {"apiVersion": resource.api_version, "kind": resource.kind, **obj}, CONTENT_JSON, _MANAGER
    path += f"/{call.name}" + (f"/{call.subresource}" if call.subresource else "")
    if call.verb is Verb.GET:
        return "GET", path, None, CONTENT_JSON, None
    wanted = _preconditions(precondition)
    if call.verb is Verb.DELETE:
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if wanted:
            options["preconditions"] = wanted
        return "DELETE", path, options, CONTENT_JSON, None
    body = {**obj, "metadata": {**manifest.meta(obj), **wanted}} if wanted else obj
    if call.verb is Verb.UPDATE:
        return "PUT", path, body, CONTENT_JSON, _MANAGER
    return "PATCH", path, body, kube.CONTENT_STRATEGIC_MERGE_PATCH, None


_MANAGER = {"fieldManager": COMPONENT}


def _preconditions(precondition: Precondition | None) -> dict[str, str]:
    """``metav1.Preconditions`` as JSON (also what a body's metadata carries as one)."""
    if precondition is None:
        return {}
    fields = (("uid", precondition.uid), ("resourceVersion", precondition.resource_version))
    return {key: value for key, value in fields if value}


def _resource_path(call: Write) -> str:
    """What ``crd_scheduler_failed_writes_total{write}`` names besides the verb: ``pods/status``."""
    return f"{call.resource.plural}/{call.subresource}" if call.subresource else call.resource.plural


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
