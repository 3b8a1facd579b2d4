"""API-server defaulting, so a manifest means in ``simulate`` what it means in a cluster.

Upstream sources:

* ``pkg/apis/core/v1/defaults.go``: ``SetDefaults_NodeStatus`` (allocatable defaults to
  capacity when unset), ``SetDefaults_Pod`` (a container's request defaults to its limit for
  every resource with a limit and no request, init containers too), ``SetDefaults_PodSpec``
  (``schedulerName`` defaults to ``default-scheduler``);
* ``plugin/pkg/admission/priority/admission.go``: ``spec.priority`` (and
  ``spec.preemptionPolicy``) from the PriorityClass named by ``priorityClassName``, the
  system classes first, else from the globalDefault class with the lowest value, else 0;
* the API server gives a pod without a namespace the request's namespace (``default`` for
  kubectl without ``-n``) and a generated uid.

A pod exported from a cluster already carries its resolved priority, so an explicit
``spec.priority`` without a class is kept (the API server would refuse it on create); one that
contradicts its named class is refused with the admission plugin's message. Generated uids are
derived from the object's name so that runs are reproducible.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterable
from typing import Any

# The system classes (pkg/scheduler/apis/config: SystemPriorityClasses), as the API server knows them.
from scheduler_core.apivalidation.objects import SYSTEM_PRIORITY_CLASSES
from scheduler_core.framework import Manifest, manifest
from scheduler_core.names import UPSTREAM_DEFAULT_SCHEDULER_NAME

DEFAULT_NAMESPACE = "default"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
_UID_NAMESPACE = uuid.UUID("0b9f1f5e-7a3c-4c59-9a53-0d1c2c6e8a11")


def generated_uid(kind: str, namespace: str, name: str) -> str:
    return str(uuid.uuid5(_UID_NAMESPACE, f"{kind}/{namespace}/{name}"))


def default_node(node: Manifest) -> dict[str, Any]:
    out = copy.deepcopy(dict(node))
    meta = out.setdefault("metadata", {})
    meta.setdefault("uid", generated_uid("Node", "", meta.get("name", "")))
    status = out.get("status")
    if isinstance(status, dict) and status.get("allocatable") is None and status.get("capacity") is not None:
        status["allocatable"] = copy.deepcopy(status["capacity"])
    return out


class PriorityClasses:
    """PriorityClass objects by name, and the global default (admission's lookup)."""

    def __init__(self, classes: Iterable[Manifest]) -> None:
        self._by_name: dict[str, Manifest] = {}
        self._default: Manifest | None = None
        for pc in classes:
            name = manifest.meta(pc).get("name", "")
            self._by_name[name] = pc
            # Upstream getDefaultPriorityClass: with several defaults, the lowest value wins.
            if pc.get("globalDefault") and (self._default is None or _value(pc) < _value(self._default)):
                self._default = pc

    def resolve(self, class_name: str) -> tuple[int, str | None] | None:
        """(priority, preemption policy) for ``class_name`` ('' = the default), None if unknown."""
        if not class_name:
            if self._default is None:
                return 0, None
            return _value(self._default), _policy(self._default)
        if class_name in SYSTEM_PRIORITY_CLASSES:
            return SYSTEM_PRIORITY_CLASSES[class_name], PREEMPT_LOWER_PRIORITY
        pc = self._by_name.get(class_name)
        if pc is None:
            return None
        return _value(pc), _policy(pc)


def _value(pc: Manifest) -> int:
    value = pc.get("value", 0)
    return value if isinstance(value, int) else 0


def _policy(pc: Manifest) -> str:
    return str(pc.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY)


def default_pod(pod: Manifest, classes: PriorityClasses) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The pod as the API server stores it, and the admission problems (path, reason)."""
    out = copy.deepcopy(dict(pod))
    meta = out.setdefault("metadata", {})
    meta["namespace"] = meta.get("namespace") or DEFAULT_NAMESPACE
    meta.setdefault("uid", generated_uid("Pod", meta["namespace"], meta.get("name", "")))
    spec = out.setdefault("spec", {})
    spec["schedulerName"] = spec.get("schedulerName") or UPSTREAM_DEFAULT_SCHEDULER_NAME
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or ():
            _default_requests(container)
    return out, _admit_priority(spec, classes)


def _default_requests(container: dict[str, Any]) -> None:
    """``SetDefaults_Pod``: a resource with a limit and no request is requested at its limit."""
    resources = container.get("resources")
    if not resources or not resources.get("limits"):
        return
    requests = resources.get("requests")
    if requests is None:
        requests = resources["requests"] = {}
    for name, limit in resources["limits"].items():
        requests.setdefault(name, limit)


def _admit_priority(spec: dict[str, Any], classes: PriorityClasses) -> list[tuple[str, str]]:
    class_name = spec.get("priorityClassName") or ""
    resolved = classes.resolve(class_name)
    if resolved is None:
        return [("spec.priorityClassName", f"no PriorityClass with name {class_name} was found")]
    priority, policy = resolved
    given = spec.get("priority")
    if given is None:
        spec["priority"] = priority
    elif class_name and given != priority:
        return [
            (
                "spec.priority",
                f"the integer value of priority ({given}) must not be provided in pod spec; "
                f"priority admission controller computed {priority} from the given PriorityClass name",
            )
        ]
    if spec.get("preemptionPolicy") is None:
        spec["preemptionPolicy"] = policy or PREEMPT_LOWER_PRIORITY
    return []
