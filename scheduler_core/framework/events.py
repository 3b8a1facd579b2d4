"""Cluster events and queueing hints (upstream ``pkg/scheduler/framework/types.go``).

A plugin that rejects pods declares, through ``events_to_register``, which cluster events
may make those pods schedulable, and optionally a hint function that looks at the changed
object and answers QUEUE or SKIP. The queue moves a pod out of the unschedulable pool only
when an event registered by one of the plugins that rejected it answers QUEUE.

Hints are typed by the kind of their event, for the type checker only: a
``ClusterEvent(EventResource.NODE, ...)`` is a ``ClusterEvent[NodeInfo]``, one of a pod
(``POD``, ``ASSIGNED_POD``) a ``ClusterEvent[PodInfo]``, one of any other kind a
``ClusterEvent[Manifest]``, a wildcard a ``ClusterEvent[EventObject]``; and
``ClusterEventWithHint(event, hint)`` accepts a hint whose ``old`` and ``new`` take that type (or
a wider one): a :class:`QueueingHintFn` of it. A Node hint that reads ``new.labels`` type-checks;
a Pod hint registered for a Node event does not. At run time the parameter plays no part.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar, overload

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


# Upstream ``ActionType.String()`` (v1.36.3 staging/src/k8s.io/kube-scheduler/framework/types.go):
# a combination without a name of its own prints as "".
_ACTION_NAMES = {
    ActionType.ADD: "Add",
    ActionType.DELETE: "Delete",
    ActionType.UPDATE_NODE_ALLOCATABLE: "UpdateNodeAllocatable",
    ActionType.UPDATE_NODE_LABEL: "UpdateNodeLabel",
    ActionType.UPDATE_NODE_TAINT: "UpdateNodeTaint",
    ActionType.UPDATE_NODE_CONDITION: "UpdateNodeCondition",
    ActionType.UPDATE_NODE_ANNOTATION: "UpdateNodeAnnotation",
    ActionType.UPDATE_NODE_DECLARED_FEATURE: "UpdateNodeDeclaredFeature",
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
    ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_TOLERATIONS: "UpdatePodToleration",
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
    ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM: "UpdatePodGeneratedResourceClaim",
    ActionType.ALL: "All",
    ActionType.UPDATE: "Update",
}


def action_name(action: ActionType) -> str:
    return _ACTION_NAMES.get(action, "")


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


EventObject = PodInfo | NodeInfo | Manifest | None
"""The ``old`` and ``new`` objects of a cluster event of any kind, as a queueing hint receives
them: for a pod event a :class:`PodInfo`, for a node event a :class:`NodeInfo`, for any other
kind the object's manifest; ``None`` is the missing side of an add (``old``) or a delete
(``new``). A hint registered for one kind receives that kind's type (see the module's
docstring). ``PodInfo.of``, ``NodeInfo.of`` and ``storage.manifest_of`` read an object of
another type (a plugin's unit test may pass a manifest), raising TypeError for anything else."""

# The type of the objects of an event's kind, for the type checker. The default (PEP 696, in
# ``typing`` from Python 3.13) keeps an unparameterized ``ClusterEvent`` or ``QueueingHintFn``
# meaning any kind; at run time a plain TypeVar does.
if TYPE_CHECKING:
    from typing_extensions import TypeVar as DefaultTypeVar

    _Object_co = DefaultTypeVar("_Object_co", covariant=True, default=EventObject)
    _Object_contra = DefaultTypeVar("_Object_contra", contravariant=True, default=EventObject)
else:
    _Object_co = TypeVar("_Object_co", covariant=True)
    _Object_contra = TypeVar("_Object_contra", contravariant=True)

_ManifestKind = Literal[
    EventResource.PERSISTENT_VOLUME,
    EventResource.PERSISTENT_VOLUME_CLAIM,
    EventResource.STORAGE_CLASS,
    EventResource.CSI_NODE,
    EventResource.CSI_DRIVER,
    EventResource.CSI_STORAGE_CAPACITY,
    EventResource.VOLUME_ATTACHMENT,
    EventResource.RESOURCE_CLAIM,
    EventResource.RESOURCE_SLICE,
    EventResource.DEVICE_CLASS,
    EventResource.POD_GROUP,
    EventResource.X_POD_GROUP,
]


@dataclass(frozen=True, slots=True)
class ClusterEvent(Generic[_Object_co]):
    """An event: a kind and what happened to an object of it. The parameter is the type of the
    objects a hint for it receives, given by ``resource`` (module docstring)."""

    resource: EventResource
    action: ActionType
    label: str = ""

    if TYPE_CHECKING:

        @overload
        def __init__(
            self: ClusterEvent[PodInfo],
            resource: Literal[EventResource.POD, EventResource.ASSIGNED_POD],
            action: ActionType,
            label: str = "",
        ) -> None: ...
        @overload
        def __init__(
            self: ClusterEvent[NodeInfo], resource: Literal[EventResource.NODE], action: ActionType, label: str = ""
        ) -> None: ...
        @overload
        def __init__(
            self: ClusterEvent[Manifest], resource: _ManifestKind, action: ActionType, label: str = ""
        ) -> None: ...
        @overload
        def __init__(
            self: ClusterEvent[EventObject], resource: EventResource, action: ActionType, label: str = ""
        ) -> None: ...
        def __init__(self, resource: EventResource, action: ActionType, label: str = "") -> None: ...

    def matches(self, other: ClusterEvent) -> bool:
        """Whether this registered event covers ``other`` (an event that happened)."""
        if self.resource is EventResource.WILDCARD and self.action == ActionType.ALL:
            return True
        if self.resource is not EventResource.WILDCARD and self.resource is not other.resource:
            return False
        return bool(self.action & other.action)

    def __str__(self) -> str:
        """Upstream ``ClusterEvent.Label()``: the custom label, else the resource and the action."""
        return self.label or f"{self.resource.value}{action_name(self.action)}"


class QueueingHint(enum.Enum):
    SKIP = 0
    QUEUE = 1


class QueueingHintFn(Protocol[_Object_contra]):
    """``(pod, old, new) -> QueueingHint`` (upstream ``fwk.QueueingHintFn``): whether an event
    may make ``pod``, rejected by the plugin that registered it, schedulable. ``old`` and
    ``new`` are the event's objects, typed by its kind (``QueueingHintFn[NodeInfo]`` for a Node
    event; unparameterized, any :data:`EventObject`); ``None`` is the missing side of an add
    (``old``) or a delete (``new``). Raising counts as QUEUE, as upstream counts an error."""

    def __call__(self, pod: PodInfo, old: _Object_contra | None, new: _Object_contra | None, /) -> QueueingHint: ...


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """An event a plugin registers, with its hint (none: every such event answers QUEUE). The
    constructor checks the hint against the event's kind; stored, the hint is erased to
    ``QueueingHintFn[Any]``: the queue holds every plugin's hints in one table and calls each
    with the event's objects (see :func:`scheduler_core.queue.hints.hint_objects`)."""

    event: ClusterEvent
    hint: QueueingHintFn[Any] | None = None

    if TYPE_CHECKING:  # one overload per kind: a mismatch names the kind and its hint's type

        @overload
        def __init__(self, event: ClusterEvent[NodeInfo], hint: QueueingHintFn[NodeInfo] | None = None) -> None: ...
        @overload
        def __init__(self, event: ClusterEvent[PodInfo], hint: QueueingHintFn[PodInfo] | None = None) -> None: ...
        @overload
        def __init__(self, event: ClusterEvent[Manifest], hint: QueueingHintFn[Manifest] | None = None) -> None: ...
        @overload
        def __init__(
            self, event: ClusterEvent[EventObject], hint: QueueingHintFn[EventObject] | None = None
        ) -> None: ...
        def __init__(self, event: ClusterEvent[Any], hint: QueueingHintFn[Any] | None = None) -> None: ...


# Events the scheduler itself raises (upstream ``framework.EventXxx`` / queue constants).
ASSIGNED_POD_ADD = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")
ASSIGNED_POD_UPDATE = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE, "AssignedPodUpdate")
ASSIGNED_POD_DELETE = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")
UNSCHEDULED_POD_ADD = ClusterEvent(EventResource.POD, ActionType.ADD, "UnschedulablePodAdd")
NODE_ADD = ClusterEvent(EventResource.NODE, ActionType.ADD, "NodeAdd")
NODE_DELETE = ClusterEvent(EventResource.NODE, ActionType.DELETE, "NodeDelete")
UNSCHEDULABLE_TIMEOUT = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "UnschedulableTimeout")
FORCE_ACTIVATE = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "ForceActivate")
