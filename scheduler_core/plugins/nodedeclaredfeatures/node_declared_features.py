"""NodeDeclaredFeatures: a pod that needs a node feature fits only nodes that declare it.

Upstream: ``pkg/scheduler/framework/plugins/nodedeclaredfeatures/nodedeclaredfeatures.go``
(v1.36.3; the NodeDeclaredFeatures gate is beta and on by default, so the plugin is in the
default profile) over ``k8s.io/component-helpers/nodedeclaredfeatures`` (v0.36.3), whose
registry (``features/registry.go``) infers, from the pod spec alone, the features a node must
declare in ``status.declaredFeatures``:

* ``RestartAllContainersOnContainerExits``: a container or init container has a
  ``restartPolicyRules`` rule with action ``RestartAllContainers``;
* ``UserNamespacesHostNetworkSupport``: ``hostNetwork: true`` with ``hostUsers: false``.

The registry's other features (``ExtendWebSocketsToKubelet``,
``InPlacePodLevelResourcesVerticalScaling``, ``InPlacePodVerticalScalingInitContainers``) are
inferred only for pod updates, never for scheduling; no feature has a max version.

* PreFilter: a pod that needs no feature is skipped.
* Filter: every required feature must be among the node's declared features, else
  UnschedulableAndUnresolvable "node(s) didn't match Pod's required features".
* Queueing hints: a node added or whose declared features changed; an update of the pod itself
  that changes its required features.

Not carried over: ``SignPod`` (crd-scheduler has no pod signing).
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler_core.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    EventObject,
    EventResource,
    Handle,
    Manifest,
    NodeInfo,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Status,
    manifest,
)
from scheduler_core.plugins import names

NAME = names.NODE_DECLARED_FEATURES
STATE_KEY = "PreFilter" + NAME
ERR_REASON_UNSATISFIED_REQUIREMENTS = "node(s) didn't match Pod's required features"

RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
ACTION_RESTART_ALL_CONTAINERS = "RestartAllContainers"  # v1.ContainerRestartRuleActionRestartAllContainers


def required_features(spec: Manifest) -> frozenset[str]:
    """``InferForPodScheduling`` with the default registry: the features ``spec`` needs."""
    needed: set[str] = set()
    containers = [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]
    if any(
        (rule or {}).get("action") == ACTION_RESTART_ALL_CONTAINERS
        for container in containers
        for rule in (container or {}).get("restartPolicyRules") or ()
    ):
        needed.add(RESTART_ALL_CONTAINERS)
    if spec.get("hostNetwork") is True and spec.get("hostUsers") is False:
        needed.add(USER_NAMESPACES_HOST_NETWORK)
    return frozenset(needed)


def declared_features(node: NodeInfo) -> list[str]:
    return list(manifest.status(node.node or {}).get("declaredFeatures") or ())


def _pod_spec(pod: PodInfo) -> Manifest:
    return manifest.spec(pod.pod)


class NodeDeclaredFeatures:
    name = NAME
    args_model = None

    def __init__(self, args: object, handle: Handle | None) -> None:
        self._handle = handle

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
                is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.UPDATE), is_schedulable_after_pod_update),
        ]

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        needed = required_features(_pod_spec(pod))
        if not needed:
            return None, Status.skip()
        state.write(STATE_KEY, _Requirements(needed))
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        data = state.read_optional(STATE_KEY, _Requirements)
        if data is None:
            return Status.as_error(f'error reading "{STATE_KEY}" from cycle-state: not found')
        if not data.features <= set(declared_features(node)):
            return Status.unresolvable(ERR_REASON_UNSATISFIED_REQUIREMENTS)
        return None


class _Requirements:
    __slots__ = ("features",)

    def __init__(self, features: frozenset[str]) -> None:
        self.features = features

    def clone(self) -> _Requirements:
        return self


def is_schedulable_after_node_change(pod: PodInfo, old: EventObject, new: EventObject) -> QueueingHint:
    after = NodeInfo.of(new)
    if old is not None and declared_features(NodeInfo.of(old)) == declared_features(after):
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


def is_schedulable_after_pod_update(pod: PodInfo, old: EventObject, new: EventObject) -> QueueingHint:
    before, after = PodInfo.of(old), PodInfo.of(new)
    if after.uid != pod.uid:
        return QueueingHint.SKIP
    if required_features(_pod_spec(before)) == required_features(_pod_spec(after)):
        return QueueingHint.SKIP
    return QueueingHint.QUEUE
