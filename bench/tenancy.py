#!/usr/bin/env python3
"""Tenancy costs: event-loop stalls while profiles rebuild, and attempts caused by profile edits.

    python bench/tenancy.py --json                       # this tree
    python bench/tenancy.py --tree /tmp/crd-base --json  # another checkout (e.g. the base commit)

Both measurements drive the operator's real Reconciler and Scheduler in-process (the status
writer is a null sink: nothing is written anywhere), so the same script runs against any tree
whose ``Reconciler(scheduler, registry, writer, home_namespace=...)`` has the base's shape.

* ``lease``: one namespace holds ``--profiles`` SchedulerProfiles (distinct schedulerNames, so
  all serve). A probe task stands in for the Lease renewer: it asks to wake every 10 ms and
  records how late it wakes. Then (a) every profile is edited once, one watch event per loop
  turn as Kopf delivers them, and (b) one PluginConfig of the namespace is edited, which
  rebuilds every profile of the namespace. Reported: the worst wake-up delay of each phase, in
  ms (a renewal waits that long; the Lease is lost past renewDeadline, 10 s upstream).
* ``attempts``: ``--pods`` pending pods that fit no node, spread over ``--namespaces`` namespaces
  of one schedulerName, each namespace with its own profile; one namespace's profile is edited
  ``--edits`` times (a score weight), the scheduler running until idle after each edit (fake
  clock: backoff is jumped over). Reported: the scheduling attempts those edits caused.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

PROBE_PERIOD = 0.010
HOME = "crd-scheduler"


def _import_tree(tree: Path) -> None:
    sys.path.insert(0, str(tree.resolve()))


class NullWriter:
    """The StatusWriter's surface, writing nothing (no API server in this benchmark)."""

    def observe(self, plural: str, body: Any) -> None: ...

    def set(self, plural: str, body: Any, status: Any) -> None: ...

    def drop(self, plural: str, body: Any) -> None: ...

    def event(self, body: Any, event_type: str, reason: str, note: str) -> None: ...

    def current(self, plural: str, body: Any) -> None:
        return None

    def now(self) -> Any:
        from datetime import UTC, datetime

        return datetime.now(UTC)


def _profile(namespace: str, name: str, spec: dict[str, Any], generation: int = 1) -> dict[str, Any]:
    return {
        "metadata": {"namespace": namespace, "name": name, "generation": generation, "uid": f"{namespace}-{name}",
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": spec,
    }  # fmt: skip


def _config(namespace: str, name: str, plugin: str, args: dict[str, Any], generation: int) -> dict[str, Any]:
    meta = {"namespace": namespace, "name": name, "generation": generation, "uid": f"{namespace}-{name}"}
    return {"metadata": meta, "spec": {"plugin": plugin, "args": args}}


def _stack(clock: Any = None) -> tuple[Any, Any]:
    from scheduler_core.defaults import default_plugins
    from scheduler_core.runtime.registry import default_registry
    from scheduler_core.scheduler import Scheduler
    from scheduler_core.simulator.backend import InMemoryCluster
    from scheduler_operator.reconciler import Reconciler

    registry = default_registry()
    backend = InMemoryCluster()
    scheduler = Scheduler(
        backend, registry=registry, default_multi_point=default_plugins(registry), clock=clock, home_namespace=HOME
    )
    backend.watch(scheduler)
    reconciler = Reconciler(scheduler, registry, NullWriter(), home_namespace=HOME)  # type: ignore[arg-type]
    return scheduler, reconciler


async def _settle(reconciler: Any) -> None:
    settle = getattr(reconciler, "settle", None)  # deferred rebuilds exist only on newer trees
    if settle is not None:
        await settle()


async def lease(profiles: int) -> dict[str, Any]:
    _, reconciler = _stack()
    reconciler.profile_changed(_profile(HOME, "default", {}))
    for i in range(profiles):
        reconciler.profile_changed(_profile("team-a", f"p{i}", {"schedulerName": f"s{i}"}))
    await _settle(reconciler)
    worst = [0.0]
    stop = asyncio.Event()

    async def probe() -> None:
        loop = asyncio.get_running_loop()
        while not stop.is_set():
            due = loop.time() + PROBE_PERIOD
            await asyncio.sleep(PROBE_PERIOD)
            worst[0] = max(worst[0], loop.time() - due)

    prober = asyncio.ensure_future(probe())
    await asyncio.sleep(2 * PROBE_PERIOD)
    started = time.perf_counter()
    for i in range(profiles):  # (a) one edit per profile, one event per loop turn
        spec = {"schedulerName": f"s{i}", "percentageOfNodesToScore": 50}
        reconciler.profile_changed(_profile("team-a", f"p{i}", spec, generation=2))
        await asyncio.sleep(0)
    await _settle(reconciler)
    edits_seconds = time.perf_counter() - started
    worst_edits, worst[0] = worst[0], 0.0
    started = time.perf_counter()  # (b) one PluginConfig edit: every profile of the namespace rebuilds
    reconciler.plugin_config_changed(
        _config("team-a", "fit", "NodeResourcesFit", {"scoringStrategy": {"type": "MostAllocated"}}, 1)
    )
    await _settle(reconciler)
    await asyncio.sleep(2 * PROBE_PERIOD)
    config_seconds = time.perf_counter() - started
    stop.set()
    await prober
    return {
        "profiles": profiles,
        "profile_edits_worst_delay_ms": round(worst_edits * 1000, 1),
        "profile_edits_seconds": round(edits_seconds, 2),
        "plugin_config_edit_worst_delay_ms": round(worst[0] * 1000, 1),
        "plugin_config_edit_seconds": round(config_seconds, 2),
    }


async def attempts(pods: int, namespaces: int, edits: int) -> dict[str, Any]:
    from scheduler_core.clock import FakeClock
    from tests.builders import node, pod

    scheduler, reconciler = _stack(FakeClock())
    n = node("small", cpu="1", memory="1Gi")
    scheduler.backend.nodes["small"] = n
    scheduler.on_node_add(n)
    reconciler.profile_changed(_profile(HOME, "default", {}))
    for ns in range(namespaces):
        reconciler.profile_changed(_profile(f"team-{ns}", "own", {}))
    await _settle(reconciler)
    for i in range(pods):
        manifest = pod(f"p{i}", f"team-{i % namespaces}", cpu="2")  # fits no node
        scheduler.backend.pods[manifest["metadata"]["uid"]] = manifest
        scheduler.on_pod_add(manifest)
    await scheduler.run_until_idle()
    before = scheduler.attempt_count
    for generation in range(2, edits + 2):
        spec = {"plugins": {"score": {"enabled": [{"name": "NodeResourcesFit", "weight": generation}]}}}
        reconciler.profile_changed(_profile("team-0", "own", spec, generation=generation))
        await _settle(reconciler)
        await scheduler.run_until_idle()
    return {
        "pods": pods,
        "namespaces": namespaces,
        "edits": edits,
        "attempts_caused": scheduler.attempt_count - before,
        "pods_of_the_edited_profile": len([i for i in range(pods) if i % namespaces == 0]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--profiles", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--namespaces", type=int, default=20)
    parser.add_argument("--edits", type=int, default=100)
    parser.add_argument("--only", choices=("lease", "attempts"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    _import_tree(args.tree)
    import scheduler_core

    result: dict[str, Any] = {"tree": str(Path(scheduler_core.__file__).resolve().parent.parent)}
    if args.only in (None, "lease"):
        result["lease"] = asyncio.run(lease(args.profiles))
    if args.only in (None, "attempts"):
        result["attempts"] = asyncio.run(attempts(args.pods, args.namespaces, args.edits))
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
