"""``simulate``: the real scheduler loop over the in-memory cluster, until nothing is left to try.

The scheduler is built as the operator builds it (same registry, same default plugins, same
profile resolution), with a :class:`~scheduler_core.clock.FakeClock` so backoff waits are
jumped over, and ``random.Random(seed)`` for the tie-break among equally scored nodes. The
cluster is fed in the order an informer would deliver it: nodes, pods already assigned, then
the profiles (SchedulerProfiles with their namespace's PluginConfigs; the built-in default
profile under ``<home>/default`` when the input has none), then the pending pods, the fake
clock advancing 1 µs per pod so that, among equal priorities, the queue keeps input order.
``run_until_idle`` returns once the active and backoff queues are empty; pods left in the
unschedulable pool are reported with their last attempt.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

from scheduler_core.clock import FakeClock
from scheduler_core.defaults import default_plugins
from scheduler_core.framework import PodInfo, manifest
from scheduler_core.runtime.framework import Framework
from scheduler_core.runtime.registry import default_registry
from scheduler_core.scheduler import Scheduler
from scheduler_core.simulator import gangs
from scheduler_core.simulator.backend import InMemoryCluster
from scheduler_core.simulator.claims import RESOURCE_CLAIM, allocated_devices
from scheduler_core.simulator.errors import InputError, Problem
from scheduler_core.simulator.manifests import (
    DEFAULT_HOME_NAMESPACE,
    Cluster,
)
from scheduler_core.simulator.report import UNSCHEDULABLE, PodReport, Recorder
from scheduler_core.simulator.validate import profile_problems

P = ParamSpec("P")
T = TypeVar("T")

POD_ARRIVAL_INTERVAL = 1e-6  # seconds of fake time between two pending pods
MAX_UNHANDLED_WARNINGS = 10


@dataclass(slots=True)
class Simulation:
    """The outcome: one report per pending pod a profile handles, in input order."""

    pods: list[PodReport]
    cluster: InMemoryCluster
    scheduler: Scheduler
    warnings: list[str] = field(default_factory=list)
    recorder: Recorder | None = None
    problems: list[Problem] = field(default_factory=list)  # of the profiles not served (``live``)


async def simulate_async(
    cluster: Cluster,
    *,
    seed: int | None = 0,
    home_namespace: str = DEFAULT_HOME_NAMESPACE,
    registry: Mapping[str, Any] | None = None,
    batch: bool = True,
    live: bool = False,
    replace_all: bool = False,
    namespace: str | None = None,
) -> Simulation:
    """Schedule every pending pod of ``cluster``; raise :class:`InputError` for bad profiles.

    ``batch=False`` runs plugins per node only (the reference for the batch forms). ``live``: the
    cluster is a snapshot of a live one, whose profiles are exactly those it holds (no built-in
    default). ``replace_all``: every bound pod a profile handles is placed again as if new.
    ``namespace``: only pods of that namespace are placed (pending pods elsewhere are left out)."""
    registry = default_registry() if registry is None else registry
    backend = InMemoryCluster(nodes=cluster.nodes, pods=cluster.pods, objects=cluster.objects, copy_input=not live)
    recorder = Recorder([(n.get("metadata") or {}).get("name", "") for n in cluster.nodes])
    clock = FakeClock()
    scheduler = Scheduler(
        backend,
        registry=registry,
        default_multi_point=default_plugins(registry),
        clock=clock,
        home_namespace=home_namespace,
        rng=random.Random(seed),
        observer=recorder,
        batch=batch,
    )
    backend.watch(scheduler)

    for node in backend.nodes.values():
        scheduler.on_node_add(node)
    pending: list[dict[str, Any]] = []
    for pod in backend.pods.values():
        if (pod.get("spec") or {}).get("nodeName"):
            scheduler.on_pod_add(pod)
        elif (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed") and (
            namespace is None or PodInfo(pod).namespace == namespace
        ):
            pending.append(pod)
    problems = profile_problems(
        cluster, home_namespace=home_namespace, registry=registry, into=scheduler, builtin_default=not live
    )
    if problems and not live:
        raise InputError(problems)
    # On a live cluster an invalid object blocks nothing: the operator serves the others.
    invalid = [f"{p}: not serving (the operator keeps its last good version, unknown here)" for p in problems]
    if replace_all:
        pending[:0] = _unbind_handled(scheduler, backend, namespace)
    for pod in pending:
        clock.advance(POD_ARRIVAL_INTERVAL)
        scheduler.on_pod_add(pod)

    await scheduler.run_until_idle()
    for _, served in scheduler.profiles:
        for extender in served.handle.extenders:
            await extender.close()

    reports: list[PodReport] = []
    unhandled: list[PodInfo] = []
    for pod in pending:
        info = PodInfo(pod)
        fwk = scheduler.profiles.for_pod(info)
        if fwk is None:
            unhandled.append(info)
            continue
        reports.append(recorder.last.get(info.uid) or _not_attempted(scheduler, info, fwk))
    gangs.annotate(reports, backend.pods.values(), cluster.objects)
    claims = list(backend.objects(RESOURCE_CLAIM))
    if claims:
        by_name = {(manifest.namespace_of(p), manifest.name_of(p)): p for p in backend.pods.values()}
        for report in reports:
            stored = by_name.get((report.namespace, report.name))
            if stored is not None:
                report.devices = allocated_devices(stored, claims)
    return Simulation(reports, backend, scheduler, [*invalid, *_unhandled_warnings(unhandled)], recorder, problems)


def _in_new_loop(run: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    def blocking(*args: P.args, **kwargs: P.kwargs) -> T:
        return asyncio.run(run(*args, **kwargs))

    blocking.__doc__ = f"Run :func:`{run.__name__}` in a fresh event loop (the same arguments)."
    return blocking


simulate = _in_new_loop(simulate_async)


def _unbind_handled(scheduler: Scheduler, backend: InMemoryCluster, namespace: str | None) -> list[dict[str, Any]]:
    """Take every bound pod a profile handles (of ``namespace``, if given) off its node: it is
    pending again, in input order."""
    unbound: list[dict[str, Any]] = []
    for uid, pod in list(backend.pods.items()):
        if not (pod.get("spec") or {}).get("nodeName"):
            continue
        info = PodInfo(pod)
        if not scheduler.profiles.handles(info) or (namespace is not None and info.namespace != namespace):
            continue
        scheduler.on_pod_delete(pod)
        fresh = {**pod, "spec": {k: v for k, v in pod["spec"].items() if k != "nodeName"}}
        fresh["status"] = {k: v for k, v in (pod.get("status") or {}).items() if k == "qosClass"}
        backend.pods[uid] = fresh
        unbound.append(fresh)
    return unbound


def _not_attempted(scheduler: Scheduler, pod: PodInfo, fwk: Framework) -> PodReport:
    """A handled pod the queue never released (held by a PreEnqueue plugin)."""
    queued = scheduler.queue.get(pod)
    gating = getattr(queued, "gating_plugin", "") if queued is not None else ""
    if pod.scheduling_gates:
        message = "Scheduling is blocked due to non-empty scheduling gates"  # upstream SchedulingGated condition
    elif gating:
        message = f"not attempted: PreEnqueue plugin {gating!r} holds the pod"
    else:
        message = "not attempted"
    return PodReport(pod.namespace, pod.name, pod.scheduler_name, fwk.profile_name, UNSCHEDULABLE, None, message)


def _unhandled_warnings(pods: Sequence[PodInfo]) -> list[str]:
    warnings = [
        f"pod {p.key}: no profile serves schedulerName {p.scheduler_name!r} in namespace {p.namespace!r}; not scheduled"
        for p in pods[:MAX_UNHANDLED_WARNINGS]
    ]
    if len(pods) > MAX_UNHANDLED_WARNINGS:
        warnings.append(f"... and {len(pods) - MAX_UNHANDLED_WARNINGS} more pending pods that no profile serves")
    return warnings
