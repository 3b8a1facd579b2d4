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
* ``storm`` (``--only storm``; the real dev cluster of ``scripts/dev-cluster``, not in-process):
  the operator (``python -m scheduler_operator run`` from ``--tree``, admin credentials, a fresh
  home namespace whose profile's tenant policy allows ``--storm-profiles`` profiles a namespace)
  serves ``--storm-profiles`` SchedulerProfiles in one tenant namespace, all selected by one
  PluginConfig, which is then edited every ``--storm-every`` seconds for ``--storm-seconds``.
  Reported: the operator's RSS idle (before the storm), peak (sampled during the storm and the
  drain) and after the drain (``--storm-after`` seconds after it); the status writes that landed
  on the tenant's profiles (counted on a watch of the namespace: a MODIFIED event whose status
  changed), per edit and per profile; the API server's own ``apiserver_request_total`` PATCH
  count on ``schedulerprofiles/status`` (every client of the shared cluster, an upper bound);
  the drain time (last edit until every profile's ``status.lastGood`` holds the last edit's
  args); and the scheduling latency of probe pods of another namespace during the storm
  (created to bound, as a watcher polling every 50 ms sees it).
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
    from scheduler_operator.control.reconciler import Reconciler

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
    from tests.wrappers import make_node, make_pod  # the kit's chains: the same in older trees (--tree)

    scheduler, reconciler = _stack(FakeClock())
    n = make_node().name("small").capacity(cpu="1", memory="1Gi").obj()
    scheduler.backend.nodes["small"] = n
    scheduler.on_node_add(n)
    reconciler.profile_changed(_profile(HOME, "default", {}))
    for ns in range(namespaces):
        reconciler.profile_changed(_profile(f"team-{ns}", "own", {}))
    await _settle(reconciler)
    for i in range(pods):
        manifest = make_pod().name(f"p{i}").namespace(f"team-{i % namespaces}").req(cpu="2").obj()  # fits no node
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


STORM_PLUGIN = "NodeResourcesFit"


def storm_args(weight: int) -> dict[str, Any]:
    return {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": weight}]}}


def served_weight(item: dict[str, Any]) -> int | None:
    """The cpu weight in the PluginConfig args a profile's status says serves (``lastGood``)."""
    spec = ((item.get("status") or {}).get("lastGood") or {}).get("spec") or {}
    for entry in spec.get("pluginConfig") or ():
        if entry.get("name") == STORM_PLUGIN:
            resources = ((entry.get("args") or {}).get("scoringStrategy") or {}).get("resources") or [{}]
            weight = resources[0].get("weight")
            return int(weight) if weight is not None else None
    return None


def _apiserver_status_patches(api: Any) -> float:
    """``apiserver_request_total`` for PATCH on ``schedulerprofiles/status``, all codes."""
    from bench.cluster import apiserver_requests

    return apiserver_requests(api, "PATCH", "schedulerprofiles", "status")


class StatusWatch:
    """Counts the status writes that land on a namespace's SchedulerProfiles (a MODIFIED event
    whose status differs from the one before), from a watch started at a list's resourceVersion."""

    def __init__(self, api: Any, namespace: str) -> None:
        import threading

        from kubernetes import client, watch

        from scheduler_operator.resources import GROUP, PROFILE_PLURAL, VERSION

        self._custom: Any = client.CustomObjectsApi(api)
        self._args = (GROUP, VERSION, namespace, PROFILE_PLURAL)
        listed: Any = self._custom.list_namespaced_custom_object(*self._args)
        self.status = {i["metadata"]["name"]: i.get("status") for i in listed["items"]}
        self.writes = 0
        self.writes_by_name: dict[str, int] = {}
        self.last_write = time.monotonic()
        self._watch = watch.Watch()  # type: ignore[no-untyped-call]
        self._stopped = threading.Event()
        self._rv = listed["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                for event in self._watch.stream(  # type: ignore[no-untyped-call]
                    self._custom.list_namespaced_custom_object, *self._args, resource_version=self._rv,
                    timeout_seconds=300, allow_watch_bookmarks=True,
                ):  # fmt: skip
                    item = event["object"]
                    self._rv = item["metadata"]["resourceVersion"]
                    if event["type"] != "MODIFIED":
                        continue
                    name = item["metadata"]["name"]
                    if item.get("status") != self.status.get(name):
                        self.writes += 1
                        self.writes_by_name[name] = self.writes_by_name.get(name, 0) + 1
                        self.last_write = time.monotonic()
                    self.status[name] = item.get("status")
            except Exception:  # the watch broke: resume from the last resourceVersion seen
                time.sleep(1)

    def served(self) -> list[int | None]:
        return [served_weight({"status": s}) for s in self.status.values()]

    def stop(self) -> None:
        self._stopped.set()
        self._watch.stop()  # type: ignore[no-untyped-call]


def storm(
    tree: Path, profiles: int, seconds: float, every: float, after: float, drain_timeout: float
) -> dict[str, Any]:
    """The edit storm on the dev cluster (see the module docstring). A drain longer than
    ``drain_timeout`` seconds is reported as ``drain_seconds: null`` with the profiles whose
    status never showed the last edit."""
    import os
    import subprocess
    import tempfile
    import threading
    import uuid

    from kubernetes import client, config

    from bench.cluster import dev_cluster, free_port, process_memory_mib
    from tests.e2e.operator_support import CRD_FILES, install_crds, plugin_config, profile
    from tests.wrappers import make_node, make_pod

    kubeconfig = dev_cluster("up")
    configuration = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)  # type: ignore[no-untyped-call]
    api = client.ApiClient(configuration)
    core: Any = client.CoreV1Api(api)
    custom: Any = client.CustomObjectsApi(api)
    group, version = "scheduling.crd-scheduler.io", "v1alpha1"
    install_crds(api, CRD_FILES)
    run = uuid.uuid4().hex[:6]
    home, tenant, other = f"storm-home-{run}", f"storm-tenant-{run}", f"storm-other-{run}"
    scheduler_name, label = f"storm-{run}", f"storm-{run}"
    for namespace in (home, tenant, other):
        core.create_namespace({"metadata": {"name": namespace}})
    nodes = [f"{label}-n{i}" for i in range(3)]
    for name in nodes:
        core.create_node(make_node().name(name).label("e2e-run", label).obj())
    home_profile = profile("default", scheduler_name)
    home_profile["spec"]["tenantPolicy"] = {"maxProfilesPerNamespace": profiles}
    custom.create_namespaced_custom_object(group, version, home, "schedulerprofiles", home_profile)
    custom.create_namespaced_custom_object(group, version, tenant, "pluginconfigs",
                                           plugin_config("fit", STORM_PLUGIN, storm_args(1)))  # fmt: skip
    for i in range(profiles):
        custom.create_namespaced_custom_object(group, version, tenant, "schedulerprofiles", profile(f"p{i}", f"t{i}"))
    log_dir = Path(tempfile.mkdtemp(prefix="storm-"))
    log_file = (log_dir / "operator.log").open("w")
    argv = [sys.executable, "-m", "scheduler_operator", "run", "--home-namespace", home, "--identity", f"storm-{run}",
            "--bind-address", "127.0.0.1", "--port", str(free_port())]  # fmt: skip
    env = {**os.environ, "KUBECONFIG": kubeconfig, "PYTHONUNBUFFERED": "1"}
    operator = subprocess.Popen(argv, env=env, stdout=log_file, stderr=subprocess.STDOUT, cwd=tree)
    result: dict[str, Any] = {"profiles": profiles, "storm_seconds": seconds, "edit_every_seconds": every,
                              "operator_log": str(log_dir / "operator.log")}  # fmt: skip
    try:
        watcher = StatusWatch(api, tenant)
        started = time.monotonic()
        while watcher.served().count(1) < profiles:
            if operator.poll() is not None or time.monotonic() - started > 900:
                raise SystemExit(f"the operator did not serve every profile; see {log_dir / 'operator.log'}")
            time.sleep(1)
        while time.monotonic() - watcher.last_write < 10:  # the start's status writes landed
            time.sleep(1)
        result["startup_seconds"] = round(time.monotonic() - started, 1)
        pid = operator.pid
        idle = []
        for _ in range(5):
            idle.append(process_memory_mib(pid, "VmRSS"))
            time.sleep(1)
        result["rss_idle_mib"] = round(sum(idle) / len(idle), 1)
        peak = [result["rss_idle_mib"]]
        writes_before, patches_before = watcher.writes, _apiserver_status_patches(api)

        latencies: list[float] = []
        stop_probes = threading.Event()

        def probes() -> None:
            n = 0
            while not stop_probes.is_set():
                n += 1
                name = f"probe-{n}"
                created = time.monotonic()
                core.create_namespaced_pod(
                    other,
                    make_pod()
                    .name(name)
                    .namespace(other)
                    .scheduler_name(scheduler_name)
                    .node_selector({"e2e-run": label})
                    .obj(),
                )
                while time.monotonic() - created < 60:
                    if core.read_namespaced_pod(name, other).spec.node_name:
                        latencies.append(time.monotonic() - created)
                        break
                    time.sleep(0.05)
                stop_probes.wait(2)

        prober = threading.Thread(target=probes, daemon=True)
        prober.start()
        edits = 0
        began = time.monotonic()
        while time.monotonic() - began < seconds:
            edits += 1
            custom.patch_namespaced_custom_object(
                group, version, tenant, "pluginconfigs", "fit", {"spec": {"args": storm_args(1 + edits % 100)}},
                _content_type="application/merge-patch+json",
            )  # fmt: skip
            peak.append(process_memory_mib(pid, "VmRSS"))
            time.sleep(max(0.0, began + edits * every - time.monotonic()))
        last_edit = time.monotonic()
        stop_probes.set()
        prober.join(70)
        final = 1 + edits % 100
        drained: float | None = None
        while time.monotonic() - last_edit < drain_timeout:
            if watcher.served().count(final) == profiles:
                drained = time.monotonic()
                break
            peak.append(process_memory_mib(pid, "VmRSS"))
            time.sleep(0.5)
        result["profiles_not_at_the_last_edit"] = profiles - watcher.served().count(final)
        while time.monotonic() - watcher.last_write < 5:  # writes still landing (none should)
            if time.monotonic() - last_edit > drain_timeout:
                break
            time.sleep(0.5)
        settle_until = time.monotonic() + after
        while time.monotonic() < settle_until:
            peak.append(process_memory_mib(pid, "VmRSS"))
            time.sleep(0.5)
        writes = watcher.writes - writes_before
        latencies.sort()
        result.update(
            edits=edits,
            rss_peak_mib=max(peak),
            rss_after_mib=process_memory_mib(pid, "VmRSS"),
            vm_hwm_mib=process_memory_mib(pid, "VmHWM"),
            status_writes=writes,
            status_writes_per_edit_per_profile=round(writes / (edits * profiles), 4),
            status_writes_per_profile=round(writes / profiles, 2),
            apiserver_status_patches_all_clients=int(_apiserver_status_patches(api) - patches_before),
            drain_seconds=round(drained - last_edit, 1) if drained is not None else None,
            probe_pods=len(latencies),
            probe_latency_p50_s=round(latencies[len(latencies) // 2], 3) if latencies else None,
            probe_latency_max_s=round(latencies[-1], 3) if latencies else None,
        )
        result["peak_over_idle"] = round(result["rss_peak_mib"] / result["rss_idle_mib"], 2)
        result["after_over_idle"] = round(result["rss_after_mib"] / result["rss_idle_mib"], 2)
        watcher.stop()
    finally:
        operator.terminate()
        try:
            operator.wait(30)
        except subprocess.TimeoutExpired:
            operator.kill()
        log_file.close()
        for namespace in (home, tenant, other):
            core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
            core.delete_namespace(namespace)
        for name in nodes:
            core.delete_node(name)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--profiles", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--namespaces", type=int, default=20)
    parser.add_argument("--edits", type=int, default=100)
    parser.add_argument("--only", choices=("lease", "attempts", "storm"))
    parser.add_argument("--storm-profiles", type=int, default=300)
    parser.add_argument("--storm-seconds", type=float, default=60.0)
    parser.add_argument("--storm-every", type=float, default=0.5, help="seconds between PluginConfig edits")
    parser.add_argument("--storm-after", type=float, default=20.0, help="seconds after the drain for RSS")
    parser.add_argument("--storm-drain-timeout", type=float, default=300.0, help="seconds to wait for the drain")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    _import_tree(args.tree)
    import scheduler_core

    result: dict[str, Any] = {"tree": str(Path(scheduler_core.__file__).resolve().parent.parent)}
    if args.only in (None, "lease"):
        result["lease"] = asyncio.run(lease(args.profiles))
    if args.only in (None, "attempts"):
        result["attempts"] = asyncio.run(attempts(args.pods, args.namespaces, args.edits))
    if args.only == "storm":  # the dev cluster: only when asked
        result["storm"] = storm(
            args.tree, args.storm_profiles, args.storm_seconds, args.storm_every, args.storm_after,
            args.storm_drain_timeout,
        )  # fmt: skip
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
