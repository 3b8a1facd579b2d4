"""Cluster events and queueing hints (upstream ``pkg/scheduler/framework/types.go``).

A plugin that rejects pods declares, through ``events_to_register``, which cluster events
may make those pods schedulable, and optionally a hint function that looks at the changed
object and answers QUEUE or SKIP. The queue moves a pod out of the unschedulable pool only
when an event registered by one of the plugins that rejected it answers QUEUE.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from scheduler_core.framework.manifest import Manifest
from scheduler_core.framework.types import NodeInfo, PodInfo


class ActionType(enum.IntFlag):
    ADD = 1
    DELETE = 1 << 1
    UPDATE_NODE_ALLOCATABLE = 1 << 2
    UPDATE_NODE_LABEL = 1 << 3
    UPDATE_NODE_TAINT = 1 << 4
    UPDATE_NODE_CONDITION = 1 << 5
    UPDATE_NODE_ANNOTATION = 1 << 6
    UPDATE_POD_LABEL = 1 << 7
    UPDATE_POD_SCALE_DOWN = 1 << 8
    UPDATE_POD_TOLERATIONS = 1 << 9
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1 << 10
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 1 << 11
    UPDATE_NODE_DECLARED_FEATURE = 1 << 12  # upstream fwk.UpdateNodeDeclaredFeature (v1.36)
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_NODE_DECLARED_FEATURE
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATIONS
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_POD_GENERATED_RESOURCE_CLAIM
    )
    ALL = ADD | DELETE | UPDATE


class EventResource(enum.StrEnum):
    POD = "Pod"  # the unscheduled pod itself
    ASSIGNED_POD = "AssignedPod"  # pods bound or assumed to a node
    NODE = "Node"
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    STORAGE_CLASS = "storage.k8s.io/StorageClass"
    CSI_NODE = "storage.k8s.io/CSINode"
    CSI_DRIVER = "storage.k8s.io/CSIDriver"
    CSI_STORAGE_CAPACITY = "storage.k8s.io/CSIStorageCapacity"
    VOLUME_ATTACHMENT = "storage.k8s.io/VolumeAttachment"
    RESOURCE_CLAIM = "resource.k8s.io/ResourceClaim"
    RESOURCE_SLICE = "resource.k8s.io/ResourceSlice"
    DEVICE_CLASS = "resource.k8s.io/DeviceClass"
    POD_GROUP = "scheduling.k8s.io/PodGroup"  # upstream fwk.PodGroup (v1alpha2, GenericWorkload)
    X_POD_GROUP = "scheduling.x-k8s.io/PodGroup"  # scheduler-plugins' PodGroup (Coscheduling)
    WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    resource: EventResource
    action: ActionType
    label: str = ""

    def matches(self, other: ClusterEvent) -> bool:
        """Whether this registered event covers ``other`` (an event that happened)."""
        if self.resource is EventResource.WILDCARD and self.action == ActionType.ALL:
            return True
        if self.resource is not EventResource.WILDCARD and self.resource is not other.resource:
            return False
        return bool(self.action & other.action)

    def __str__(self) -> str:
        return self.label or f"{self.resource.value}{self.action!r}"


class QueueingHint(enum.Enum):
    SKIP = 0
    QUEUE = 1


EventObject = PodInfo | NodeInfo | Manifest | None
"""The ``old`` and ``new`` objects of a cluster event, as a queueing hint receives them: for a
pod event a :class:`PodInfo` (or its manifest), for a node event a :class:`NodeInfo` (or its
manifest), for any other kind the object's manifest; ``None`` is the missing side of an add
(``old``) or a delete (``new``). ``PodInfo.of``, ``NodeInfo.of`` and
``storage.manifest_of`` read them, raising TypeError for anything else."""


class QueueingHintFn(Protocol):
    """``(pod, old, new) -> QueueingHint`` (upstream ``fwk.QueueingHintFn``): whether ``event``
    may make ``pod``, rejected by the plugin that registered it, schedulable. Raising counts as
    QUEUE, as upstream counts an error."""

    def __call__(self, pod: PodInfo, old: EventObject, new: EventObject, /) -> QueueingHint: ...


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: QueueingHintFn | None = None


# Events the scheduler itself raises (upstream ``framework.EventXxx`` / queue constants).
ASSIGNED_POD_ADD = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")
ASSIGNED_POD_UPDATE = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE, "AssignedPodUpdate")
ASSIGNED_POD_DELETE = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")
UNSCHEDULED_POD_ADD = ClusterEvent(EventResource.POD, ActionType.ADD, "UnscheduledPodAdd")
NODE_ADD = ClusterEvent(EventResource.NODE, ActionType.ADD, "NodeAdd")
NODE_DELETE = ClusterEvent(EventResource.NODE, ActionType.DELETE, "NodeDelete")
UNSCHEDULABLE_TIMEOUT = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "UnschedulableTimeout")
FORCE_ACTIVATE = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "ForceActivate")
