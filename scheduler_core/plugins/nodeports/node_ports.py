"""NodePorts: keep a pod off nodes where one of its host ports is already taken.

Upstream: ``pkg/scheduler/framework/plugins/nodeports/node_ports.go`` (v1.36), with
``util.GetHostPorts`` (``pkg/scheduler/util/utils.go``) and ``HostPortInfo.CheckConflict``
(``k8s.io/kube-scheduler/framework/types.go``). PreFilter collects the pod's host ports (those
of its containers and of its restartable "sidecar" init containers, the only init containers
that run for the pod's whole life) and returns Skip when there are none, so most pods cost
nothing here. Filter checks each wanted (ip, protocol, port) against ``NodeInfo.used_ports``:
a wanted 0.0.0.0 conflicts with the port on any IP; a wanted specific IP conflicts with the
same IP or with 0.0.0.0. A conflict is Unschedulable (preemption may free the port).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from scheduler_core.framework import (
    ASSIGNED_POD_DELETE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    EventObject,
    EventResource,
    Handle,
    HostPort,
    NodeInfo,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Status,
)
from scheduler_core.plugins import names

NAME = names.NODE_PORTS
PRE_FILTER_STATE_KEY = "PreFilter" + NAME

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"

DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    ports: tuple[HostPort, ...]

    def clone(self) -> _PreFilterState:
        # Adding or removing other pods does not change the pod's own ports.
        return self


def check_conflict(used: Mapping[HostPort, int] | Iterable[HostPort], want: HostPort) -> bool:
    """Upstream ``HostPortInfo.CheckConflict`` over a set (or counted map) of used ports."""
    if want.port <= 0:
        return False
    if want.ip == DEFAULT_BIND_ALL_HOST_IP:
        return any(u.protocol == want.protocol and u.port == want.port for u in used)
    if HostPort(DEFAULT_BIND_ALL_HOST_IP, want.protocol, want.port) in used:
        return True
    return want in used


def fits_ports(want: Sequence[HostPort], used: Mapping[HostPort, int] | Iterable[HostPort]) -> bool:
    return not any(check_conflict(used, port) for port in want)


def fits(pod: PodInfo, node: NodeInfo) -> bool:
    """Whether ``pod`` has no host port conflicting with ``node``'s (upstream ``Fits``)."""
    return fits_ports(pod.host_ports, node.used_ports)


class NodePorts:
    name = NAME
    args_model = None

    def __init__(self, args: object, handle: Handle | None) -> None:
        self._handle = handle

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Upstream with queueing hints (GA): Pod/Delete with a hint, Node/Add without one.
        # Host ports are immutable, so pod updates never free one. Our queue splits upstream's
        # Pod resource into the unscheduled pod (Pod) and pods on nodes (AssignedPod).
        return [
            ClusterEventWithHint(ASSIGNED_POD_DELETE, self._is_schedulable_after_pod_deleted),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE), self._is_schedulable_after_pod_deleted
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
        ]

    def _is_schedulable_after_pod_deleted(self, pod: PodInfo, old: EventObject, new: EventObject) -> QueueingHint:
        deleted = PodInfo.of(old)
        if not deleted.node_name and not deleted.nominated_node_name:
            return QueueingHint.SKIP  # an unscheduled pod held no port
        freed = deleted.host_ports
        if not freed:
            return QueueingHint.SKIP
        # Queue only when the deleted pod held one of the ports this pod wants.
        return QueueingHint.SKIP if fits_ports(pod.host_ports, set(freed)) else QueueingHint.QUEUE

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        ports = pod.host_ports
        if not ports:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(ports))
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        data = _pre_filter_state(state)
        if data is None:
            return Status.as_error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        if not fits_ports(data.ports, node.used_ports):
            return Status.unschedulable(ERR_REASON)
        return None


def _pre_filter_state(state: CycleState) -> _PreFilterState | None:
    return state.read_optional(PRE_FILTER_STATE_KEY, _PreFilterState)
