"""The API resources the operator watches and writes, named once.

The custom resources are those of ``crds/`` (generated from ``scheduler_core.config``), named in
``scheduler_core.names`` and re-exported here; the built-in ones are the pods it schedules, the
nodes it places them on, and the objects plugins read (``OBJECT_KINDS``).
"""

from __future__ import annotations

from dataclasses import dataclass

# The custom resources' names are the core's (one place: scheduler_core.names).
from scheduler_core.names import (
    API_VERSION,
    GROUP,
    PLUGIN_CONFIG_KIND,
    PLUGIN_CONFIG_PLURAL,
    PROFILE_KIND,
    PROFILE_PLURAL,
    VERSION,
)

__all__ = [
    "API_VERSION",
    "COMPONENT",
    "DEFAULT_LEASE_NAME",
    "GROUP",
    "NODES",
    "OBJECT_KINDS",
    "PLUGIN_CONFIGS",
    "PLUGIN_CONFIG_KIND",
    "PLUGIN_CONFIG_PLURAL",
    "PODS",
    "PROFILES",
    "PROFILE_KIND",
    "PROFILE_PLURAL",
    "VERSION",
    "Resource",
]

COMPONENT = "crd-scheduler"  # reportingController of events, fieldManager of writes
DEFAULT_LEASE_NAME = "crd-scheduler"


@dataclass(frozen=True)
class Resource:
    """A kind the operator lists and watches (``watch.reflector``): its name in the stores and
    its collection path (all namespaces). Of ``OBJECT_KINDS``, a kind the plugins read through
    ``Handle.objects(kind)`` (upstream: the scheduler's informers and listers); which of its
    changes are cluster events is the scheduler's call
    (``scheduler_core.eventhandlers.STORAGE_EVENT_RESOURCES``)."""

    kind: str
    group: str  # "" for the core group
    version: str
    plural: str
    optional: bool = False  # a CRD or alpha API the cluster may not serve: absent is empty
    field_selector: str = ""  # listed and watched with ``fieldSelector`` (filtered by the server)

    @property
    def path(self) -> str:
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        return f"{prefix}/{self.plural}"


NODES = Resource("Node", "", "v1", "nodes")
PODS = Resource("Pod", "", "v1", "pods")
# The custom resources (Kopf watches them; the operator lists them to check its sync, the CLI snapshots them).
PROFILES = Resource(PROFILE_KIND, GROUP, VERSION, PROFILE_PLURAL)
PLUGIN_CONFIGS = Resource(PLUGIN_CONFIG_KIND, GROUP, VERSION, PLUGIN_CONFIG_PLURAL)

# Upstream kube-scheduler's informers besides pods and nodes (pkg/scheduler/eventhandlers.go,
# and the listers of PodTopologySpread's default selector, InterPodAffinity's namespace
# selector, DefaultPreemption's PDBs and the volume plugins).
OBJECT_KINDS: tuple[Resource, ...] = (
    Resource("Namespace", "", "v1", "namespaces"),
    Resource("Service", "", "v1", "services"),
    Resource("ReplicationController", "", "v1", "replicationcontrollers"),
    Resource("ReplicaSet", "apps", "v1", "replicasets"),
    Resource("StatefulSet", "apps", "v1", "statefulsets"),
    Resource("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets"),
    Resource("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims"),
    Resource("PersistentVolume", "", "v1", "persistentvolumes"),
    Resource("StorageClass", "storage.k8s.io", "v1", "storageclasses"),
    Resource("CSINode", "storage.k8s.io", "v1", "csinodes"),
    Resource("CSIDriver", "storage.k8s.io", "v1", "csidrivers"),
    Resource("CSIStorageCapacity", "storage.k8s.io", "v1", "csistoragecapacities"),
    Resource("VolumeAttachment", "storage.k8s.io", "v1", "volumeattachments"),
    # Gang scheduling: scheduler-plugins' PodGroup CRD (Coscheduling) and upstream's alpha
    # PodGroup (GangScheduling, served with the GenericWorkload feature gate). The two share a
    # kind name; the key is the one the plugins read (``<group>/PodGroup``).
    Resource("scheduling.x-k8s.io/PodGroup", "scheduling.x-k8s.io", "v1alpha1", "podgroups", optional=True),
    Resource("scheduling.k8s.io/PodGroup", "scheduling.k8s.io", "v1alpha2", "podgroups", optional=True),
    # DynamicResources (upstream's informers of pkg/scheduler/framework/plugins/dynamicresources,
    # v1.36.3). resource.k8s.io/v1 is served from Kubernetes 1.34: on an older API server the
    # lists answer 404 and the stores stay empty, so pods with claims wait, as upstream's do.
    Resource("DeviceClass", "resource.k8s.io", "v1", "deviceclasses", optional=True),
    Resource("ResourceSlice", "resource.k8s.io", "v1", "resourceslices", optional=True),
    Resource("ResourceClaim", "resource.k8s.io", "v1", "resourceclaims", optional=True),
)
