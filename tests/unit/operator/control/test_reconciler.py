"""Profiles and PluginConfigs reconciled into a real Scheduler (over the simulator's in-memory
backend): what serves, and the status each object would get."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from scheduler_core.defaults import default_plugins
from scheduler_core.framework import PodInfo
from scheduler_core.profiles import ProfileKey
from scheduler_core.runtime.registry import default_registry
from scheduler_core.scheduler import Scheduler
from scheduler_core.simulator import InMemoryCluster
from scheduler_operator.control.double_serving import DoubleServing
from scheduler_operator.control.reconciler import Reconciler
from scheduler_operator.control.recorder import EventRecorder
from scheduler_operator.control.writer import StatusWriter
from scheduler_operator.io.calls import Lanes
from scheduler_operator.io.transport import Credentials, Transport
from scheduler_operator.resources import PLUGIN_CONFIG_PLURAL, PROFILE_PLURAL
from tests import wrappers
from tests.unit.operator.control.test_double_serving import KUBE, T0, WEB, Clock, scheduled

HOME = "crd-scheduler"
# The cluster-wide profile's policy letting tenants override its schedulerName.
OVERRIDE = {"tenantPolicy": {"allowedSchedulerNames": ["crd-scheduler"]}}
MOST = {"scoringStrategy": {"type": "MostAllocated"}}


def profile(namespace: str, name: str, spec: dict[str, Any], generation: int = 1, **labels: str) -> dict[str, Any]:
    meta = {
        "namespace": namespace,
        "name": name,
        "uid": f"{namespace}-{name}",
        "generation": generation,
        "labels": labels,
    }
    return {"metadata": meta, "spec": spec}


def config(
    namespace: str, name: str, plugin: str, args: dict[str, Any], generation: int = 1, **select: str
) -> dict[str, Any]:
    spec: dict[str, Any] = {"plugin": plugin, "args": args}
    if select:
        spec["profileSelector"] = {"matchLabels": select}
    return {
        "metadata": {"namespace": namespace, "name": name, "uid": f"c-{name}", "generation": generation},
        "spec": spec,
    }


@pytest.fixture
def reconciler() -> Iterator[Reconciler]:
    registry = default_registry()
    scheduler = Scheduler(
        InMemoryCluster(), registry=registry, default_multi_point=default_plugins(registry), home_namespace=HOME
    )
    transport = Transport(Credentials("http://127.0.0.1:9", False, lambda: None))  # never called: not leading
    writer = StatusWriter(transport, EventRecorder(transport, Lanes(), instance="test"))
    yield Reconciler(scheduler, registry, writer, home_namespace=HOME)
    writer.close()


def status(reconciler: Reconciler, namespace: str, name: str, plural: str = PROFILE_PLURAL) -> dict[str, Any]:
    found = reconciler.writer.desired(plural, namespace, name)
    assert found is not None
    return found


def condition(found: dict[str, Any], kind: str) -> tuple[str, str, str]:
    c = next(c for c in found["conditions"] if c["type"] == kind)
    return c["status"], c["reason"], c["message"]


def strategy(reconciler: Reconciler, namespace: str, name: str) -> str:
    fwk = reconciler.scheduler.profiles.get(ProfileKey(namespace, name))
    assert fwk is not None
    fit = next(p for p in fwk.score_plugins if p.name == "NodeResourcesFit")
    return str(fit.args.scoring_strategy.type)  # type: ignore[attr-defined]


def test_a_valid_profile_serves_with_its_plugins_in_status(reconciler: Reconciler) -> None:
    reconciler.profile_changed(profile(HOME, "default", {"schedulerName": "crd-scheduler"}))

    found = status(reconciler, HOME, "default")
    assert condition(found, "Valid") == ("True", "Valid", "")
    assert condition(found, "Ready") == ("True", "Serving", "serving generation 1")
    assert {"name": "NodeResourcesFit", "weight": 1} in found["plugins"]["score"]
    assert found["plugins"]["bind"] == [{"name": "DefaultBinder"}]
    assert reconciler.scheduler.profiles.handles(PodInfo(wrappers.pod("p", "anywhere")))


def test_an_invalid_update_keeps_the_last_good_framework(reconciler: Reconciler) -> None:
    reconciler.profile_changed(profile(HOME, "default", OVERRIDE))
    serving = reconciler.scheduler.profiles.get(ProfileKey(HOME, "default"))
    bad = {"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Bogus"}}}]}

    reconciler.profile_changed(profile(HOME, "default", bad, generation=2))

    found = status(reconciler, HOME, "default")
    valid = condition(found, "Valid")
    assert valid[:2] == ("False", "InvalidProfile")
    assert valid[2].startswith("spec.pluginConfig[0].args: plugin 'NodeResourcesFit': ")
    assert '"Bogus"' in valid[2]
    # Refused: not Ready, Stalled (kstatus: Failed), and both say the last good one serves.
    refused = "generation 2 refused, the last good generation 1 keeps serving: spec.pluginConfig[0].args: "
    assert condition(found, "Ready")[:2] == ("False", "SpecRejected")
    assert condition(found, "Ready")[2].startswith(refused)
    assert condition(found, "Stalled")[:2] == ("True", "SpecRejected")
    assert condition(found, "Stalled")[2] == condition(found, "Ready")[2]
    assert found["observedGeneration"] == 2
    assert reconciler.scheduler.profiles.get(ProfileKey(HOME, "default")) is serving

    reconciler.profile_changed(profile(HOME, "default", OVERRIDE, generation=3))

    fixed = status(reconciler, HOME, "default")
    assert condition(fixed, "Ready") == ("True", "Serving", "serving generation 3")
    assert condition(fixed, "Stalled")[0] == "False"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param({"plugins": {"score": {"enabled": [{"name": "Nope"}]}}},
                     "spec.plugins.score.enabled[0].name: plugin 'Nope' does not exist", id="unknown-plugin"),
        pytest.param({"percentageOfNodesToScore": 101}, "spec.percentageOfNodesToScore: ", id="schema"),
        pytest.param({"extenders": [{"urlPrefix": "http://x"}]},
                     "spec.extenders[0]: tenant policy rule 'extenders': a profile in namespace 'team' may not "
                     "call extender",
                     id="tenant-extenders"),
    ],
)  # fmt: skip
def test_a_profile_that_never_built_is_not_serving(reconciler: Reconciler, spec: dict[str, Any], message: str) -> None:
    reconciler.profile_changed(profile("team", "p", spec))

    found = status(reconciler, "team", "p")
    assert condition(found, "Valid")[2].startswith(message)
    assert condition(found, "Ready")[:2] == ("False", "SpecRejected")
    assert condition(found, "Ready")[2].startswith("generation 1 refused, no generation of this profile ever served")
    assert condition(found, "Stalled")[:2] == ("True", "SpecRejected")  # Failed, not InProgress for good
    assert found["plugins"] is None
    assert reconciler.scheduler.profiles.get(ProfileKey("team", "p")) is None


def test_plugin_configs_of_the_namespace_apply_by_selector_and_report_themselves(reconciler: Reconciler) -> None:
    reconciler.profile_changed(profile("team", "batch", {}, tier="batch"))
    reconciler.profile_changed(profile("team", "web", {"schedulerName": "web"}, tier="web"))
    names = {"tenantPolicy": {"allowedSchedulerNames": ["crd-scheduler", "web"]}}
    reconciler.profile_changed(profile(HOME, "default", names, tier="batch"))

    reconciler.plugin_config_changed(config("team", "pack", "NodeResourcesFit", MOST, tier="batch"))

    assert strategy(reconciler, "team", "batch") == "MostAllocated"
    assert strategy(reconciler, "team", "web") == "LeastAllocated"
    assert strategy(reconciler, HOME, "default") == "LeastAllocated"  # another namespace's config
    found = status(reconciler, "team", "pack", PLUGIN_CONFIG_PLURAL)
    assert condition(found, "Valid") == ("True", "Valid", "")
    assert found["message"] == "applies to profiles: batch"

    reconciler.plugin_config_deleted(config("team", "pack", "NodeResourcesFit", MOST))

    assert strategy(reconciler, "team", "batch") == "LeastAllocated"


def test_a_bad_plugin_config_is_named_in_the_profile_and_in_its_own_status(reconciler: Reconciler) -> None:
    reconciler.profile_changed(profile("team", "batch", {}))

    reconciler.plugin_config_changed(config("team", "fit", "NodeResourcesFit", {"scoringStrategy": {"type": "X"}}))
    reconciler.plugin_config_changed(config("team", "ghost", "NoSuchPlugin", {}))

    profile_valid = condition(status(reconciler, "team", "batch"), "Valid")
    assert "PluginConfig team/fit: spec.args: plugin 'NodeResourcesFit': " in profile_valid[2]
    assert "PluginConfig team/ghost: spec.plugin: plugin 'NoSuchPlugin' does not exist" in profile_valid[2]
    assert condition(status(reconciler, "team", "fit", PLUGIN_CONFIG_PLURAL), "Valid")[:2] == ("False", "InvalidArgs")
    assert condition(status(reconciler, "team", "ghost", PLUGIN_CONFIG_PLURAL), "Valid") == (
        "False", "UnknownPlugin", "spec.plugin: plugin 'NoSuchPlugin' does not exist"
    )  # fmt: skip
    assert strategy(reconciler, "team", "batch") == "LeastAllocated"  # the last good build serves


def test_deleting_a_namespaced_profile_returns_its_pods_to_the_cluster_wide_one(reconciler: Reconciler) -> None:
    reconciler.profile_changed(profile(HOME, "default", OVERRIDE))
    reconciler.profile_changed(profile("team", "own", {"pluginConfig": [{"name": "NodeResourcesFit", "args": MOST}]}))
    pod = PodInfo(wrappers.pod("p", "team"))
    before = reconciler.scheduler.profiles.for_pod(pod)

    reconciler.profile_deleted(profile("team", "own", {}))

    after = reconciler.scheduler.profiles.for_pod(pod)
    assert before is not None and before.profile_name == "team/own"
    assert after is not None and after.profile_name == f"{HOME}/default"
    assert reconciler.writer.desired(PROFILE_PLURAL, "team", "own") is None


def test_a_status_only_change_does_not_rebuild(reconciler: Reconciler) -> None:
    body = profile(HOME, "default", OVERRIDE)
    reconciler.profile_changed(body)
    serving = reconciler.scheduler.profiles.get(ProfileKey(HOME, "default"))

    reconciler.profile_changed({**body, "status": {"observedGeneration": 1}})

    assert reconciler.scheduler.profiles.get(ProfileKey(HOME, "default")) is serving


# -- tenancy: no silent fallback, last good across restarts, the policy's owner ----------------
def _restarted(old: Reconciler) -> Reconciler:
    """A fresh replica: a new scheduler and reconciler, sharing nothing in memory with ``old``."""
    registry = default_registry()
    scheduler = Scheduler(
        InMemoryCluster(), registry=registry, default_multi_point=default_plugins(registry), home_namespace=HOME
    )
    return Reconciler(scheduler, registry, old.writer, home_namespace=HOME)


def test_a_restart_with_an_invalid_generation_serves_the_last_good_one_from_status(reconciler: Reconciler) -> None:
    reconciler.profile_changed(profile(HOME, "default", OVERRIDE))
    added = {"pluginConfig": [{"name": "NodeAffinity", "args": {"addedAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}}]}  # fmt: skip
    reconciler.profile_changed(profile("team", "own", added))
    saved = status(reconciler, "team", "own")
    assert saved["lastGood"]["generation"] == 1
    bad = profile("team", "own", {"plugins": {"score": {"enabled": [{"name": "Nope"}]}}}, generation=2)
    bad["status"] = saved

    replica = _restarted(reconciler)
    replica.profile_changed(profile(HOME, "default", OVERRIDE))
    replica.profile_changed(bad)

    fwk = replica.scheduler.profiles.for_pod(PodInfo(wrappers.pod("p", "team")))
    assert fwk is not None and fwk.profile_name == "team/own"  # never the cluster-wide one
    found = status(replica, "team", "own")
    assert condition(found, "Valid")[:2] == ("False", "InvalidProfile")
    assert condition(found, "Ready")[:2] == ("False", "SpecRejected")
    assert "the last good generation 1 keeps serving" in condition(found, "Ready")[2]


def test_an_invalid_profile_without_a_last_good_one_holds_its_pods(reconciler: Reconciler) -> None:
    reconciler.profile_changed(profile(HOME, "default", OVERRIDE))
    reconciler.profile_changed(profile("team", "own", {"percentageOfNodesToScore": 101}))

    pod = PodInfo(wrappers.pod("p", "team"))
    assert reconciler.scheduler.profiles.for_pod(pod) is None
    reason = reconciler.scheduler.profiles.held_reason(pod)
    assert reason is not None and reason.startswith("profile team/own (schedulerName 'crd-scheduler') does not serve: ")


def test_a_tighter_policy_stops_a_serving_tenant_profile_that_breaks_it(reconciler: Reconciler) -> None:
    allow = {"tenantPolicy": {"allowedSchedulerNames": ["crd-scheduler"], "allowDisabling": ["TaintToleration"]}}
    reconciler.profile_changed(profile(HOME, "default", allow))
    spec = {"plugins": {"filter": {"disabled": [{"name": "TaintToleration"}]}}}
    reconciler.profile_changed(profile("team", "own", spec))
    assert reconciler.scheduler.profiles.get(ProfileKey("team", "own")) is not None

    reconciler.profile_changed(profile(HOME, "default", OVERRIDE, generation=2))

    assert reconciler.scheduler.profiles.get(ProfileKey("team", "own")) is None
    valid = condition(status(reconciler, "team", "own"), "Valid")
    assert valid[:2] == ("False", "InvalidProfile")
    assert "tenant policy rule 'protected-plugins'" in valid[2] and "'TaintToleration'" in valid[2]


def test_deleting_the_winner_promotes_the_next_oldest(reconciler: Reconciler) -> None:
    older = profile("team", "older", {})
    older["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    newer = profile("team", "newer", {})
    newer["metadata"]["creationTimestamp"] = "2026-02-01T00:00:00Z"
    reconciler.profile_changed(newer)
    reconciler.profile_changed(older)

    pod = PodInfo(wrappers.pod("p", "team"))
    assert (reconciler.scheduler.profiles.for_pod(pod) or _none()).profile_name == "team/older"
    assert condition(status(reconciler, "team", "newer"), "Valid")[0] == "False"
    assert condition(status(reconciler, "team", "newer"), "Ready")[0] == "False"  # it served first, then lost
    assert reconciler.scheduler.profiles.get(ProfileKey("team", "newer")) is None

    reconciler.profile_deleted(older)

    assert (reconciler.scheduler.profiles.for_pod(pod) or _none()).profile_name == "team/newer"
    assert condition(status(reconciler, "team", "newer"), "Valid")[0] == "True"


def _none() -> Any:
    raise AssertionError("no framework")


def test_a_plugin_config_with_args_too_deep_is_invalid_and_harms_no_profile(reconciler: Reconciler) -> None:
    deep: dict[str, Any] = {}
    for _ in range(40):
        deep = {"a": deep}
    reconciler.profile_changed(profile("team", "own", {}))

    reconciler.plugin_config_changed(config("team", "deep", "NodeResourcesFit", deep))

    valid = condition(status(reconciler, "team", "deep", PLUGIN_CONFIG_PLURAL), "Valid")
    assert valid[:2] == ("False", "InvalidArgs")
    assert valid[2] == "spec.args" + ".a" * 17 + ": nested deeper than 16 levels"
    assert reconciler.scheduler.profiles.get(ProfileKey("team", "own")) is not None


def test_a_plugin_config_change_rebuilds_one_profile_per_event_loop_turn(reconciler: Reconciler) -> None:
    """The Lease renewal (any other task) runs between two rebuilds, never after all of them."""

    async def scenario() -> list[int]:
        reconciler.quiet = 0  # no debounce: the rebuilds start on the next loop turn
        for i in range(4):
            reconciler.profile_changed(profile("team", f"p{i}", {"schedulerName": f"s{i}"}))
        reconciler.plugin_config_changed(config("team", "pack", "NodeResourcesFit", MOST))
        rebuilt = []
        for _ in range(8):  # what a task woken once per loop turn sees
            rebuilt.append(sum(strategy(reconciler, "team", f"p{i}") == "MostAllocated" for i in range(4)))
            await asyncio.sleep(0)
        await reconciler.settle()
        return rebuilt

    assert asyncio.run(scenario()) == [0, 0, 0, 1, 2, 3, 4, 4]


Event = tuple[str, str, str, str]  # object name, type, reason, note


def _events(reconciler: Reconciler) -> list[Event]:
    """Record the events the reconciler asks for (the writer posts them on the leader only)."""
    events: list[Event] = []

    def record(body: Any, event_type: str, reason: str, note: str, **_: Any) -> None:
        events.append((body["metadata"]["name"], event_type, reason, note))

    reconciler.writer.event = record  # type: ignore[method-assign]
    return events


def test_a_plugin_config_refused_by_the_tenant_policy_is_not_ready_and_says_so_on_itself(
    reconciler: Reconciler,
) -> None:
    events = _events(reconciler)
    reconciler.profile_changed(profile(HOME, "default", OVERRIDE))
    reconciler.profile_changed(profile("team", "packed", {}))

    reconciler.plugin_config_changed(config("team", "fit", "NodeResourcesFit", {"ignoredResources": ["cpu"]}))
    reconciler.plugin_config_changed(config("team", "fit", "NodeResourcesFit", {"ignoredResources": ["cpu"]}))

    found = status(reconciler, "team", "fit", PLUGIN_CONFIG_PLURAL)
    refusal = (
        "refused by profile team/packed: spec.args.ignoredResources: tenant policy rule 'narrowing-args': a profile "
        "in namespace 'team' may set only args that narrow where its own pods go or how they score"
    )
    assert condition(found, "Valid")[:2] == ("True", "Valid")  # its own spec is fine
    ready = condition(found, "Ready")
    assert ready[:2] == ("False", "RefusedByProfile") and ready[2].startswith(refusal)
    assert condition(found, "Stalled") == ("True", "RefusedByProfile", ready[2])
    assert [e for e in events if e[0] == "fit"] == [("fit", "Warning", "RefusedByProfile", ready[2])]  # once

    reconciler.plugin_config_changed(config("team", "fit", "NodeResourcesFit", MOST, generation=2))

    fixed = status(reconciler, "team", "fit", PLUGIN_CONFIG_PLURAL)
    assert condition(fixed, "Ready")[:2] == ("True", "Applied")
    assert condition(fixed, "Stalled")[0] == "False"
    assert [e[1:3] for e in events if e[0] == "fit"] == [("Warning", "RefusedByProfile"), ("Normal", "Applied")]


def test_a_home_profile_change_announces_nothing_on_tenant_profiles_that_did_not_change(
    reconciler: Reconciler,
) -> None:
    events = _events(reconciler)
    reconciler.profile_changed(profile(HOME, "default", OVERRIDE))
    reconciler.profile_changed(profile("team", "own", {}))
    reconciler.profile_changed(profile("team", "bad", {"schedulerName": "other", "percentageOfNodesToScore": 101}))
    assert [e[:3] for e in events if e[0] != "default"] == [
        ("own", "Normal", "Reloaded"), ("bad", "Warning", "InvalidProfile")
    ]  # fmt: skip

    for generation in (2, 3):
        reconciler.profile_changed(
            profile(HOME, "default", {**OVERRIDE, "percentageOfNodesToScore": generation}, generation)
        )

    assert reconciler.scheduler.profiles.get(ProfileKey("team", "own")) is not None
    assert [e[:3] for e in events if e[0] != "default"] == [
        ("own", "Normal", "Reloaded"), ("bad", "Warning", "InvalidProfile")
    ]  # fmt: skip
    assert [e[2] for e in events if e[0] == "default"] == ["Reloaded"] * 3

    reconciler.profile_changed(profile("team", "own", {"percentageOfNodesToScore": 7}, generation=2))
    assert events[-1][:3] == ("own", "Normal", "Reloaded")


# -- another scheduler serving a profile's name (scheduler_operator.control.double_serving) --------------
TAKEOVER = {"schedulerName": "default-scheduler"}


def _watching(reconciler: Reconciler, clock: Clock) -> Reconciler:
    """The fixture's scheduler and writer, with a detector on ``clock``."""
    detector = DoubleServing(reconciler.scheduler.profiles.key_for, clock=clock)
    return Reconciler(
        reconciler.scheduler, reconciler.registry, reconciler.writer, home_namespace=HOME, double_serving=detector
    )


def test_another_scheduler_binding_its_pods_is_a_warning_condition_and_one_event(reconciler: Reconciler) -> None:
    clock = Clock()
    watching = _watching(reconciler, clock)
    events = _events(watching)
    watching.profile_changed(profile(HOME, "default", TAKEOVER))
    assert condition(status(watching, HOME, "default"), "DoubleServing") == (
        "False", "NoOtherScheduler",
        "no other scheduler was seen binding pods of schedulerName 'default-scheduler' in the last 10 minutes",
    )  # fmt: skip

    for name in ("web-1", "web-2", "web-3"):
        watching.double_serving.observe(
            scheduled(wrappers.pod(name, "web", scheduler_name=KUBE, uid=f"uid-web-{name}"))
        )

    found = status(watching, HOME, "default")
    double = condition(found, "DoubleServing")
    assert double[:2] == ("True", "OtherSchedulerBinds")
    assert double[2].startswith(
        "another scheduler also serves schedulerName 'default-scheduler': 'default-scheduler' (reportingInstance "
        "'default-scheduler-cp-1') bound pod web/web-1 at "
    )
    # A warning: the profile serves, and kstatus still computes Current (no Stalled, no Reconciling).
    assert condition(found, "Ready")[:2] == ("True", "Serving")
    assert condition(found, "Stalled")[0] == "False"
    assert [e for e in events if e[2] == "DoubleServing"] == [("default", "Warning", "DoubleServing", double[2])]

    clock.now = T0 + 600
    watching.double_serving.expire()

    assert condition(status(watching, HOME, "default"), "DoubleServing")[:2] == ("False", "NoOtherScheduler")
    assert len([e for e in events if e[2] == "DoubleServing"]) == 1  # the end is the condition's


def test_a_new_generation_of_the_profile_clears_double_serving(reconciler: Reconciler) -> None:
    clock = Clock()
    watching = _watching(reconciler, clock)
    watching.profile_changed(profile(HOME, "default", TAKEOVER))
    watching.double_serving.observe(scheduled(WEB))
    assert condition(status(watching, HOME, "default"), "DoubleServing")[0] == "True"

    clock.now = T0 + 1
    watching.profile_changed(profile(HOME, "default", {**TAKEOVER, "percentageOfNodesToScore": 50}, generation=2))

    double = status(watching, HOME, "default")
    assert condition(double, "DoubleServing")[:2] == ("False", "NoOtherScheduler")
    assert next(c for c in double["conditions"] if c["type"] == "DoubleServing")["observedGeneration"] == 2


def test_a_new_leader_re_deriving_an_episode_its_status_shows_posts_no_second_event(
    reconciler: Reconciler,
) -> None:
    clock = Clock()
    first = _watching(reconciler, clock)
    first.profile_changed(profile(HOME, "default", TAKEOVER))
    first.double_serving.observe(scheduled(WEB))
    shown = profile(HOME, "default", TAKEOVER)
    shown["status"] = status(first, HOME, "default")  # as the old leader wrote it

    replica = _restarted(reconciler)
    watching = _watching(replica, clock)
    events = _events(watching)
    watching.writer.observe(PROFILE_PLURAL, shown)
    watching.profile_changed(shown)
    watching.double_serving.observe(scheduled(WEB))  # its list of the last 10 minutes

    assert condition(status(watching, HOME, "default"), "DoubleServing")[0] == "True"
    assert [e for e in events if e[2] == "DoubleServing"] == []
