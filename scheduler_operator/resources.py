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
    "OBJECT_KINDS",
    "PLUGIN_CONFIG_KIND",
    "PLUGIN_CONFIG_PLURAL",
    "PROFILE_KIND",
    "PROFILE_PLURAL",
    "VERSION",
    "ObjectKind",
]

COMPONENT = "crd-scheduler"  # reportingController of events, fieldManager of writes
DEFAULT_LEASE_NAME = "crd-scheduler"


@dataclass(frozen=True)
class ObjectKind:
    """A kind the plugins read through ``Handle.objects(kind)`` (upstream: the scheduler's
    informers and listers). Which of its changes are cluster events is the scheduler's call
    (``scheduler_core.eventhandlers.STORAGE_EVENT_RESOURCES``)."""

    kind: str
    group: str  # "" for the core group
    version: str
    plural: str
    namespaced: bool
    optional: bool = False  # a CRD or alpha API the cluster may not serve: absent is empty


# Upstream kube-scheduler's informers besides pods and nodes (pkg/scheduler/eventhandlers.go,
# and the listers of PodTopologySpread's default selector, InterPodAffinity's namespace
# selector, DefaultPreemption's PDBs and the volume plugins).
OBJECT_KINDS: tuple[ObjectKind, ...] = (
    ObjectKind("Namespace", "", "v1", "namespaces", False),
    ObjectKind("Service", "", "v1", "services", True),
    ObjectKind("ReplicationController", "", "v1", "replicationcontrollers", True),
    ObjectKind("ReplicaSet", "apps", "v1", "replicasets", True),
    ObjectKind("StatefulSet", "apps", "v1", "statefulsets", True),
    ObjectKind("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", True),
    ObjectKind("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims", True),
    ObjectKind("PersistentVolume", "", "v1", "persistentvolumes", False),
    ObjectKind("StorageClass", "storage.k8s.io", "v1", "storageclasses", False),
    ObjectKind("CSINode", "storage.k8s.io", "v1", "csinodes", False),
    ObjectKind("CSIDriver", "storage.k8s.io", "v1", "csidrivers", False),
    ObjectKind("CSIStorageCapacity", "storage.k8s.io", "v1", "csistoragecapacities", True),
    ObjectKind("VolumeAttachment", "storage.k8s.io", "v1", "volumeattachments", False),
    # Gang scheduling: scheduler-plugins' PodGroup CRD (Coscheduling) and upstream's alpha
    # PodGroup (GangScheduling, served with the GenericWorkload feature gate). The two share a
    # kind name; the key is the one the plugins read (``<group>/PodGroup``).
    ObjectKind("scheduling.x-k8s.io/PodGroup", "scheduling.x-k8s.io", "v1alpha1", "podgroups", True, optional=True),
    ObjectKind("scheduling.k8s.io/PodGroup", "scheduling.k8s.io", "v1alpha2", "podgroups", True, optional=True),
    # DynamicResources (upstream's informers of pkg/scheduler/framework/plugins/dynamicresources,
    # v1.36.3). resource.k8s.io/v1 is served from Kubernetes 1.34: on an older API server the
    # lists answer 404 and the stores stay empty, so pods with claims wait, as upstream's do.
    ObjectKind("DeviceClass", "resource.k8s.io", "v1", "deviceclasses", False, optional=True),
    ObjectKind("ResourceSlice", "resource.k8s.io", "v1", "resourceslices", False, optional=True),
    ObjectKind("ResourceClaim", "resource.k8s.io", "v1", "resourceclaims", True, optional=True),
)
