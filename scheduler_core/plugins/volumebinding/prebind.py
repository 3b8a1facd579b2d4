"""VolumeBinding's PreBind: write the bindings chosen at Reserve, then wait until they complete.

Upstream: ``pkg/scheduler/framework/plugins/volumebinding/binder.go`` (v1.36.3),
``BindPodVolumes``, ``bindAPIUpdate`` and ``checkBindings``:

* :func:`bind_pod_volumes` first writes through the :class:`~scheduler_core.framework.ClusterAPI`,
  a patch with the resourceVersion the scheduler saw as precondition (:func:`claim_ref_write`,
  :func:`selected_node_write`): each static binding's PV gets its ``claimRef`` (the PV
  controller then binds the claim), each claim to provision gets
  ``volume.kubernetes.io/selected-node`` (an external provisioner then creates its PV). A
  failed write reverts the assumptions not yet written and fails PreBind with the API's
  message.
* It then polls the stored objects (``Handle.objects``, the informers' view, as upstream reads
  its informer caches) every second until every claim is fully bound, for at most
  ``bindTimeoutSeconds``; a reset ``claimRef``, a removed selected-node annotation (the
  provisioner gave up), a PV whose node affinity no longer fits, or a deleted pod fail at once.
  All errors are wrapped as upstream's ``"binding volumes: ..."``; the timeout is Go's
  ``context deadline exceeded``.

One deviation: upstream's poll checks first after one interval (``immediate=false``); here the
first check is immediate, which only changes anything when the bindings completed during the
writes (the simulator's in-memory PV controller and provisioner complete them at once, so a
simulated pod never waits on the wall clock).

The waiting is asynchronous (``sleep`` is awaited); ``now`` and ``sleep`` are injected so tests
run on fake time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler_core.framework import ClusterAPI, PodInfo
from scheduler_core.framework.storage import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    Manifest,
    ObjectLister,
    StorageView,
    annotations_of,
    is_pvc_fully_bound,
    labels_of,
    name_of,
    namespace_of,
    spec,
)
from scheduler_core.framework.writes import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, Precondition, Verb, Write
from scheduler_core.plugins.volumebinding.assume_cache import resource_version
from scheduler_core.plugins.volumebinding.binder import Binder, BindingInfo, PodVolumes

POLL_INTERVAL_SECONDS = 1.0  # wait.PollUntilContextTimeout(ctx, time.Second, b.bindTimeout, ...)
DEADLINE_EXCEEDED = "context deadline exceeded"  # ctx.Err() when bindTimeout passes


class BindingFailed(Exception):
    """checkBindings found a condition that needs scheduling to be retried."""


@dataclass(slots=True)
class Waiting:
    """How PreBind waits: the clock and the (asynchronous) sleep."""

    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    interval: float = POLL_INTERVAL_SECONDS


async def bind_pod_volumes(
    api: ClusterAPI,
    lister: ObjectLister,
    binder: Binder,
    pod: PodInfo,
    node_name: str,
    volumes: PodVolumes,
    timeout: float,
    waiting: Waiting,
) -> str | None:
    """``BindPodVolumes``: the error message, or None when every claim ended bound."""
    error = await _bind_api_update(api, binder, volumes, node_name)
    if error is not None:
        return error
    claims = [provision.pvc for provision in volumes.dynamic_provisions]
    deadline = waiting.now() + timeout
    while waiting.now() < deadline:
        try:
            if check_bindings(StorageView(lister), pod, node_name, volumes.static_bindings, claims):
                return None
        except BindingFailed as failure:
            return f"binding volumes: {failure}"
        await waiting.sleep(max(0.0, min(waiting.interval, deadline - waiting.now())))
    return f"binding volumes: {DEADLINE_EXCEEDED}"


def claim_ref_write(pv: Manifest) -> Write:
    """A static binding's write: ``pv``'s ``spec.claimRef`` and its bound-by-controller
    annotation (when set) onto the stored PV of that name, at ``pv``'s resourceVersion (upstream
    writes the whole PV with Update, which has the same conflict)."""
    metadata: dict[str, Any] = {"name": name_of(pv)}
    bound_by = annotations_of(pv).get(ANN_BOUND_BY_CONTROLLER)
    if bound_by is not None:
        metadata["annotations"] = {ANN_BOUND_BY_CONTROLLER: bound_by}
    patch = {"metadata": metadata, "spec": {"claimRef": spec(pv).get("claimRef")}}
    return Write(Verb.PATCH, PERSISTENT_VOLUMES, patch, Precondition(resource_version=resource_version(pv) or None))


def selected_node_write(pvc: Manifest, node_name: str) -> Write:
    """A claim to provision: the stored claim annotated with ``volume.kubernetes.io/selected-node``,
    at ``pvc``'s resourceVersion."""
    patch = {
        "metadata": {
            "name": name_of(pvc),
            "namespace": namespace_of(pvc),
            "annotations": {ANN_SELECTED_NODE: node_name},
        }
    }
    return Write(
        Verb.PATCH, PERSISTENT_VOLUME_CLAIMS, patch, Precondition(resource_version=resource_version(pvc) or None)
    )


async def _bind_api_update(api: ClusterAPI, binder: Binder, volumes: PodVolumes, node_name: str) -> str | None:
    """``bindAPIUpdate``: the writes; on failure the not-yet-written assumptions are reverted."""
    bindings, provisions = volumes.static_bindings, volumes.dynamic_provisions
    for i, binding in enumerate(bindings):
        stored, status = await api.write(claim_ref_write(binding.pv))
        if status is not None or stored is None:
            binder.revert(bindings[i:], provisions)
            return status.message() if status is not None else f'persistentvolumes "{name_of(binding.pv)}" not found'
        binding.pv = stored  # kept to wait for this version (or newer) in checkBindings
    for i, provision in enumerate(provisions):
        stored, status = await api.write(selected_node_write(provision.pvc, node_name))
        if status is not None or stored is None:
            binder.revert((), provisions[i:])
            key = f"{namespace_of(provision.pvc)}/{name_of(provision.pvc)}"
            return status.message() if status is not None else f'persistentvolumeclaims "{key}" not found'
        provision.pvc = stored
    return None


def check_bindings(
    view: StorageView, pod: PodInfo, node_name: str, bindings: Sequence[BindingInfo], claims: Sequence[Manifest]
) -> bool:
    """``checkBindings``: True when every PV and claim operated on is bound; raises
    :class:`BindingFailed` when binding has to be retried."""
    node = next((n for n in view.all("Node") if name_of(n) == node_name), None)
    if node is None:
        raise BindingFailed(f'failed to get node "{node_name}": node "{node_name}" not found')
    node_labels = labels_of(node)
    if not any(name_of(p) == pod.name and namespace_of(p) == pod.namespace for p in view.all("Pod")):
        raise BindingFailed(f'pod does not exist any more: pod "{pod.name}" not found')
    for binding in bindings:
        pv = view.find(PERSISTENT_VOLUME, name_of(binding.pv))
        if pv is None:
            raise BindingFailed(f'failed to check binding: persistentvolumes "{name_of(binding.pv)}" not found')
        pvc = view.find(PERSISTENT_VOLUME_CLAIM, name_of(binding.pvc), namespace_of(binding.pvc))
        if pvc is None:
            key = f"{namespace_of(binding.pvc)}/{name_of(binding.pvc)}"
            raise BindingFailed(f'failed to check binding: persistentvolumeclaims "{key}" not found')
        if _newer(binding.pv, pv):
            return False  # our write has not reached the informer yet
        if not view.check_node_affinity(pv, node_labels):
            raise BindingFailed(
                f'pv "{name_of(pv)}" node affinity doesn\'t match node "{node_name}": no matching NodeSelectorTerms'
            )
        claim_ref = spec(pv).get("claimRef") or {}
        if not claim_ref.get("uid"):
            raise BindingFailed(f'ClaimRef got reset for pv "{name_of(pv)}"')
        if not is_pvc_fully_bound(pvc):
            return False
    for claim in claims:
        pvc = view.find(PERSISTENT_VOLUME_CLAIM, name_of(claim), namespace_of(claim))
        if pvc is None:
            key = f"{namespace_of(claim)}/{name_of(claim)}"
            raise BindingFailed(f'failed to check provisioning pvc: persistentvolumeclaims "{key}" not found')
        if _newer(claim, pvc):
            return False
        annotations = annotations_of(pvc)
        if not annotations:
            raise BindingFailed(f'selectedNode annotation reset for PVC "{name_of(pvc)}"')
        if annotations.get(ANN_SELECTED_NODE) != node_name:
            raise BindingFailed(f'provisioning failed for PVC "{name_of(pvc)}"')
        volume_name = spec(pvc).get("volumeName") or ""
        if volume_name:
            pv = view.find(PERSISTENT_VOLUME, volume_name)
            if pv is None:
                return False  # tolerated: the PV may not have reached the informer yet
            if not view.check_node_affinity(pv, node_labels):
                raise BindingFailed(
                    f'pv "{name_of(pv)}" node affinity doesn\'t match node "{node_name}": no matching NodeSelectorTerms'
                )
        if not is_pvc_fully_bound(pvc):
            return False
    return True


def _newer(written: Manifest, stored: Manifest) -> bool:
    """``versioner.CompareResourceVersion(written, stored) > 0``: resource versions are
    integers on the API server; the simulator's are too (or empty)."""
    try:
        return int(resource_version(written) or 0) > int(resource_version(stored) or 0)
    except ValueError:
        return False
