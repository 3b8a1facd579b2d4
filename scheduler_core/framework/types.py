"""Pods and nodes as the scheduler sees them.

``PodInfo`` parses a pod manifest once (requests, tolerations, affinity, ports...) so
plugins never re-parse on the hot path. ``NodeInfo`` aggregates a node and the pods
assigned or assumed on it, as upstream ``pkg/scheduler/framework/types.go``. When a
NodeInfo belongs to a snapshot it also keeps its row of the snapshot's
:class:`~scheduler_core.framework.columns.NodeColumns` in step, so batch plugins see
every assume and forget at once.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NewType

from scheduler_core.framework import manifest
from scheduler_core.framework.manifest import Manifest
from scheduler_core.framework.quantity import MAX_INT64, int64_wrap
from scheduler_core.framework.resource import Resource, compute_pod_resources_memo
from scheduler_core.names import UPSTREAM_DEFAULT_SCHEDULER_NAME

_MIN_INT64 = -MAX_INT64 - 1

if TYPE_CHECKING:
    from scheduler_core.framework.affinity import PodTerms
    from scheduler_core.framework.columns import NodeColumns
    from scheduler_core.framework.labels import SelectorError
    from scheduler_core.framework.node_selector import PreferredTerms, RequiredNodeAffinity
    from scheduler_core.framework.status import Code, Status

NodeName = NewType("NodeName", str)
PodUID = NewType("PodUID", str)

# Taint effects and toleration operators (k8s.io/api/core/v1).
NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"

_generation = itertools.count(1)


def next_generation() -> int:
    """A process-wide increasing counter, bumped by every NodeInfo change."""
    return next(_generation)


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    @classmethod
    def from_dict(cls, raw: Manifest) -> Taint:
        return cls(str(raw.get("key", "")), str(raw.get("value", "") or ""), str(raw.get("effect", "")))

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}"


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    @classmethod
    def from_dict(cls, raw: Manifest) -> Toleration:
        return cls(
            key=str(raw.get("key", "") or ""),
            operator=str(raw.get("operator", "") or "Equal"),
            value=str(raw.get("value", "") or ""),
            effect=str(raw.get("effect", "") or ""),
            toleration_seconds=raw.get("tolerationSeconds"),
        )

    def tolerates(self, taint: Taint) -> bool:
        """Upstream ``Toleration.ToleratesTaint`` (k8s.io/api/core/v1/toleration.go)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator == "Equal":
            return self.value == taint.value
        return False


def tolerations_tolerate_taint(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


DO_NOT_SCHEDULE_EFFECTS = (NO_SCHEDULE, NO_EXECUTE)


def find_untolerated_taint(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """The first NoSchedule/NoExecute taint not tolerated (``FindMatchingUntoleratedTaint``
    with ``DoNotScheduleTaintsFilterFunc``), shared by TaintToleration and PodTopologySpread's
    ``nodeTaintsPolicy: Honor``."""
    for taint in taints:
        if taint.effect in DO_NOT_SCHEDULE_EFFECTS and not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None


@dataclass(slots=True)
class ImageStateSummary:
    """An image's size and the nodes that have it (upstream ``fwk.ImageStateSummary``).

    Summaries are shared by every NodeInfo holding the image, so ``num_nodes`` is current."""

    size: int
    nodes: set[str] = field(default_factory=set)

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)


@dataclass(frozen=True, slots=True)
class HostPort:
    ip: str
    protocol: str
    port: int


def host_ports(spec: Manifest) -> tuple[HostPort, ...]:
    """Upstream ``util.GetHostPorts``: host ports of restartable (sidecar) init containers, then
    of containers, sanitized as ``HostPortInfo`` does (an empty IP is 0.0.0.0, an empty protocol
    TCP); ports without a positive hostPort are not host ports."""
    return tuple(
        HostPort(p.get("hostIP") or "0.0.0.0", p.get("protocol") or "TCP", int(p["hostPort"]))
        for c in itertools.chain(
            (c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"),
            spec.get("containers") or (),
        )
        for p in c.get("ports") or ()
        if int(p.get("hostPort") or 0) > 0
    )


class PodInfo:
    """A pod with the fields the scheduler needs, parsed once."""

    __slots__ = (
        "affinity",
        "container_only_requests",
        "creation_timestamp",
        "deletion_timestamp",
        "host_ports",
        "images",
        "label_group",
        "labels",
        "name",
        "namespace",
        "node_affinity_preferred",
        "node_affinity_required",
        "node_name",
        "node_selector",
        "nominated_node_name",
        "non_zero_cpu",
        "non_zero_memory",
        "phase",
        "pod",
        "pod_group_created",
        "pod_terms",
        "priority",
        "requests",
        "scheduler_name",
        "scheduling_gates",
        "spread_constraints",
        "start_time_ns",
        "tolerations",
        "uid",
    )

    def __init__(self, pod: Manifest, *, like: PodInfo | None = None) -> None:
        """Parse ``pod``; ``like`` is an earlier version of it whose parsed resources are
        reused when the containers and overhead did not change (binding only sets nodeName)."""
        # Read inline rather than through framework.manifest: this runs for every version of
        # every pod, on the event path.
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        self.pod: Manifest = pod
        self.namespace: str = meta.get("namespace") or "default"
        self.name: str = meta.get("name") or ""
        self.uid: PodUID = PodUID(meta.get("uid") or f"{self.namespace}/{self.name}")
        self.labels: Mapping[str, str] = meta.get("labels") or {}
        self.scheduler_name: str = spec.get("schedulerName") or UPSTREAM_DEFAULT_SCHEDULER_NAME
        self.node_name: str = spec.get("nodeName") or ""
        self.nominated_node_name: str = (pod.get("status") or {}).get("nominatedNodeName") or ""
        self.priority: int = int(spec.get("priority") or 0)
        self.requests: Resource
        self.non_zero_cpu: int
        self.non_zero_memory: int
        if like is not None and _same_resources(like.pod.get("spec") or {}, spec):
            self.requests, self.non_zero_cpu, self.non_zero_memory = (
                like.requests,
                like.non_zero_cpu,
                like.non_zero_memory,
            )
        else:
            self.requests, self.non_zero_cpu, self.non_zero_memory = compute_pod_resources_memo(pod)
        self.tolerations: tuple[Toleration, ...] = tuple(Toleration.from_dict(t) for t in spec.get("tolerations") or ())
        self.node_selector: Mapping[str, str] = spec.get("nodeSelector") or {}
        self.affinity: Manifest = spec.get("affinity") or {}
        self.host_ports: tuple[HostPort, ...] = host_ports(spec)
        self.scheduling_gates: tuple[str, ...] = tuple(g.get("name", "") for g in spec.get("schedulingGates") or ())
        self.creation_timestamp: str = meta.get("creationTimestamp") or ""
        self.deletion_timestamp: str | None = meta.get("deletionTimestamp")
        self.phase: str = (pod.get("status") or {}).get("phase") or ""
        # Parsed forms of the pod, memoised on first use by the code that reads them (the
        # manifest is immutable; a changed pod is a new PodInfo). None: not computed yet.
        self.pod_terms: PodTerms | None = None  # affinity_terms (framework.affinity.pod_terms)
        self.node_affinity_required: RequiredNodeAffinity | None = None  # node_selector
        # node_selector.preferred_node_affinity: the terms, _NO_PREFERRED_TERMS when the field
        # is absent, or the parse error's message.
        self.node_affinity_preferred: PreferredTerms | str | None = None
        self.label_group: tuple[str, frozenset[tuple[str, str]]] | None = None  # InterPodAffinity
        self.images: tuple[tuple[str, ...], int] | None = None  # ImageLocality: names, containers
        self.pod_group_created: float | None = None  # Coscheduling: the PodGroup's creation time
        # NodeResources scoring: container-only requests, keyed by the strategy's resources.
        self.container_only_requests: dict[str, tuple[int, ...]] | None = None
        # PodTopologySpread: the pod's parsed constraints (or their error), keyed by action;
        # the values are the plugin's Constraint objects.
        self.spread_constraints: dict[str, tuple[object, ...] | SelectorError] | None = None
        # DefaultPreemption: ``status.startTime`` in Unix nanoseconds, as a 1-tuple ((None,):
        # absent or unreadable), read by every sort of victims (candidates.pod_start_time).
        self.start_time_ns: tuple[int | None] | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def of(cls, obj: object) -> PodInfo:
        """A queueing hint's event object as a PodInfo: a PodInfo as is, a manifest parsed.
        Anything else raises TypeError, which the queue counts as QUEUE (as upstream)."""
        if isinstance(obj, PodInfo):
            return obj
        if isinstance(obj, Mapping):
            return cls(obj)
        raise TypeError(f"expected a Pod, got {type(obj).__name__}")

    @classmethod
    def of_optional(cls, obj: object) -> PodInfo | None:
        """:meth:`of`, with ``None`` (the missing side of an add or delete event) kept."""
        return None if obj is None else cls.of(obj)

    @property
    def affinity_terms(self) -> PodTerms:
        """The pod's four (anti-)affinity term lists, parsed on first use and kept on the pod
        (upstream ``PodInfo.RequiredAffinityTerms`` and siblings); see
        :mod:`scheduler_core.framework.affinity`."""
        from scheduler_core.framework.affinity import pod_terms

        return pod_terms(self)

    @property
    def has_affinity(self) -> bool:
        """Upstream checks presence: ``podAffinity: {}`` counts."""
        return self.affinity.get("podAffinity") is not None or self.affinity.get("podAntiAffinity") is not None

    @property
    def has_required_anti_affinity(self) -> bool:
        anti = self.affinity.get("podAntiAffinity") or {}
        return bool(anti.get("requiredDuringSchedulingIgnoredDuringExecution"))

    def with_node(self, node_name: str) -> PodInfo:
        """A copy of this pod assigned to ``node_name`` (the assumed pod)."""
        spec = dict(manifest.spec(self.pod))
        spec["nodeName"] = node_name
        pod = dict(self.pod)
        pod["spec"] = spec
        clone = PodInfo.__new__(PodInfo)
        for slot in PodInfo.__slots__:
            setattr(clone, slot, getattr(self, slot))
        clone.pod = pod
        clone.node_name = node_name
        return clone

    def __repr__(self) -> str:
        return f"PodInfo({self.key})"


def _same_resources(a: Manifest, b: Manifest) -> bool:
    return (
        a.get("containers") == b.get("containers")
        and a.get("initContainers") == b.get("initContainers")
        and a.get("overhead") == b.get("overhead")
    )


def _take(pods: list[PodInfo], uid: str) -> PodInfo | None:
    """Take the pod with ``uid`` out of ``pods`` (its place takes the last pod, as upstream's
    ``NodeInfo.RemovePod``) and return it; None when it is not there. Searched from the end:
    the pod a binding confirms or forgets is the one assumed last, so a node holding thousands
    of pods (SchedulingWhileGated: 10,000 on one node) does not scan them all per binding."""
    for i in range(len(pods) - 1, -1, -1):
        existing = pods[i]
        if existing.uid == uid:
            pods[i] = pods[-1]
            pods.pop()
            return existing
    return None


class NodeInfo:
    """A node and the pods on it (assigned or assumed), with aggregated requests."""

    __slots__ = (
        "allocatable",
        "columns",
        "generation",
        "image_states",
        "labels",
        "name",
        "node",
        "non_zero_requested",
        "pods",
        "removals",
        "requested",
        "row",
        "taints",
        "unschedulable",
        "used_ports",
    )

    def __init__(self, node: Manifest | None = None) -> None:
        self.node: Manifest | None = None
        self.name: NodeName = NodeName("")
        self.labels: Mapping[str, str] = {}
        self.taints: tuple[Taint, ...] = ()
        self.unschedulable = False
        self.allocatable = Resource()
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.pods: list[PodInfo] = []
        # Calls that took pods off ``pods`` (which otherwise only grows at its end): while it
        # stays, the pods past a count seen before are the ones added since.
        self.removals = 0
        self.used_ports: dict[HostPort, int] = {}
        self.image_states: dict[str, ImageStateSummary] = {}
        self.generation = next_generation()
        self.row = -1
        self.columns: NodeColumns | None = None
        if node is not None:
            self.set_node(node)

    @classmethod
    def of(cls, obj: object) -> NodeInfo:
        """A queueing hint's Node event object as a NodeInfo: a NodeInfo as is, a manifest parsed
        (the queue converts each event once; plugins' unit tests pass manifests). Anything else
        raises TypeError, which the queue counts as QUEUE (as upstream)."""
        if isinstance(obj, NodeInfo):
            return obj
        if isinstance(obj, Mapping):
            return cls(obj)
        raise TypeError(f"expected a Node, got {type(obj).__name__}")

    @classmethod
    def of_optional(cls, obj: object) -> NodeInfo | None:
        """:meth:`of`, with ``None`` (the missing side of an add or delete event) kept."""
        return None if obj is None else cls.of(obj)

    def set_node(self, node: Manifest) -> None:
        meta = node.get("metadata") or {}
        spec = node.get("spec") or {}
        status = node.get("status") or {}
        self.node = node
        self.name = NodeName(meta.get("name") or "")
        self.labels = meta.get("labels") or {}
        self.taints = tuple(Taint.from_dict(t) for t in spec.get("taints") or ())
        self.unschedulable = bool(spec.get("unschedulable"))
        # The API server defaults allocatable to capacity (core/v1 SetDefaults_NodeStatus).
        self.allocatable = Resource.from_list(status.get("allocatable") or status.get("capacity"))
        self.generation = next_generation()
        if self.columns is not None:
            self.columns.node_changed(self)

    def add_pod(self, pod_info: PodInfo) -> None:
        self.pods.append(pod_info)
        self._account(pod_info, 1)

    def remove_pod(self, pod_info: PodInfo) -> bool:
        """Remove the pod with ``pod_info``'s UID (see :func:`_take`); False when it is not on
        this node."""
        existing = _take(self.pods, pod_info.uid)
        if existing is None:
            return False
        self.removals += 1
        self._account(existing, -1)
        return True

    def remove_pods(self, pods: Sequence[PodInfo]) -> None:
        """:meth:`remove_pod` of each of ``pods`` in turn (one not on this node is passed over),
        with the sums updated once: the same pods in the same order, the same sums (int64 wraps are
        modular, so wrapping once at the end is wrapping at each step). Preemption's dry run
        takes every lower-priority pod off each node it visits (PreemptionBasic: 330 nodes per
        preemptor), where a call per pod was most of the removal's cost."""
        if self.columns is not None:  # the snapshot's own node keeps its columns in step
            for pod_info in pods:
                self.remove_pod(pod_info)
            return
        mine = self.pods
        self.removals += 1
        cpu = memory = storage = non_zero_cpu = non_zero_memory = 0
        for pod_info in pods:
            existing = _take(mine, pod_info.uid)
            if existing is None:
                continue
            req = existing.requests
            cpu += req.milli_cpu
            memory += req.memory
            storage += req.ephemeral_storage
            non_zero_cpu += existing.non_zero_cpu
            non_zero_memory += existing.non_zero_memory
            self._add_scalars_and_ports(existing, -1)
        self._add_sums(-cpu, -memory, -storage, -non_zero_cpu, -non_zero_memory)
        self.generation = next_generation()

    def _account(self, pod_info: PodInfo, sign: int) -> None:
        req = pod_info.requests
        self._add_sums(
            sign * req.milli_cpu,
            sign * req.memory,
            sign * req.ephemeral_storage,
            sign * pod_info.non_zero_cpu,
            sign * pod_info.non_zero_memory,
        )
        self._add_scalars_and_ports(pod_info, sign)
        self.generation = next_generation()
        if self.columns is not None:
            self.columns.pods_changed(self, pod_info, sign)

    def _add_sums(self, cpu: int, memory: int, storage: int, non_zero_cpu: int, non_zero_memory: int) -> None:
        # int64 sums that wrap around as upstream's (Resource): the columns hold them as they are
        # (wrapped only when past int64: preemption's dry runs add and remove pods a million
        # times an attempt run, and a call per sum was a quarter of that cost). Modular, so
        # adding several pods' total at once is adding them in turn.
        requested = self.requested
        total = requested.milli_cpu + cpu
        requested.milli_cpu = total if _MIN_INT64 <= total <= MAX_INT64 else int64_wrap(total)
        total = requested.memory + memory
        requested.memory = total if _MIN_INT64 <= total <= MAX_INT64 else int64_wrap(total)
        total = requested.ephemeral_storage + storage
        requested.ephemeral_storage = total if _MIN_INT64 <= total <= MAX_INT64 else int64_wrap(total)
        non_zero = self.non_zero_requested
        total = non_zero.milli_cpu + non_zero_cpu
        non_zero.milli_cpu = total if _MIN_INT64 <= total <= MAX_INT64 else int64_wrap(total)
        total = non_zero.memory + non_zero_memory
        non_zero.memory = total if _MIN_INT64 <= total <= MAX_INT64 else int64_wrap(total)

    def _add_scalars_and_ports(self, pod_info: PodInfo, sign: int) -> None:
        scalar_requests = pod_info.requests.scalar_resources
        if scalar_requests:
            scalars = self.requested.scalar_resources
            for name, amount in scalar_requests.items():
                scalars[name] = int64_wrap(scalars.get(name, 0) + sign * amount)
        for port in pod_info.host_ports:
            count = self.used_ports.get(port, 0) + sign
            if count:
                self.used_ports[port] = count
            else:
                self.used_ports.pop(port, None)

    def clone(self) -> NodeInfo:
        """A detached deep-enough copy (pods list and aggregates copied), for what-if runs."""
        clone = NodeInfo.__new__(NodeInfo)
        clone.node = self.node
        clone.name = self.name
        clone.labels = self.labels
        clone.taints = self.taints
        clone.unschedulable = self.unschedulable
        clone.allocatable = self.allocatable
        clone.requested = self.requested.clone()
        clone.non_zero_requested = self.non_zero_requested.clone()
        clone.pods = list(self.pods)
        clone.removals = self.removals
        clone.used_ports = dict(self.used_ports)
        clone.image_states = self.image_states
        clone.generation = self.generation
        clone.row = -1
        clone.columns = None
        return clone

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"


@dataclass(slots=True)
class QueuedPodInfo:
    """A pod in the scheduling queue, with its attempt bookkeeping (upstream ``QueuedPodInfo``)."""

    pod_info: PodInfo
    timestamp: float = 0.0
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gated: bool = False
    gating_plugin: str = ""

    @property
    def pod(self) -> PodInfo:
        return self.pod_info


@dataclass(slots=True)
class NodeScore:
    """A node's score from one plugin; NormalizeScore may rewrite ``score`` in place."""

    name: str
    score: int


@dataclass(frozen=True, slots=True)
class PreBindPreFlightResult:
    """What a PreBind plugin's ``pre_bind_pre_flight`` says beside its status (upstream
    ``fwk.PreBindPreFlightResult``): ``allow_parallel``, its PreBind may run at the same time as
    the other PreBind plugins that allow it."""

    allow_parallel: bool = False


@dataclass(slots=True)
class PreFilterResult:
    """The nodes a PreFilter plugin narrows the cycle to; ``None`` means all nodes."""

    node_names: frozenset[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.all_nodes():
            return self
        if self.all_nodes():
            return PreFilterResult(other.node_names)
        assert self.node_names is not None and other.node_names is not None
        return PreFilterResult(self.node_names & other.node_names)


class NodeToStatus(dict[str, "Status"]):
    """Statuses of the nodes a cycle filtered out, by node name; nodes not listed have
    ``absent_status`` (upstream ``NodeToStatus`` in ``pkg/scheduler/framework/types.go``; when
    it is unset, UnschedulableAndUnresolvable: nodes never filtered cannot be helped)."""

    absent_status: Status | None = None

    def __init__(self, statuses: Mapping[str, Status] | None = None, absent_status: Status | None = None) -> None:
        super().__init__(statuses or {})
        if absent_status is None and isinstance(statuses, NodeToStatus):
            absent_status = statuses.absent_status
        if absent_status is not None:
            self.absent_status = absent_status

    def absent(self) -> Status:
        """``AbsentNodesStatus``."""
        if self.absent_status is not None:
            return self.absent_status
        from scheduler_core.framework.status import Code, Status

        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def status_of(self, node_name: str) -> Status:
        """``NodeToStatus.Get``: the node's status, or the absent nodes' status."""
        status = self.get(node_name)
        return status if status is not None else self.absent()

    def nodes_for_status_code(self, nodes: Sequence[NodeInfo], code: Code) -> list[NodeInfo]:
        """``NodesForStatusCode``: all nodes (in ``nodes`` order) when absent nodes have
        ``code``, else the listed nodes with ``code``, in this mapping's order."""
        if self.absent().code is code:
            if not self:
                return list(nodes)
            return [n for n in nodes if self.status_of(n.name).code is code]
        by_name: dict[str, NodeInfo] = {n.name: n for n in nodes}
        return [by_name[name] for name, s in self.items() if s.code is code and name in by_name]


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    """What a PostFilter plugin (preemption) achieved: the node the pod is nominated to."""

    nominated_node_name: str = ""
