"""Args, registered events and queueing hints, as upstream ``interpodaffinity/plugin_test.go``
(Test_isSchedulableAfterPodChange, Test_isSchedulableAfterNodeChange) and
``apis/config/validation/validation_pluginargs_test.go`` (TestValidateInterPodAffinityArgs)."""

from __future__ import annotations

from typing import Any, cast

import pytest
from pydantic import ValidationError

from scheduler_core.framework import (
    ActionType,
    ClusterEvent,
    EventResource,
    NodeInfo,
    PodInfo,
    QueueingHint,
)
from scheduler_core.framework.affinity import TermsError
from scheduler_core.plugins import names
from scheduler_core.plugins.interpodaffinity import InterPodAffinity, InterPodAffinityArgs
from tests.unit.plugins.interpodaffinity.helpers import setup
from tests.wrappers import Json, PodWrapper, make_pod, node, selector

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.SKIP


def plugin() -> InterPodAffinity:
    return setup([], [])[0]


# -- args ----------------------------------------------------------------------------------------


def test_args_defaults() -> None:
    """SetDefaults_InterPodAffinityArgs: hardPodAffinityWeight 1; ignore... false."""
    args = InterPodAffinityArgs.model_validate({})
    assert args.hard_pod_affinity_weight == 1
    assert args.ignore_preferred_terms_of_existing_pods is False
    nulls = InterPodAffinityArgs.model_validate(
        {"hardPodAffinityWeight": None, "ignorePreferredTermsOfExistingPods": None}
    )
    assert (nulls.hard_pod_affinity_weight, nulls.ignore_preferred_terms_of_existing_pods) == (1, False)
    assert InterPodAffinity.args_model is InterPodAffinityArgs
    assert InterPodAffinity.name == names.INTER_POD_AFFINITY == "InterPodAffinity"


@pytest.mark.parametrize(
    ("raw", "weight", "ignore"),
    [
        pytest.param({"hardPodAffinityWeight": 10}, 10, False, id="valid args"),
        pytest.param({"hardPodAffinityWeight": 0}, 0, False, id="zero weight is valid"),
        pytest.param({"hardPodAffinityWeight": 100}, 100, False, id="max weight is valid"),
        pytest.param({"ignorePreferredTermsOfExistingPods": True}, 1, True, id="ignore preferred terms"),
    ],
)
def test_args_valid(raw: dict[str, Any], weight: int, ignore: bool) -> None:
    args = InterPodAffinityArgs.model_validate(raw)
    assert (args.hard_pod_affinity_weight, args.ignore_preferred_terms_of_existing_pods) == (weight, ignore)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            {"hardPodAffinityWeight": -1},
            "hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100]",
            id="hardPodAffinityWeight less than min",
        ),
        pytest.param(
            {"hardPodAffinityWeight": 101},
            "hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]",
            id="hardPodAffinityWeight more than max",
        ),
    ],
)
def test_args_invalid(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        InterPodAffinityArgs.model_validate(raw)
    errors = info.value.errors()
    assert len(errors) == 1
    assert str(errors[0]["msg"]).removeprefix("Value error, ") == message


def test_args_reject_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        InterPodAffinityArgs.model_validate({"hardPodAffinityWeigth": 1})


# -- events ----------------------------------------------------------------------------------------


def test_events_to_register() -> None:
    pod_actions = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
    events = plugin().events_to_register()
    assert [e.event for e in events] == [
        ClusterEvent(EventResource.ASSIGNED_POD, pod_actions),
        ClusterEvent(EventResource.POD, pod_actions),
        ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
    ]
    assert all(e.hint is not None for e in events)
    # Taint updates cannot change this plugin's verdict.
    assert not events[2].event.matches(ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT))


# -- Test_isSchedulableAfterPodChange --------------------------------------------------------------


def target() -> PodWrapper:
    return make_pod().uid("p").name("p")


def affine() -> Json:
    return target().pod_affinity_in("service", "region", ["securityscan", "value2"]).obj()


def repelling() -> Json:
    return target().pod_anti_affinity_in("service", "region", ["securityscan", "value2"]).obj()


def other() -> PodWrapper:
    return make_pod().uid("other")


def two_terms() -> Json:
    return target().pod_affinity_exists("aaa", "hostname").pod_affinity_exists("bbb", "hostname").obj()


POD_CHANGES = [
    pytest.param(
        affine(),
        None,
        other().node("fake-node").label("service", "securityscan").obj(),
        QUEUE,
        id="add a pod which matches the pod affinity",
    ),
    pytest.param(affine(), None, other().label("service", "securityscan").obj(), SKIP, id="add an un-scheduled pod"),
    pytest.param(
        affine(),
        None,
        other().node("fake-node").label("aaa", "a").obj(),
        SKIP,
        id="add a pod which doesn't match the pod affinity",
    ),
    pytest.param(
        affine(),
        other().node("fake-node").label("aaa", "a").obj(),
        other().node("fake-node").label("service", "securityscan").obj(),
        QUEUE,
        id="update a pod from non-match to match pod affinity",
    ),
    pytest.param(
        affine(),
        other().node("fake-node").label("service", "value2").obj(),
        other().node("fake-node").label("service", "securityscan").obj(),
        SKIP,
        id="the updating pod matches target pod's affinity both before and after label changes",
    ),
    pytest.param(
        affine(),
        other().label("aaa", "a").obj(),
        other().label("service", "securityscan").obj(),
        SKIP,
        id="update an un-scheduled pod",
    ),
    pytest.param(
        affine(),
        other().node("fake-node").label("service", "securityscan").obj(),
        other().node("fake-node").label("aaa", "a").obj(),
        SKIP,
        id="update a pod from match to non-match the pod affinity",
    ),
    pytest.param(
        two_terms(),
        other().node("fake-node").label("aaa", "a").obj(),
        other().node("fake-node").label("service", "securityscan").obj(),
        SKIP,
        id="update a pod from match to non-match pod's affinity - multiple terms case",
    ),
    pytest.param(
        two_terms(),
        other().node("fake-node").label("aaa", "a").obj(),
        other().node("fake-node").label("aaa", "").label("bbb", "").obj(),
        QUEUE,
        id="update a pod from non-match to match pod's affinity - multiple terms case",
    ),
    pytest.param(
        target().label("foo", "baz").obj(),
        target().label("foo", "bar").obj(),
        target().label("foo", "baz").obj(),
        QUEUE,
        id="updated pod is the target pod",
    ),
    pytest.param(
        repelling(),
        other().node("fake-node").label("service", "securityscan").obj(),
        other().node("fake-node").label("service", "aaaa").obj(),
        QUEUE,
        id="modify pod label to change it from satisfying pod anti-affinity to not satisfying anti-affinity",
    ),
    pytest.param(
        repelling(),
        other().node("fake-node").label("service", "bbb").obj(),
        other().node("fake-node").label("service", "securityscan").obj(),
        SKIP,
        id="modify pod label to change it from not satisfying pod anti-affinity to satisfying anti-affinity",
    ),
    pytest.param(
        repelling(),
        other().node("fake-node").label("aaa", "a").obj(),
        None,
        SKIP,
        id="delete a pod which doesn't match pod's anti-affinity",
    ),
    pytest.param(
        repelling(),
        other().node("fake-node").label("service", "securityscan").obj(),
        None,
        QUEUE,
        id="delete a pod which matches pod's anti-affinity",
    ),
    pytest.param(
        make_pod().name("p").label("service", "securityscan").obj(),
        make_pod().node("fake-node").pod_anti_affinity_in("service", "region", ["securityscan", "value2"]).obj(),
        None,
        QUEUE,
        id="delete a pod with anti-affinity that matches pending pod",
    ),
    pytest.param(
        make_pod().name("p").label("service", "foo").obj(),
        make_pod().node("fake-node").pod_anti_affinity_in("service", "region", ["securityscan", "value2"]).obj(),
        None,
        SKIP,
        id="delete a pod with anti-affinity that doesn't match pending pod",
    ),
    pytest.param(
        make_pod()
        .name("p")
        .pod_anti_affinity_in("service", "region", ["securityscan", "value2"])
        .label("service", "foo")
        .obj(),
        make_pod()
        .node("fake-node")
        .pod_anti_affinity_in("service", "region", ["securityscan", "value2"])
        .label("service", "foo")
        .obj(),
        None,
        SKIP,
        id="delete a pod which doesn't match pending pod's anti-affinity and has anti-affinity that doesn't match "
        "pending pod",
    ),
    pytest.param(
        make_pod().name("p").pod_anti_affinity_in("service", "region", ["securityscan", "value2"]).obj(),
        make_pod().nominated_node_name("fake-node").label("aaa", "a").obj(),
        None,
        SKIP,
        id="delete a nominated pod which doesn't match pod's anti-affinity",
    ),
    pytest.param(
        make_pod().name("p").pod_anti_affinity_in("service", "region", ["securityscan", "value2"]).obj(),
        make_pod().nominated_node_name("fake-node").label("service", "securityscan").obj(),
        None,
        QUEUE,
        id="delete a nominated pod which matches pod's anti-affinity",
    ),
]


@pytest.mark.parametrize(("pod", "old", "new", "want"), POD_CHANGES)
def test_is_schedulable_after_pod_change(pod: Json, old: Json | None, new: Json | None, want: QueueingHint) -> None:
    hint = plugin().is_schedulable_after_pod_change
    assert hint(PodInfo(pod), old, new) is want
    # The queue passes parsed pods: same answer.
    assert hint(PodInfo(pod), old and PodInfo(old), new and PodInfo(new)) is want


def test_one_plugin_answers_each_event_on_its_own() -> None:
    """The queue asks one plugin about every pending pod per event, and the plugin works out
    what the event alone decides once per event: every case, asked of the same plugin in turn
    (twice each, then in reverse, with the same event objects), gets its own answer."""
    hint = plugin().is_schedulable_after_pod_change

    def parsed(obj: object) -> PodInfo | None:
        return None if obj is None else PodInfo(cast(Json, obj))

    cases = [
        (PodInfo(cast(Json, p.values[0])), parsed(p.values[1]), parsed(p.values[2]), p.values[3]) for p in POD_CHANGES
    ]
    for pod, old, new, want in [*cases, *cases[::-1]]:
        assert hint(pod, old, new) is want
        assert hint(pod, old, new) is want
    # The same event objects for another pending pod: answered for that pod.
    for pod, old, new, want in cases:
        for other_pod, _, _, _ in cases:
            assert hint(other_pod, old, new) is plugin().is_schedulable_after_pod_change(other_pod, old, new)
        assert hint(pod, old, new) is want


def test_pod_hint_raises_on_unparsable_terms() -> None:
    """Upstream returns (Queue, err); the queue treats a raising hint as Queue."""
    pod = target().pod_affinity_in("service", "region", ["{{bad}}"]).obj()
    new = other().node("n").label("service", "x").obj()
    with pytest.raises(TermsError):
        plugin().is_schedulable_after_pod_change(PodInfo(pod), None, new)


# -- Test_isSchedulableAfterNodeChange -------------------------------------------------------------


def zone_affine() -> Json:
    return make_pod().name("p").pod_affinity_in("service", "zone", ["securityscan", "value2"]).obj()


def zone_repelling() -> Json:
    return make_pod().name("p").pod_anti_affinity("zone", selector(match_labels={"another": "label"})).obj()


NODE_CHANGES = [
    pytest.param(
        zone_affine(),
        None,
        node("node-a", labels={"zone": "zone1"}, hostname_label=False),
        QUEUE,
        id="add a new node with matched pod affinity",
    ),
    pytest.param(
        make_pod().name("p").pod_affinity_in("service", "region", ["securityscan", "value2"]).obj(),
        None,
        node("node-a", labels={"zone": "zone1"}, hostname_label=False),
        SKIP,
        id="add a new node without matched topologyKey",
    ),
    pytest.param(
        zone_affine(),
        node("node-a", labels={"aaa": "a"}, hostname_label=False),
        node("node-a", labels={"aaa": "b"}, hostname_label=False),
        SKIP,
        id="update node label but not topologyKey",
    ),
    pytest.param(
        zone_affine(),
        node("node-a", labels={"zone": "zone1"}, hostname_label=False),
        {"metadata": {"name": "node-a", "labels": {"zone": "zone1", "unrelated-label": "unrelated"}}},
        SKIP,
        id="update node label that isn't related to the pod affinity",
    ),
    pytest.param(
        zone_affine(),
        node("node-a", labels={"zone": "zone1"}, hostname_label=False),
        node("node-a", labels={"zone": "zone2"}, hostname_label=False),
        QUEUE,
        id="update node with different affinity topologyKey value",
    ),
    pytest.param(
        zone_affine(),
        node("node-a", labels={"aaa": "a"}, hostname_label=False),
        node("node-a", labels={"zone": "zone1"}, hostname_label=False),
        QUEUE,
        id="update node to have the affinity label",
    ),
    pytest.param(
        zone_repelling(),
        None,
        node("node-a", labels={"zone": "zone1"}, hostname_label=False),
        QUEUE,
        id="add a new node with matched anti-affinity key",
    ),
    pytest.param(
        zone_repelling(),
        None,
        node("node-a", hostname_label=False),
        QUEUE,
        id="add a new node without matched anti-affinity key",
    ),
    pytest.param(
        zone_repelling(),
        node("node-a", labels={"zone": "zone1"}, hostname_label=False),
        {"metadata": {"name": "node-a", "labels": {"zone": "zone1", "unrelated-label": "unrelated"}}},
        SKIP,
        id="update node label that isn't related to the pod anti-affinity",
    ),
    pytest.param(
        zone_repelling(),
        node("node-a", labels={"zone": "zone1"}, hostname_label=False),
        node("node-a", labels={"zone": "zone2"}, hostname_label=False),
        QUEUE,
        id="update node with different anti-affinity topologyKey value",
    ),
    pytest.param(
        zone_repelling(),
        node("node-a", labels={"aaa": "a"}, hostname_label=False),
        node("node-a", labels={"zone": "zone1"}, hostname_label=False),
        SKIP,
        id="update node to have the anti-affinity topology label",
    ),
    pytest.param(
        zone_repelling(),
        node("node-a", labels={"zone": "zone1"}, hostname_label=False),
        node("node-a", labels={"aaa": "a"}, hostname_label=False),
        QUEUE,
        id="update node label not to have anti-affinity topology label",
    ),
]


@pytest.mark.parametrize(("pod", "old", "new", "want"), NODE_CHANGES)
def test_is_schedulable_after_node_change(pod: Json, old: Json | None, new: Json, want: QueueingHint) -> None:
    hint = plugin().is_schedulable_after_node_change
    assert hint(PodInfo(pod), old, new) is want
    assert hint(PodInfo(pod), old and NodeInfo(old), NodeInfo(new)) is want
