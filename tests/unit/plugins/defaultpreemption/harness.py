"""A real Framework around DefaultPreemption for table tests (upstream tests build one with
``tf.NewFramework`` over ``internalcache.NewSnapshot(pods, nodes)``), with a recording API,
a nominator, PodDisruptionBudgets served through ``handle.objects`` and upstream's test
filter plugins (``pkg/scheduler/testing/framework/fake_plugins.go``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from scheduler_core.cache.snapshot import Snapshot
from scheduler_core.config import PluginRef, PluginSet, SchedulerProfileSpec
from scheduler_core.framework import Code, CycleState, NodeInfo, PodInfo, PreFilterResult, Status
from scheduler_core.framework.writes import PODS, STATUS, ClusterAPI, Verb, Write, Written
from scheduler_core.plugins.defaultbinder import DefaultBinder
from scheduler_core.plugins.defaultpreemption import DefaultPreemption
from scheduler_core.plugins.noderesources import NodeResourcesFit
from scheduler_core.plugins.queuesort import PrioritySort
from scheduler_core.queue.nominator import Nominator
from scheduler_core.runtime.build import build_profile
from scheduler_core.runtime.framework import Framework
from scheduler_core.runtime.handle import FrameworkHandle

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
ONE_POD = {"pods": "1"}
NODE_RES = {"cpu": "200m", "memory": "400"}


def epoch(seconds: int) -> str:
    """Upstream epochTimeN is N nanoseconds after the epoch; a manifest's startTime has second
    precision, so N seconds here keeps the same order."""
    return f"1970-01-01T00:00:{seconds:02d}Z"


def pdb(
    labels: dict[str, str] | None = None,
    *,
    allowed: int = 0,
    disrupted: Sequence[str] = (),
    namespace: str = "default",
    selector: dict[str, Any] | None = None,
    name: str = "pdb",
) -> dict[str, Any]:
    status: dict[str, Any] = {"disruptionsAllowed": allowed}
    if disrupted:
        status["disruptedPods"] = {p: "2024-01-01T00:00:00Z" for p in disrupted}
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": selector if selector is not None else {"matchLabels": labels or {}}},
        "status": status,
    }


# -- test plugins ----------------------------------------------------------------------------------
class ErrorExtensionPlugin:
    """Upstream ``TestPlugin``: AddPod/RemovePod fail on nodes labelled ``error=true``."""

    name = "test-plugin"
    args_model = None

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        return None, None

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None:
        if node.labels.get("error") == "true":
            return Status.as_error(f"failed to add pod: {pod.name}")
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo) -> Status | None:
        if node.labels.get("error") == "true":
            return Status.as_error(f"failed to remove pod: {pod.name}")
        return None


class FakeFilter:
    """Upstream ``FakeFilterPlugin``: counts Filter calls, answers a code per node."""

    name = "FakeFilter"
    args_model = None
    codes: dict[str, Code] = {}
    calls = 0

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        FakeFilter.calls += 1
        code = FakeFilter.codes.get(node.name, Code.SUCCESS)
        return None if code is Code.SUCCESS else Status(code, f"injecting failure for pod {pod.name}")


class UpstreamFit(NodeResourcesFit):
    """NodeResourcesFit that never settles a node or a victim without the filters
    (``filter_rejects_changed`` cannot tell): the dry run then runs them wherever upstream's
    does, so upstream's counts of Filter calls hold."""

    def filter_rejects_changed(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, removed: Sequence[PodInfo], added: Sequence[PodInfo]
    ) -> bool:
        return False


class FalseFilter:
    """Upstream ``FalseFilterPlugin``."""

    name = "FalseFilter"
    args_model = None

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return Status.unschedulable("injecting failure for pod test-pod")


class TrueFilter(FalseFilter):
    name = "TrueFilter"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None


class MatchFilter(FalseFilter):
    """Upstream ``MatchFilterPlugin``: the node named as the pod passes."""

    name = "MatchFilter"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None if node.name == pod.name else Status.unschedulable("injecting failure for pod test-pod")


# -- a recording API -------------------------------------------------------------------------------
@dataclass
class RecordingAPI(ClusterAPI):
    """The ClusterAPI, recording calls; ``fail`` names pods whose deletion fails; ``gate`` holds
    every deletion (or those ``gated`` names) until set."""

    deleted: list[tuple[str, str]] = field(default_factory=list)
    nominations: list[tuple[str, str]] = field(default_factory=list)
    fail: set[str] = field(default_factory=set)
    gate: asyncio.Event | None = None
    started: list[str] = field(default_factory=list)  # deletions asked for, before the gate
    gated: set[str] | None = None  # the deletions the gate holds (None: every one)

    async def bind(self, pod: PodInfo, node_name: str, annotations: Mapping[str, str] | None = None) -> Status | None:
        raise AssertionError("preemption must not bind")

    async def write(self, call: Write) -> Written:
        """Preemption deletes victims and clears nominations; nothing else."""
        if (call.verb, call.resource, call.subresource) == (Verb.DELETE, PODS, ""):
            self.started.append(call.name)
            if self.gate is not None and (self.gated is None or call.name in self.gated):
                await self.gate.wait()
            if call.name in self.fail:
                return None, Status.as_error(f'pods "{call.name}" is forbidden')
            self.deleted.append((call.name, call.reason))
            return dict(call.obj), None
        if (call.verb, call.resource, call.subresource) == (Verb.PATCH, PODS, STATUS):
            self.nominations.append((call.name, call.obj[STATUS]["nominatedNodeName"] or ""))
            return dict(call.obj), None
        raise AssertionError(f"preemption must not {call.verb} {call.resource.qualified}")

    @property
    def deleted_names(self) -> list[str]:
        return [name for name, _ in self.deleted]


# -- the framework ---------------------------------------------------------------------------------
@dataclass
class Env:
    fwk: Framework
    plugin: DefaultPreemption
    api: RecordingAPI
    snapshot: Snapshot
    nominator: Nominator
    activated: list[str]  # names of the pods the plugin activated (Handle.activate)

    def pre_filtered_state(self, pod: PodInfo) -> CycleState:
        """Upstream ``RunPreFilterPlugins`` to populate the state."""
        state = CycleState()
        outcome = self.fwk.run_pre_filter(state, pod, self.snapshot.list())
        assert outcome.status is None, outcome.status
        return state

    def sorted_nodes(self) -> list[NodeInfo]:
        return sorted(self.snapshot.list(), key=lambda n: n.name)


def make_env(
    nodes: Sequence[dict[str, Any]],
    pods: Sequence[dict[str, Any]] = (),
    *,
    plugins: Sequence[type] = (NodeResourcesFit,),
    pdbs: Sequence[dict[str, Any]] = (),
    args: dict[str, Any] | None = None,
    tenant: str | None = None,
    api: RecordingAPI | None = None,
) -> Env:
    """A framework with PrioritySort, ``plugins`` (in order), DefaultPreemption and DefaultBinder
    over a snapshot of ``nodes`` with ``pods`` on them."""
    infos = {(n.get("metadata") or {})["name"]: NodeInfo(n) for n in nodes}
    for raw in pods:
        info = PodInfo(raw)
        infos[info.node_name].add_pod(info)
    snapshot = Snapshot(list(infos.values()))
    recording = api or RecordingAPI()
    nominator = Nominator()
    activated: list[str] = []
    handle = FrameworkHandle(
        "test",
        activate=lambda pods: activated.extend(p.name for p in pods),
        snapshot=lambda: snapshot,
        api=recording,
        nominator=nominator,
        objects=lambda kind: list(pdbs) if kind == "PodDisruptionBudget" else [],
        tenant_namespace=tenant,
    )
    factories: list[Any] = [PrioritySort, *plugins, DefaultPreemption, DefaultBinder]
    registry: dict[str, Any] = {p.name: p for p in factories}
    enabled = [PluginRef(name=name) for name in registry]
    spec = SchedulerProfileSpec.model_validate(
        {"pluginConfig": [{"name": DefaultPreemption.name, "args": args}]} if args else {}
    )
    built = build_profile(spec, registry, handle, PluginSet(enabled=enabled))
    fwk = Framework(
        profile_name="test",
        scheduler_name=spec.scheduler_name,
        percentage_of_nodes_to_score=None,
        built=built,
        handle=handle,
    )
    plugin = cast(DefaultPreemption, fwk.plugins[DefaultPreemption.name])
    return Env(fwk, plugin, recording, snapshot, nominator, activated)


def offsets(*values: int) -> Iterator[int]:
    """Stands in for upstream's seeded ``getOffsetRand``."""
    return iter(values)


def run(coro: Any) -> Any:
    return asyncio.run(coro)
