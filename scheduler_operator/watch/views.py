"""The small views of watched objects the cache keeps: what plugins and writes read, no more.

A pod as the API server sends it carries ``metadata.managedFields`` (often more than half its
bytes), kubectl's last-applied copy of itself, and per-container fields no scheduling decision
reads (env, command, probes, mounts...), plus the kubelet's per-container status. The
reflector (``scheduler_operator.watch.reflector``) passes every object through :func:`view_of` as it
decodes it, so the cache holds only:

* every kind: the object minus ``metadata.managedFields`` and the
  ``kubectl.kubernetes.io/last-applied-configuration`` annotation;
* pods, besides: containers (init, regular) reduced to ``name``, ``image`` (ImageLocality),
  ``resources`` (requests, limits, claims: NodeResourcesFit and the DRA plugins), ``ports``
  (NodePorts) and ``restartPolicy`` (sidecar init containers count as long-running); no
  ephemeral containers (they request nothing); status without the container statuses.
  Everything else in ``spec`` (affinity, tolerations, volumes, topology spread, overhead,
  scheduling gates, resource claims...) and ``status`` (phase, conditions, nominatedNodeName,
  startTime, resource claim statuses) stays, as the events, status writes and preemption read
  them.

A field a plugin starts to read must be kept here too: ``tests/unit/operator/watch/test_reflector.py``
pins what is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
CONTAINER_FIELDS = ("name", "image", "resources", "ports", "restartPolicy")
POD_STATUS_DROPPED = ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")

Body = dict[str, Any]


def _containers(containers: Any) -> Any:
    if not isinstance(containers, list):
        return containers
    return [{k: c[k] for k in CONTAINER_FIELDS if k in c} if isinstance(c, dict) else c for c in containers]


def object_view(body: Body) -> Body:
    """Any kind: without managed fields and kubectl's last-applied copy (in place)."""
    meta = body.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and LAST_APPLIED in annotations:
            meta["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    return body


def pod_view(body: Body) -> Body:
    """A pod as the cache keeps it (in place; see the module docstring)."""
    object_view(body)
    spec = body.get("spec")
    if isinstance(spec, dict):
        for field in ("containers", "initContainers"):
            if field in spec:
                spec[field] = _containers(spec[field])
        spec.pop("ephemeralContainers", None)
    status = body.get("status")
    if isinstance(status, dict):
        for field in POD_STATUS_DROPPED:
            status.pop(field, None)
    return body


def view_of(kind: str) -> Callable[[Body], Body]:
    return pod_view if kind == "Pod" else object_view
