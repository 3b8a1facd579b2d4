"""SchedulerProfiles and PluginConfigs in, live frameworks and status out.

For each SchedulerProfile: parse the spec (``SchedulerProfileSpec``), merge the PluginConfigs
of its own namespace whose ``profileSelector`` matches its labels (``apply_plugin_configs``; the
home namespace's PluginConfigs therefore apply to home-namespace profiles only), and
``Scheduler.apply_profile``. A spec that does not parse or does not build leaves the last good
framework serving (the scheduler installs only what built) and says why, naming plugin, field
and value, in ``Ready=False``/``Stalled=True``/``Valid=False`` (``scheduler_operator.control.status``) and
a Warning ``InvalidProfile`` event. Events are posted once per actual change: ``Reloaded`` when
a generation (or merged spec) serves that was not announced, ``InvalidProfile`` when the
refusal differs; a forced rebuild that changes nothing (every tenant profile when the home one
changes) posts none. A PluginConfig that a profile's build blames (the tenant policy, its args
in that profile) is ``Ready=False``/``Stalled=True`` (``RefusedByProfile``) with a Warning event
on itself, once per change. A change of a PluginConfig
re-reconciles every profile of its namespace, one profile per event-loop turn (a rebuild of
many profiles never holds up the Lease renewal), debounced per profile: a burst of edits
rebuilds each profile once, :data:`REBUILD_QUIET` seconds after the last edit of the burst, and
at least once every :data:`REBUILD_MAX_DELAY` seconds while edits keep coming, always from the
newest PluginConfigs (so the newest spec wins and is eventually applied). The statuses of the
namespace's PluginConfigs are refreshed once per batch of rebuilds, not once per profile.
Deleting a profile removes its framework; its pods go to the next-oldest profile of the
namespace with the same schedulerName, else to the cluster-wide profile.

Resolution, attribution and the tenant policy are :mod:`scheduler_core.resolution`'s, shared
with ``simulate``. A profile that exists claims its schedulerName even while invalid: its pods
wait (``PodScheduled=False``, reason ``ProfileNotServing``) rather than fall back. A change of
a home-namespace profile re-checks the tenant profiles of its schedulerName against its policy,
and the tenant profiles that do not serve against the rules on tenant claims every home profile
adds to (``scheduler_core.tenancy.claims``); a tenant profile created or deleted re-checks the
profiles of its namespace that the profiles-per-namespace rule now refuses or admits.

Last good: the merged spec of the generation serving is kept in ``status.lastGood``; at start,
a profile whose current generation does not build is served from it (re-checked against the
policy like any spec), so a restart or failover never silently changes policy.

A profile is rebuilt only when its inputs change (spec, labels, generation, the namespace's
PluginConfigs): the status the operator writes comes back as a watch event that changes none.

Another scheduler binding a profile's pods (``scheduler_operator.control.double_serving``) is the
profile's ``DoubleServing`` condition, and a Warning event when an episode starts; a new
generation of the profile ends the episode.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from scheduler_core import resolution
from scheduler_core.framework import Manifest, manifest
from scheduler_core.names import DEFAULT_SCHEDULER_NAME
from scheduler_core.profiles import ProfileKey
from scheduler_core.runtime.build import ProfileError
from scheduler_core.scheduler import Scheduler
from scheduler_operator.control import collector
from scheduler_operator.control.double_serving import ACTION, DOUBLE_SERVING, DoubleServing, Episode, counted_since
from scheduler_operator.control.recorder import NORMAL, WARNING
from scheduler_operator.control.status import READY, condition, plugin_config_status, profile_status
from scheduler_operator.control.writer import StatusWriter
from scheduler_operator.resources import PLUGIN_CONFIG_KIND, PLUGIN_CONFIG_PLURAL, PROFILE_PLURAL

log = logging.getLogger(__name__)

# Debouncing PluginConfig-driven rebuilds. One second of quiet: a `kubectl apply -f dir/` or a
# GitOps sync lands its objects within well under a second, and a single edit still serves a
# second later; a rebuild costs ~25 ms a profile, so a PluginConfig selected by 300 profiles
# costs ~7.5 s of CPU per rebuild round, once per burst instead of once per edit. Ten seconds at
# most between rebuilds while a storm goes on: the newest spec still serves within ~10 s (plus
# the round) and a tenant's edits cannot keep its profiles on a stale spec.
REBUILD_QUIET = 1.0
REBUILD_MAX_DELAY = 10.0
# A replaced framework is cyclic garbage the tuned collector leaves for a long time
# (``scheduler_operator.control.collector``): a full collection after every this many rebuilds, in the
# middle of a batch too (a batch of 300 profiles left ~120,000 dead objects, the frameworks' queueing
# hints mostly, before its end). At most ~50 dead frameworks wait for it, and one full collection
# (~0.15 s) costs about a tenth of the 50 rebuilds (~25 ms each) it follows.
COLLECT_AFTER_REBUILDS = 50


def _namespace(body: Manifest) -> str:
    """``metadata.namespace``, "" when absent: a :class:`ProfileKey`'s namespace as given, not
    :func:`manifest.namespace_of`'s "default"."""
    return str(manifest.meta(body).get("namespace") or "")


def _generation(body: Manifest) -> int | None:
    generation = manifest.meta(body).get("generation")
    return int(generation) if generation is not None else None


class Reconciler:
    def __init__(
        self,
        scheduler: Scheduler,
        registry: Mapping[str, Any],
        writer: StatusWriter,
        *,
        home_namespace: str,
        clock: Callable[[], float] = time.perf_counter,
        quiet: float = REBUILD_QUIET,
        max_delay: float = REBUILD_MAX_DELAY,
        double_serving: DoubleServing | None = None,
    ) -> None:
        self.scheduler = scheduler
        # Another scheduler binding pods of a profile's name: a condition, and an event per episode.
        self.double_serving = double_serving or DoubleServing(scheduler.profiles.key_for)
        self.double_serving.on_change = self.double_serving_changed
        self.registry = registry
        self.writer = writer
        self.home_namespace = home_namespace
        self._clock = clock
        self.profiles: dict[ProfileKey, Manifest] = {}
        self.configs: dict[str, dict[str, Manifest]] = {}  # namespace -> name -> body
        self._inputs: dict[ProfileKey, str] = {}  # fingerprint of what the profile was built from
        self._serving: dict[ProfileKey, int] = {}  # generation serving (absent: none)
        self._last_good: dict[ProfileKey, dict[str, Any]] = {}  # {"generation", "spec"} serving
        # Events once per actual change: what each profile's last event said (a forced rebuild
        # of the same generation, e.g. of every tenant when the home profile changes, says nothing).
        self._announced: dict[ProfileKey, str] = {}  # digest of what it said
        # PluginConfig name -> "field: reason" the profile's build blamed on it (policy, args).
        self._config_blames: dict[ProfileKey, dict[str, list[str]]] = {}
        self._config_announced: dict[tuple[str, str], str] = {}  # (namespace, name) -> last event's note
        self._pending: dict[ProfileKey, None] = {}  # profiles to rebuild on later loop turns
        self._worker: asyncio.Task[None] | None = None
        self.quiet = quiet
        self.max_delay = max_delay
        self._due: dict[ProfileKey, tuple[float, float]] = {}  # debounced: (first asked, due), loop time
        self._timer: asyncio.TimerHandle | None = None
        self._stale_configs: dict[str, None] = {}  # namespaces whose PluginConfig statuses to refresh
        self.rebuilds = 0
        self._rebuilds_collected = 0  # self.rebuilds at the last full collection

    # -- SchedulerProfiles ---------------------------------------------------------------------
    def profile_changed(self, body: Manifest) -> None:
        key = ProfileKey(_namespace(body), manifest.name_of(body))
        self.writer.observe(PROFILE_PLURAL, body)
        old = self.profiles.get(key)
        if old is None:
            self.double_serving.counts_since(key, counted_since(body))
        elif _generation(old) != _generation(body):
            self.double_serving.reset(key)  # a spec edit: bindings seen before it no longer count
        self.profiles[key] = body
        self._pending.pop(key, None)
        if self._reconcile_profile(key):
            self._refresh_config_statuses(key.namespace)
            self._recount(key.namespace)

    def profile_deleted(self, body: Manifest) -> None:
        key = ProfileKey(_namespace(body), manifest.name_of(body))
        self.profiles.pop(key, None)
        self._inputs.pop(key, None)
        self._serving.pop(key, None)
        self._last_good.pop(key, None)
        self._announced.pop(key, None)
        self._config_blames.pop(key, None)
        self._pending.pop(key, None)
        self._due.pop(key, None)
        self.double_serving.forget(key)
        self.writer.drop(PROFILE_PLURAL, body)
        self.scheduler.delete_profile(key)
        log.info("profile %s deleted", key)
        self._reconcile_later(self._rivals(key, _scheduler_name(body)), force=True)
        if key.namespace == self.home_namespace:
            self._reconcile_later(self._tenants(_scheduler_name(body)), force=True)
        self._recount(key.namespace)
        self._refresh_config_statuses(key.namespace)

    def _recount(self, namespace: str) -> None:
        """The profiles-per-namespace rule: serving profiles now beyond the cap stop serving,
        profiles refused for the cap and now within it are built again."""
        if namespace == self.home_namespace:
            return
        beyond, within = self.scheduler.profiles.over_cap(namespace)
        self._reconcile_later([k for k in beyond + within if k in self.profiles], force=True)

    def _rivals(self, key: ProfileKey, scheduler_name: str) -> list[ProfileKey]:
        return [
            k for k, b in self.profiles.items()
            if k != key and k.namespace == key.namespace and _scheduler_name(b) == scheduler_name
        ]  # fmt: skip

    def _tenants(self, scheduler_name: str) -> list[ProfileKey]:
        """After a home profile of ``scheduler_name`` changed: the tenant profiles its policy
        governs, and those not serving (the claim rules may now admit them, or have just
        refused them)."""
        return [
            k
            for k, b in self.profiles.items()
            if k.namespace != self.home_namespace
            and (_scheduler_name(b) == scheduler_name or self.scheduler.profiles.get(k) is None)
        ]

    def _reconcile_profile(self, key: ProfileKey, *, force: bool = False) -> bool:
        """Rebuild when the inputs changed; True if it did."""
        body = self.profiles[key]
        configs = sorted(self.configs.get(key.namespace, {}).items())
        labels = dict(manifest.labels_of(body))
        raw_spec = manifest.spec(body)
        inputs = json.dumps(
            [raw_spec, labels, _generation(body), [(name, c.get("spec")) for name, c in configs]],
            sort_keys=True, default=str,
        )  # fmt: skip
        if self._inputs.get(key) == inputs and not force:
            return False
        self._inputs[key] = inputs
        self.rebuilds += 1
        started = self._clock()
        was_serving = self.scheduler.profiles.get(key) is not None
        problems, merged = self._build(key, body, raw_spec, labels, configs)
        elapsed = self._clock() - started
        generation = _generation(body)
        if not problems:
            self._serving[key] = generation or 0
            self._last_good[key] = {"generation": generation, "spec": merged}
            log.info("profile %s generation %s serving (reload %.1f ms)", key, generation, elapsed * 1000)
            announce = _digest(["serving", generation, merged])
            if not was_serving or self._announced.get(key) != announce:
                self._announced[key] = announce
                self.writer.event(
                    body, NORMAL, "Reloaded", f"generation {generation} serving (built in {elapsed * 1000:.0f} ms)"
                )
            self._after_serving(key, body)
        else:
            log.warning("profile %s generation %s is invalid: %s", key, generation, "; ".join(problems))
            announce = _digest(["refused", generation, problems])
            if self._announced.get(key) != announce:
                self._announced[key] = announce
                self.writer.event(body, WARNING, "InvalidProfile", "; ".join(problems))
            if not was_serving:
                self._serve_last_good(key, body)
        self._write_status(key, body, problems)
        return True

    def _after_serving(self, key: ProfileKey, body: Manifest) -> None:
        """A served profile may demote a rival (the oldest wins) or change the tenant policy."""
        name = _scheduler_name(body)
        self._reconcile_later(
            [k for k in self._rivals(key, name) if self.scheduler.profiles.get(k) is not None], force=True
        )
        if key.namespace == self.home_namespace:
            self._reconcile_later(self._tenants(name), force=True)

    def _serve_last_good(self, key: ProfileKey, body: Manifest) -> None:
        """At start (nothing serving yet): serve the last good spec kept in status, if any."""
        last = manifest.status(body).get("lastGood") or {}
        raw = last.get("spec")
        if not isinstance(raw, Mapping):
            return
        spec, _ = resolution.parse_profile(
            raw, tenant=key.namespace != self.home_namespace, home_namespace=self.home_namespace
        )
        if spec is None:
            return
        try:
            self.scheduler.apply_profile(key, spec, created=_created(body))
        except ProfileError as error:
            log.warning("profile %s: the last good spec in status does not build either: %s", key, error)
            return
        generation = last.get("generation")
        self._serving[key] = int(generation) if isinstance(generation, int) else 0
        self._last_good[key] = {"generation": generation, "spec": dict(raw)}
        log.info("profile %s: serving the last good generation %s from status", key, generation)

    def _write_status(self, key: ProfileKey, body: Manifest, problems: list[str]) -> None:
        fwk = self.scheduler.profiles.get(key)
        status = profile_status(
            generation=_generation(body),
            problems=problems,
            serving_generation=self._serving.get(key) if fwk is not None else None,
            plugins=fwk.describe() if fwk is not None else None,
            previous=self.writer.current(PROFILE_PLURAL, body),
            now=self.writer.now(),
        )
        if fwk is not None and key in self._last_good:
            status["lastGood"] = self._last_good[key]
        status["conditions"].append(self._double_serving_condition(key, body, status))
        self.writer.set(PROFILE_PLURAL, body, status)

    def _double_serving_condition(self, key: ProfileKey, body: Manifest, status: Mapping[str, Any]) -> dict[str, Any]:
        active, reason, message = self.double_serving.condition_fields(key, _scheduler_name(body))
        before = (self.writer.current(PROFILE_PLURAL, body) or {}).get("conditions") or []
        return condition(
            DOUBLE_SERVING, active, reason, message,
            generation=status.get("observedGeneration"), previous=before, now=self.writer.now(),
        )  # fmt: skip

    def double_serving_changed(self, key: ProfileKey, started: Episode | None) -> None:
        """An episode of another scheduler binding the profile's pods started (one Warning event)
        or ended: the ``DoubleServing`` condition of the status wanted says so."""
        body = self.profiles.get(key)
        if body is None:
            return
        shown = (self.writer.current(PROFILE_PLURAL, body) or {}).get("conditions") or []
        announced = any(c.get("type") == DOUBLE_SERVING and c.get("status") == "True" for c in shown)
        if started is not None and not announced:  # announced: the episode a failover re-derived
            self.writer.event(body, WARNING, DOUBLE_SERVING, started.message(self.double_serving.quiet), action=ACTION)
        status = self.writer.desired(PROFILE_PLURAL, key.namespace, key.name)
        if status is None:
            return  # its first status, when built, has the condition
        conditions = [c for c in status["conditions"] if c["type"] != DOUBLE_SERVING]
        conditions.append(self._double_serving_condition(key, body, status))
        self.writer.set(PROFILE_PLURAL, body, {**status, "conditions": conditions})

    def _build(
        self,
        key: ProfileKey,
        body: Manifest,
        raw_spec: Mapping[str, Any],
        labels: dict[str, str],
        configs: list[tuple[str, Manifest]],
    ) -> tuple[list[str], dict[str, Any]]:
        """Apply the profile; the problems (``field: reason``) when it does not build, and the
        merged spec when it does."""
        tenant = key.namespace != self.home_namespace
        self._config_blames.pop(key, None)
        spec, parse_problems = resolution.parse_profile(raw_spec, tenant=tenant, home_namespace=self.home_namespace)
        if spec is None:
            problems = [f"{path}: {reason}" for path, reason in parse_problems]
            self.scheduler.hold_profile(key, _scheduler_name(body), _created(body), "; ".join(problems))
            return problems, {}
        parsed: list[resolution.NamedConfig] = []
        for name, config in configs:
            config_spec, _ = resolution.parse_plugin_config(manifest.spec(config))
            if config_spec is not None:  # else its own status says why; it cannot be merged
                parsed.append(resolution.NamedConfig(name, config_spec))
        merged, blames = resolution.apply(self.scheduler, key, spec, labels, parsed, created=_created(body))
        for b in blames:
            if b.kind == PLUGIN_CONFIG_KIND:
                self._config_blames.setdefault(key, {}).setdefault(b.name, []).append(f"{b.field}: {b.reason}")
        problems = [
            f"{PLUGIN_CONFIG_KIND} {key.namespace}/{b.name}: {b.field}: {b.reason}"
            if b.kind == PLUGIN_CONFIG_KIND else f"{b.field}: {b.reason}"
            for b in blames
        ]  # fmt: skip
        return problems, merged.model_dump(by_alias=True, exclude_defaults=True, mode="json")

    # -- PluginConfigs ---------------------------------------------------------------------------
    def plugin_config_changed(self, body: Manifest) -> None:
        namespace, name = _namespace(body), manifest.name_of(body)
        self.writer.observe(PLUGIN_CONFIG_PLURAL, body)
        self.configs.setdefault(namespace, {})[name] = body
        self._reconcile_soon([k for k in self.profiles if k.namespace == namespace])
        self._refresh_config_statuses(namespace)

    def plugin_config_deleted(self, body: Manifest) -> None:
        namespace, name = _namespace(body), manifest.name_of(body)
        self.configs.get(namespace, {}).pop(name, None)
        self._config_announced.pop((namespace, name), None)
        self.writer.drop(PLUGIN_CONFIG_PLURAL, body)
        self._reconcile_soon([k for k in self.profiles if k.namespace == namespace])

    def _reconcile_soon(self, keys: list[ProfileKey]) -> None:
        """Rebuild ``keys`` debounced: :data:`REBUILD_QUIET` seconds after the last call naming
        a profile, at most :data:`REBUILD_MAX_DELAY` after the first (inline when no loop runs)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._reconcile_later(keys)
            return
        now = loop.time()
        for key in keys:
            first = self._due[key][0] if key in self._due else now
            self._due[key] = (first, min(now + self.quiet, first + self.max_delay))
        self._arm(loop)

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._due:
            self._timer = loop.call_at(min(due for _, due in self._due.values()), self._release)

    def _release(self) -> None:
        """The due debounced profiles go to the rebuild queue."""
        self._timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        due = [key for key, (_, at) in self._due.items() if at <= now]
        for key in due:
            del self._due[key]
        self._arm(loop)
        self._reconcile_later(due)

    def _reconcile_later(self, keys: list[ProfileKey], *, force: bool = False) -> None:
        """Rebuild ``keys`` one per event-loop turn (inline when no loop runs, e.g. in tests)."""
        for key in keys:
            if force:
                self._inputs.pop(key, None)
            self._pending[key] = None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            while self._pending:
                self._reconcile_next()
            self._refresh_stale_configs()
            return
        if self._pending and (self._worker is None or self._worker.done()):
            self._worker = loop.create_task(self._drain())

    async def _drain(self) -> None:
        while self._pending:
            self._reconcile_next()
            if self.rebuilds - self._rebuilds_collected >= COLLECT_AFTER_REBUILDS:
                self._rebuilds_collected = self.rebuilds
                collector.collect()  # the frameworks just replaced (see COLLECT_AFTER_REBUILDS)
            await asyncio.sleep(0)  # let the Lease renewal, watches and scheduling cycles in
        self._refresh_stale_configs()

    def _reconcile_next(self) -> None:
        key = next(iter(self._pending))
        del self._pending[key]
        if key in self.profiles and self._reconcile_profile(key):
            self._stale_configs[key.namespace] = None

    def _refresh_stale_configs(self) -> None:
        """Once the queue is empty: which profiles a PluginConfig applies to may have changed."""
        while self._stale_configs:
            namespace = next(iter(self._stale_configs))
            del self._stale_configs[namespace]
            self._refresh_config_statuses(namespace)

    async def settle(self) -> None:
        """Rebuild at once what waits for its quiet period, then wait until every deferred
        rebuild is done (tests, benchmarks)."""
        if self._due:
            due, self._due = list(self._due), {}
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._reconcile_later(due)
        while self._worker is not None and not self._worker.done():
            await self._worker

    def _refresh_config_statuses(self, namespace: str) -> None:
        for name, body in self.configs.get(namespace, {}).items():
            status = self._config_status(body)
            self.writer.set(PLUGIN_CONFIG_PLURAL, body, status)
            self._announce_config(namespace, name, body, status)

    def _announce_config(self, namespace: str, name: str, body: Manifest, status: Mapping[str, Any]) -> None:
        """An event on the PluginConfig itself when it is refused (on its own or by a profile it
        applies to) or applies again, once per change."""
        ready = next(c for c in status["conditions"] if c["type"] == READY)
        note = str(ready["message"]) if ready["status"] == "False" else ""
        before = self._config_announced.get((namespace, name))
        if note == (before or ""):
            return
        self._config_announced[(namespace, name)] = note
        if note:
            self.writer.event(body, WARNING, str(ready["reason"]), note)
        elif before:
            self.writer.event(body, NORMAL, str(ready["reason"]), str(status["message"]))

    def _config_status(self, body: Manifest) -> dict[str, Any]:
        unknown = False
        selected: list[str] = []
        spec, parse_problems = resolution.parse_plugin_config(manifest.spec(body))
        if spec is None:
            problems = [f"{path}: {reason}" for path, reason in parse_problems]
        else:
            unknown, own = resolution.plugin_config_problems(spec, self.registry)
            problems = [f"{path}: {reason}" for path, reason in own]
            namespace = _namespace(body)
            match = (spec.profile_selector.match_labels if spec.profile_selector else {}).items()
            for key, profile in sorted(self.profiles.items(), key=lambda item: item[0].name):
                labels = manifest.labels_of(profile)
                if key.namespace == namespace and all(labels.get(k) == v for k, v in match):
                    selected.append(key.name)
        name = manifest.name_of(body)
        refusals = [
            f"{key.namespace}/{key.name}: {reason}"
            for key, blamed in sorted(self._config_blames.items())
            if key.namespace == _namespace(body) and key in self.profiles
            for reason in blamed.get(name, ())
        ]
        return plugin_config_status(
            generation=_generation(body),
            problems=problems,
            unknown_plugin=unknown,
            profiles=selected,
            refusals=refusals,
            previous=self.writer.current(PLUGIN_CONFIG_PLURAL, body),
            now=self.writer.now(),
        )


def _digest(said: object) -> str:
    return hashlib.sha256(json.dumps(said, sort_keys=True, default=str).encode()).hexdigest()


def _scheduler_name(body: Manifest) -> str:
    name = manifest.spec(body).get("schedulerName")
    return name if isinstance(name, str) and name else DEFAULT_SCHEDULER_NAME


def _created(body: Manifest) -> str:
    return str(manifest.meta(body).get("creationTimestamp") or "")
