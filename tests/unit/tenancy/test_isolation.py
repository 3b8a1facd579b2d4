"""A namespaced profile cannot hurt anyone else: its queue state, its API, its pods.

Each test drives a real Scheduler over the in-memory cluster (the operator's twin), with
profiles applied as the reconciler applies them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from scheduler_core.config import SchedulerProfileSpec
from scheduler_core.defaults import default_plugins
from scheduler_core.framework import CycleState, Handle, PodInfo, Status
from scheduler_core.framework.writes import (
    PERSISTENT_VOLUMES,
    PODS,
    Resource,
    Verb,
    Write,
    Written,
    patch_pod_status,
    preempt,
)
from scheduler_core.plugins.volumebinding.prebind import claim_ref_write, selected_node_write
from scheduler_core.profiles import ProfileKey
from scheduler_core.reporting import REASON_PROFILE_NOT_SERVING
from scheduler_core.runtime.build import ProfileError
from scheduler_core.runtime.registry import Registry, default_registry
from scheduler_core.scheduler import Scheduler
from scheduler_core.simulator import InMemoryCluster
from scheduler_core.tenancy import ScopedClusterAPI
from tests.wrappers import node, pod

HOME = "crd-scheduler"
DEFAULT = ProfileKey(HOME, "default")
# Tenants may override the cluster-wide schedulerName only where the policy allows it.
OVERRIDE = {"allowedSchedulerNames": ["crd-scheduler"]}


class RecordingCluster(InMemoryCluster):
    """The in-memory cluster, recording every ClusterAPI call that reaches it."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.calls: list[tuple[str, str]] = []

    async def bind(self, pod: PodInfo, node_name: str, annotations: Mapping[str, str] | None = None) -> Status | None:
        self.calls.append(("bind", pod.key))
        return await super().bind(pod, node_name, annotations)

    async def write(self, call: Write) -> Written:
        self.calls.append((str(call.verb), f"{call.namespace}/{call.name}"))
        return await super().write(call)


class Meddler:
    """A hostile PostBind plugin: after its own pod binds, it goes for the victim pod."""

    name = "Meddler"
    args_model = None
    victim: PodInfo | None = None
    answers: list[Status | None] = []

    def __init__(self, args: object, handle: Handle) -> None:
        self._handle = handle

    async def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        assert Meddler.victim is not None
        api = self._handle.api
        Meddler.answers = [
            await api.bind(Meddler.victim, node_name),
            await preempt(api, Meddler.victim, "meddling"),
            await patch_pod_status(api, Meddler.victim, {"nominatedNodeName": node_name}),
        ]


class Harness:
    def __init__(self, registry: Any = None) -> None:
        self.registry = registry or default_registry()
        self.backend = RecordingCluster(nodes=[node("n1"), node("n2")])
        self.scheduler = Scheduler(
            self.backend,
            registry=self.registry,
            default_multi_point=default_plugins(self.registry),
            home_namespace=HOME,
        )
        self.backend.watch(self.scheduler)
        for n in self.backend.nodes.values():
            self.scheduler.on_node_add(n)

    def apply(self, key: ProfileKey, spec: dict[str, Any], created: str = "2026-01-01T00:00:00Z") -> None:
        self.scheduler.apply_profile(key, SchedulerProfileSpec.model_validate(spec), created=created)

    def add(self, manifest: dict[str, Any]) -> str:
        uid = str(manifest["metadata"]["uid"])
        self.backend.pods[uid] = manifest
        self.scheduler.on_pod_add(manifest)
        return uid

    def run(self) -> None:
        asyncio.run(self.scheduler.run_until_idle())

    def node_of(self, uid: str) -> str | None:
        return (self.backend.pods[uid].get("spec") or {}).get("nodeName")

    def condition(self, uid: str) -> dict[str, Any]:
        conditions = (self.backend.pods[uid].get("status") or {}).get("conditions") or []
        return next(c for c in conditions if c["type"] == "PodScheduled")


@pytest.fixture
def harness() -> Iterator[Harness]:
    yield Harness()


def test_a_tenant_profile_does_not_ungate_another_namespaces_pods(harness: Harness) -> None:
    """The admin lets team-a drop SchedulingGates for its own pods; team-b's gated pod stays gated."""
    harness.apply(DEFAULT, {"tenantPolicy": {**OVERRIDE, "allowDisabling": ["SchedulingGates"]}})
    harness.apply(ProfileKey("team-a", "own"), {"plugins": {"multiPoint": {"disabled": [{"name": "SchedulingGates"}]}}})
    gated = harness.add(pod("gated", "team-b", schedulingGates=[{"name": "wait"}]))
    mine = harness.add(pod("mine", "team-a", schedulingGates=[{"name": "wait"}]))

    harness.run()

    assert harness.node_of(gated) is None
    assert harness.node_of(mine) is not None


def test_a_deleted_tenant_profile_leaves_no_plugins_behind(harness: Harness) -> None:
    harness.apply(DEFAULT, {"tenantPolicy": {**OVERRIDE, "allowDisabling": ["SchedulingGates"]}})
    harness.apply(ProfileKey("team-a", "own"), {"plugins": {"multiPoint": {"disabled": [{"name": "SchedulingGates"}]}}})
    harness.scheduler.delete_profile(ProfileKey("team-a", "own"))
    gated = harness.add(pod("gated", "team-a", schedulingGates=[{"name": "wait"}]))

    harness.run()

    assert harness.node_of(gated) is None  # the cluster-wide profile's SchedulingGates holds it


def test_a_tenant_plugin_cannot_touch_another_namespaces_pod() -> None:
    registry = default_registry()
    merged = Registry({name: registry[name] for name in registry})
    merged.register("Meddler", Meddler)
    harness = Harness(merged)
    harness.apply(DEFAULT, {"tenantPolicy": {**OVERRIDE, "allowedPlugins": ["Meddler"]}})
    harness.apply(ProfileKey("team-a", "own"), {"plugins": {"postBind": {"enabled": [{"name": "Meddler"}]}}})
    victim = pod("victim", "team-b", scheduler_name="someone-else")
    Meddler.victim = PodInfo(victim)
    victim_uid = harness.add(victim)
    mine = harness.add(pod("mine", "team-a"))

    harness.run()

    assert harness.node_of(mine) is not None
    assert [answer is not None and answer.is_rejected() is False for answer in Meddler.answers] == [True] * 3
    assert all(a is not None and "may act only on pods of namespace 'team-a'" in a.message() for a in Meddler.answers)
    assert harness.backend.calls == [("bind", "team-a/mine")]  # the backend never saw the victim
    assert victim_uid in harness.backend.pods and harness.node_of(victim_uid) is None


@pytest.mark.parametrize("order", [pytest.param(["older", "newer"], id="older-first"),
                                   pytest.param(["newer", "older"], id="newer-first")])  # fmt: skip
def test_the_oldest_of_two_profiles_wins_whatever_the_order_and_deleting_it_promotes_the_next(
    harness: Harness, order: list[str]
) -> None:
    created = {"older": "2026-01-01T00:00:00Z", "newer": "2026-02-01T00:00:00Z"}
    spec = {"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}
    for name in order:
        harness.scheduler.claim_profile(ProfileKey("team-a", name), HOME, created[name])
    for name in order:
        try:
            harness.apply(ProfileKey("team-a", name), spec, created=created[name])
        except ProfileError as error:
            assert name == "newer"
            assert "already served by profile team-a/older" in str(error)
    served = harness.scheduler.profiles.for_pod(PodInfo(pod("p", "team-a")))
    assert served is not None and served.profile_name == "team-a/older"

    harness.scheduler.delete_profile(ProfileKey("team-a", "older"))
    harness.apply(ProfileKey("team-a", "newer"), spec, created=created["newer"])  # the reconciler re-applies it

    served = harness.scheduler.profiles.for_pod(PodInfo(pod("p", "team-a")))
    assert served is not None and served.profile_name == "team-a/newer"


def test_a_profile_that_never_served_holds_its_namespaces_pods_with_the_reason(harness: Harness) -> None:
    harness.apply(DEFAULT, {"tenantPolicy": OVERRIDE})
    with pytest.raises(ProfileError):
        harness.apply(ProfileKey("team-a", "broken"), {"plugins": {"score": {"enabled": [{"name": "Nope"}]}}})
    held = harness.add(pod("held", "team-a"))
    other = harness.add(pod("other", "team-b"))

    harness.run()

    assert harness.node_of(held) is None and harness.node_of(other) is not None
    condition = harness.condition(held)
    assert (condition["status"], condition["reason"]) == ("False", REASON_PROFILE_NOT_SERVING)
    assert condition["message"] == (
        "profile team-a/broken (schedulerName 'crd-scheduler') does not serve: plugins.score.enabled[0].name: "
        "plugin 'Nope' does not exist; its pods wait for it (no fall-back to another profile)"
    )


def test_a_profile_change_reactivates_only_the_pods_that_profile_serves(harness: Harness) -> None:
    harness.apply(DEFAULT, {"tenantPolicy": OVERRIDE})
    harness.apply(ProfileKey("team-a", "own"), {})
    big = {"cpu": "64"}  # fits no node: every pod ends in the unschedulable pool
    for i in range(5):
        harness.add(pod(f"a{i}", "team-a", requests=big))
        harness.add(pod(f"b{i}", "team-b", requests=big))
    harness.run()
    before = harness.scheduler.attempt_count

    for generation in range(3):
        weight = {"plugins": {"score": {"enabled": [{"name": "NodeResourcesFit", "weight": generation + 2}]}}}
        harness.apply(ProfileKey("team-a", "own"), weight)
        harness.run()

    assert harness.scheduler.attempt_count - before == 3 * 5  # team-a's pods only


def test_only_a_scheduling_replica_tells_held_pods_why(harness: Harness) -> None:
    """A standby replica (not running the loop) resolves the same, but writes nothing to pods."""
    with pytest.raises(ProfileError):
        harness.apply(ProfileKey("team-a", "broken"), {"plugins": {"score": {"enabled": [{"name": "Nope"}]}}})
    held = harness.add(pod("held", "team-a"))
    assert "conditions" not in (harness.backend.pods[held].get("status") or {})

    harness.run()

    assert harness.condition(held)["reason"] == REASON_PROFILE_NOT_SERVING


def test_deleting_the_cluster_wide_profile_rechecks_tenants_against_the_default_policy(harness: Harness) -> None:
    harness.apply(DEFAULT, {"tenantPolicy": {**OVERRIDE, "allowDisabling": ["TaintToleration"]}})
    harness.apply(ProfileKey("team-a", "own"), {"plugins": {"filter": {"disabled": [{"name": "TaintToleration"}]}}})
    assert harness.scheduler.profiles.get(ProfileKey("team-a", "own")) is not None

    harness.scheduler.delete_profile(DEFAULT)

    assert harness.scheduler.profiles.get(ProfileKey("team-a", "own")) is None
    reason = harness.scheduler.profiles.held_reason(PodInfo(pod("p", "team-a")))
    assert reason is not None and "tenant policy rule 'protected-plugins'" in reason


async def test_a_tenant_profiles_api_refuses_claims_and_volumes_of_other_namespaces() -> None:
    """VolumeBinding's writes through a tenant Handle: another namespace's claim, or a PV
    bound to one, is refused before the backend is called (it would bind a stranger's volume)."""
    backend = RecordingCluster(nodes=[node("n1")], objects={"PersistentVolume": [_pv("pv2", "team-a", "old")]})
    seen: list[str] = []

    async def record(call: Write) -> Written:
        seen.append("pv" if call.resource == PERSISTENT_VOLUMES else "pvc")
        return dict(call.obj), None

    backend.write = record  # type: ignore[method-assign]
    api = ScopedClusterAPI(backend, namespace="team-a", profile="team-a/own", objects=backend.objects)
    foreign_pvc = {"metadata": {"name": "data", "namespace": "team-b"}}
    foreign_pv = {"metadata": {"name": "pv1"}, "spec": {"claimRef": {"namespace": "team-b", "name": "data"}}}

    refused = [await api.write(selected_node_write(foreign_pvc, "n1")), await api.write(claim_ref_write(foreign_pv))]

    assert [stored for stored, _ in refused] == [None, None]
    assert all(s is not None and "may act only on claims of namespace 'team-a'" in s.message() for _, s in refused)
    assert seen == []
    own_pvc = {"metadata": {"name": "data", "namespace": "team-a"}}
    own_pv = _pv("pv2", "team-a", "data")
    assert (await api.write(selected_node_write(own_pvc, "n1")))[1] is None
    assert (await api.write(claim_ref_write(own_pv)))[1] is None
    assert seen == ["pvc", "pv"]


def _pv(name: str, claim_namespace: str, claim: str, version: str = "7") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": version},
        "spec": {"capacity": {"storage": "1Gi"}, "claimRef": {"namespace": claim_namespace, "name": claim}},
    }


@pytest.mark.parametrize(
    ("stored", "written", "refused"),
    [
        pytest.param(
            _pv("pv1", "team-b", "data"), _pv("pv1", "team-a", "mine"),
            "rebinding PersistentVolume pv1 from claim team-b/data refused", id="re-point-a-strangers-pv",
        ),
        pytest.param(
            _pv("pv1", "team-b", "data"), {**_pv("pv1", "team-a", "mine"), "metadata": {"name": "pv1"}},
            "PersistentVolume pv1 carries no resourceVersion", id="without-a-precondition",
        ),
        pytest.param(
            _pv("pv1", "team-b", "data", version="8"), _pv("pv1", "team-a", "mine", version="9"),
            "PersistentVolume pv1 at resourceVersion 9 is not the version the scheduler knows (8)",
            id="a-version-the-scheduler-has-not-seen",
        ),
    ],
)  # fmt: skip
async def test_a_tenant_profiles_api_checks_the_claim_a_pv_was_bound_to(
    stored: dict[str, Any], written: dict[str, Any], refused: str
) -> None:
    """Issue 26: only the new claimRef was checked, so re-pointing another namespace's PV to
    one's own claim was passed through. The claim the PV is bound to now (as the scheduler
    knows it, at the version the write is conditioned on) must be of the tenant's namespace too."""
    cluster = InMemoryCluster(nodes=[node("n1")], objects={"PersistentVolume": [stored]})
    api = ScopedClusterAPI(cluster, namespace="team-a", profile="team-a/own", objects=cluster.objects)

    written_pv, status = await api.write(claim_ref_write(written))

    assert written_pv is None and status is not None
    assert refused in status.message()
    assert "profile team-a/own may act only on claims of namespace 'team-a'" in status.message()
    after = next(iter(cluster.objects("PersistentVolume")))
    assert after["spec"]["claimRef"] == {"namespace": "team-b", "name": "data"}


async def test_a_tenant_profiles_api_binds_its_own_or_an_unbound_pv() -> None:
    unbound = {**_pv("pv2", "", ""), "spec": {"capacity": {"storage": "1Gi"}}}
    cluster = InMemoryCluster(nodes=[node("n1")], objects={"PersistentVolume": [_pv("pv1", "team-a", "old"), unbound]})
    api = ScopedClusterAPI(cluster, namespace="team-a", profile="team-a/own", objects=cluster.objects)

    assert (await api.write(claim_ref_write(_pv("pv1", "team-a", "mine"))))[1] is None
    assert (await api.write(claim_ref_write(_pv("pv2", "team-a", "mine"))))[1] is None


CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap")
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)


@pytest.mark.parametrize(
    ("call", "refused"),
    [
        pytest.param(Write(Verb.CREATE, CONFIG_MAPS, {"metadata": {"name": "x", "namespace": "team-b"}}),
                     "may act only on configmaps of namespace 'team-a': creating ConfigMap team-b/x refused",
                     id="any-kind-of-another-namespace"),
        pytest.param(Write(Verb.PATCH, NODES, {"metadata": {"name": "n1"}}),
                     "may act only on nodes of namespace 'team-a': patching Node n1 refused (not namespaced)",
                     id="cluster-scoped"),
        pytest.param(Write(Verb.DELETE, PODS, {"metadata": {"name": "v", "namespace": "team-b"}}, reason="x"),
                     "may act only on pods of namespace 'team-a': deleting pod team-b/v refused",
                     id="a-preemption"),
    ],
)  # fmt: skip
async def test_a_tenant_profiles_api_checks_every_write_in_one_place(call: Write, refused: str) -> None:
    """Issue 23: one check for every write, a kind no plugin of ours writes included."""
    backend = RecordingCluster(nodes=[node("n1")])
    api = ScopedClusterAPI(backend, namespace="team-a", profile="team-a/own", objects=backend.objects)

    written, status = await api.write(call)

    assert written is None and status is not None and f"profile team-a/own {refused}" == status.message()
    assert backend.calls == []
