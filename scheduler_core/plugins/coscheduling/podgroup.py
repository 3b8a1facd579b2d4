"""scheduler-plugins' PodGroup (``scheduling.x-k8s.io/v1alpha1``) as Coscheduling reads it.

Upstream: kubernetes-sigs/scheduler-plugins ``apis/scheduling/v1alpha1/types.go`` and
``pkg/util/podgroup.go``. A pod joins the group named by its label
``scheduling.x-k8s.io/pod-group`` in its own namespace. Backends carry the objects under
:data:`KIND` (``Handle.objects(KIND)``): the API group qualifies the kind, since upstream's
``scheduling.k8s.io`` PodGroup has the same kind name.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from scheduler_core.framework import PODS, Manifest, PodInfo, QuantityError, Resource, manifest

API_GROUP = "scheduling.x-k8s.io"
KIND = f"{API_GROUP}/PodGroup"
POD_GROUP_LABEL = f"{API_GROUP}/pod-group"


def group_name(pod: PodInfo) -> str:
    """``util.GetPodGroupLabel``: the group the pod names, "" for none."""
    return pod.labels.get(POD_GROUP_LABEL, "")


def full_name(pod: PodInfo) -> str:
    """``util.GetPodGroupFullName``: ``namespace/group``, "" for a pod in no group."""
    name = group_name(pod)
    return f"{pod.namespace}/{name}" if name else ""


@dataclass(frozen=True, slots=True)
class PodGroup:
    namespace: str
    name: str
    min_member: int
    min_resources: Manifest | None
    schedule_timeout_seconds: int | None
    created: float | None  # metadata.creationTimestamp, seconds since the epoch

    @property
    def full_name(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def parse(cls, obj: Manifest) -> PodGroup:
        meta = manifest.meta(obj)
        spec = manifest.spec(obj)
        timeout = spec.get("scheduleTimeoutSeconds")
        return cls(
            namespace=meta.get("namespace") or "default",
            name=meta.get("name") or "",
            min_member=int(spec.get("minMember") or 0),
            min_resources=spec.get("minResources") or None,
            schedule_timeout_seconds=int(timeout) if timeout is not None else None,
            created=parse_time(meta.get("creationTimestamp")),
        )

    def min_resources_with_pods(self) -> Resource:
        """``minResources`` with ``pods: minMember``, as PreFilter checks the cluster for."""
        try:
            wanted = Resource.from_list(self.min_resources)
        except QuantityError:
            wanted = Resource()
        wanted.allowed_pod_number = self.min_member
        return wanted


def parse_time(value: object) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def parse_found(found: Manifest | None) -> PodGroup | None:
    """The group a lookup (``Handle.lookup(KIND, namespace, name)``, the client's Get) found."""
    return PodGroup.parse(found) if found is not None else None


def resource_names(resource: Resource) -> dict[str, int]:
    """A Resource as a ResourceList of scheduler units, for the "resource gap" message."""
    names = {"cpu": resource.milli_cpu, "memory": resource.memory, "ephemeral-storage": resource.ephemeral_storage}
    names[PODS] = resource.allowed_pod_number
    names.update(resource.scalar_resources)
    return names
