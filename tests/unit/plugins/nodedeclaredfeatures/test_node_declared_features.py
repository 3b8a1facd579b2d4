"""NodeDeclaredFeatures (upstream ``plugins/nodedeclaredfeatures/nodedeclaredfeatures_test.go``
v1.36.3, with the default feature registry of ``k8s.io/component-helpers/nodedeclaredfeatures``
instead of upstream's mock features)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.eventhandlers import node_change_events
from scheduler_core.framework import CycleState, NodeInfo, PodInfo, QueueingHint, Status
from scheduler_core.plugins.nodedeclaredfeatures import NodeDeclaredFeatures
from scheduler_core.plugins.nodedeclaredfeatures.node_declared_features import (
    ERR_REASON_UNSATISFIED_REQUIREMENTS,
    RESTART_ALL_CONTAINERS,
    USER_NAMESPACES_HOST_NETWORK,
    is_schedulable_after_node_change,
    is_schedulable_after_pod_update,
    required_features,
)
from scheduler_core.plugins.registry import UPSTREAM_DEFAULT_PLUGINS, in_tree_registry
from tests.wrappers import node, pod

RESTART_RULE = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
RESTARTING = [{"name": "c0", "image": "pause", "restartPolicyRules": [RESTART_RULE]}]  # a pod's containers


def declaring(name: str, *features: str) -> dict[str, Any]:
    manifest = node(name)
    if features:
        manifest.setdefault("status", {})["declaredFeatures"] = sorted(features)
    return manifest


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param(pod("p")["spec"], frozenset(), id="no-requirements"),
        pytest.param(pod(containers=RESTARTING)["spec"], {RESTART_ALL_CONTAINERS}, id="restart-all-containers-rule"),
        pytest.param(
            {"initContainers": [{"name": "i", "restartPolicyRules": [RESTART_RULE]}], "containers": []},
            {RESTART_ALL_CONTAINERS},
            id="rule-on-an-init-container",
        ),
        pytest.param(
            {"containers": [{"name": "c", "restartPolicyRules": [{"action": "Restart"}]}]},
            frozenset(),
            id="other-rule-action",
        ),
        pytest.param(
            pod(hostNetwork=True, hostUsers=False)["spec"], {USER_NAMESPACES_HOST_NETWORK}, id="host-network-userns"
        ),
        pytest.param({"hostNetwork": True}, frozenset(), id="host-network-host-users"),
        pytest.param({"hostNetwork": True, "hostUsers": True}, frozenset(), id="host-network-explicit-host-users"),
    ],
)
def test_required_features_as_the_default_registry_infers_them(spec: dict[str, Any], want: frozenset[str]) -> None:
    assert required_features(spec) == want


def run(manifest: dict[str, Any], node_manifest: dict[str, Any]) -> tuple[Status | None, Status | None]:
    plugin = NodeDeclaredFeatures(None, None)
    state = CycleState()
    the_pod, the_node = PodInfo(manifest), NodeInfo(node_manifest)
    _, pre = plugin.pre_filter(state, the_pod, [the_node])
    if pre is not None:
        return pre, None
    return None, plugin.filter(state, the_pod, the_node)


@pytest.mark.parametrize(
    ("the_pod", "the_node", "want_pre", "want_filter"),
    [
        pytest.param(pod("p"), declaring("n"), Status.skip(), None, id="pod-with-no-requirements-skips"),
        pytest.param(pod(containers=RESTARTING), declaring("n", RESTART_ALL_CONTAINERS), None, None, id="node-matches"),
        pytest.param(
            pod(containers=RESTARTING),
            declaring("n", "SomethingElse"),
            None,
            Status.unresolvable(ERR_REASON_UNSATISFIED_REQUIREMENTS),
            id="node-does-not-match",
        ),
        pytest.param(
            pod(containers=RESTARTING),
            declaring("n", RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK),
            None,
            None,
            id="node-with-more-features",
        ),
        pytest.param(
            pod(containers=RESTARTING),
            declaring("n"),
            None,
            Status.unresolvable(ERR_REASON_UNSATISFIED_REQUIREMENTS),
            id="node-declares-nothing",
        ),
    ],
)
def test_filter(
    the_pod: dict[str, Any], the_node: dict[str, Any], want_pre: Status | None, want_filter: Status | None
) -> None:
    assert run(the_pod, the_node) == (want_pre, want_filter)


def test_filter_without_pre_filter_state_is_an_error() -> None:
    status = NodeDeclaredFeatures(None, None).filter(
        CycleState(), PodInfo(pod(containers=RESTARTING)), NodeInfo(declaring("n"))
    )
    assert status == Status.as_error('error reading "PreFilterNodeDeclaredFeatures" from cycle-state: not found')


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(None, declaring("n", RESTART_ALL_CONTAINERS), QueueingHint.QUEUE, id="node-add"),
        pytest.param(declaring("n"), declaring("n", RESTART_ALL_CONTAINERS), QueueingHint.QUEUE, id="features-added"),
        pytest.param(
            declaring("n", RESTART_ALL_CONTAINERS),
            declaring("n", RESTART_ALL_CONTAINERS),
            QueueingHint.SKIP,
            id="features-unchanged",
        ),
    ],
)
def test_node_change_hint(old: dict[str, Any] | None, new: dict[str, Any], want: QueueingHint) -> None:
    assert is_schedulable_after_node_change(PodInfo(pod(containers=RESTARTING)), old, new) == want


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(
            pod("p", uid="u1"), pod(uid="u1", containers=RESTARTING), QueueingHint.QUEUE, id="requirement-added"
        ),
        pytest.param(
            pod(uid="u1", containers=RESTARTING), pod("p", uid="u1"), QueueingHint.QUEUE, id="requirement-removed"
        ),
        pytest.param(
            pod(uid="u1", containers=RESTARTING),
            pod(uid="u1", containers=RESTARTING),
            QueueingHint.SKIP,
            id="no-change",
        ),
        pytest.param(
            pod("q", uid="u2"), pod("q", uid="u2", containers=RESTARTING), QueueingHint.SKIP, id="another-pod"
        ),
    ],
)
def test_pod_update_hint(old: dict[str, Any], new: dict[str, Any], want: QueueingHint) -> None:
    target = PodInfo(pod("p", uid="u1"))
    assert is_schedulable_after_pod_update(target, old, new) == want


def test_declared_feature_change_is_its_own_node_event() -> None:
    events = node_change_events(declaring("n"), declaring("n", RESTART_ALL_CONTAINERS))
    assert [e.label for e in events] == ["NodeDeclaredFeatureChange"]


def test_in_the_registry_and_last_in_the_default_profile() -> None:
    assert in_tree_registry()["NodeDeclaredFeatures"] is NodeDeclaredFeatures
    assert UPSTREAM_DEFAULT_PLUGINS[-1] == ("NodeDeclaredFeatures", None)
