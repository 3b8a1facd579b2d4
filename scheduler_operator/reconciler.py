"""SchedulerProfiles and PluginConfigs in, live frameworks and status out.

For each SchedulerProfile: parse the spec (``SchedulerProfileSpec``), merge the PluginConfigs
of its own namespace whose ``profileSelector`` matches its labels (``apply_plugin_configs``; the
home namespace's PluginConfigs therefore apply to home-namespace profiles only), and
``Scheduler.apply_profile``. A spec that does not parse or does not build leaves the last good
framework serving (the scheduler installs only what built) and says why, naming plugin, field
and value, in ``Valid=False`` and a Warning ``InvalidProfile`` event. A change of a PluginConfig
re-reconciles every profile of its namespace. Deleting a profile removes its framework; its
pods fall back to the cluster-wide profile of their schedulerName, if any.

Tenant rule: a profile outside the home namespace affects only pods of its own namespace
(``ProfileSet`` resolves so) and may not configure extenders (``scheduler_core.extender.build.
extenders_allowed``, applied when the profile is built).

A profile is rebuilt only when its inputs change (spec, labels, generation, the namespace's
PluginConfigs): the status the operator writes comes back as a watch event that changes none.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from scheduler_core.config import PluginConfigSpec, SchedulerProfileSpec
from scheduler_core.profiles import ProfileKey, apply_plugin_configs
from scheduler_core.runtime.build import ProfileError, format_validation_error, validate_args
from scheduler_core.scheduler import Scheduler
from scheduler_operator.recorder import NORMAL, WARNING
from scheduler_operator.resources import PLUGIN_CONFIG_KIND, PLUGIN_CONFIG_PLURAL, PROFILE_PLURAL
from scheduler_operator.status import plugin_config_status, profile_status
from scheduler_operator.writer import StatusWriter

log = logging.getLogger(__name__)

Body = Mapping[str, Any]


def _meta(body: Body) -> Mapping[str, Any]:
    return body.get("metadata") or {}


def _generation(body: Body) -> int | None:
    generation = _meta(body).get("generation")
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
    ) -> None:
        self.scheduler = scheduler
        self.registry = registry
        self.writer = writer
        self.home_namespace = home_namespace
        self._clock = clock
        self.profiles: dict[ProfileKey, Body] = {}
        self.configs: dict[str, dict[str, Body]] = {}  # namespace -> name -> body
        self._inputs: dict[ProfileKey, str] = {}  # fingerprint of what the profile was built from
        self._serving: dict[ProfileKey, int] = {}  # generation serving (absent: none)
        self.last_reload_seconds: float | None = None

    # -- SchedulerProfiles ---------------------------------------------------------------------
    def profile_changed(self, body: Body) -> None:
        key = ProfileKey(str(_meta(body).get("namespace") or ""), str(_meta(body).get("name") or ""))
        self.writer.observe(PROFILE_PLURAL, body)
        self.profiles[key] = body
        if self._reconcile_profile(key):
            self._refresh_config_statuses(key.namespace)

    def profile_deleted(self, body: Body) -> None:
        key = ProfileKey(str(_meta(body).get("namespace") or ""), str(_meta(body).get("name") or ""))
        self.profiles.pop(key, None)
        self._inputs.pop(key, None)
        self._serving.pop(key, None)
        self.writer.drop(PROFILE_PLURAL, body)
        self.scheduler.delete_profile(key)
        log.info("profile %s deleted: its pods fall back to the cluster-wide profile", key)
        self._refresh_config_statuses(key.namespace)

    def _reconcile_profile(self, key: ProfileKey) -> bool:
        """Rebuild when the inputs changed; True if it did."""
        body = self.profiles[key]
        configs = sorted(self.configs.get(key.namespace, {}).items())
        labels = dict(_meta(body).get("labels") or {})
        raw_spec = body.get("spec") or {}
        inputs = json.dumps(
            [raw_spec, labels, _generation(body), [(name, c.get("spec")) for name, c in configs]],
            sort_keys=True, default=str,
        )  # fmt: skip
        if self._inputs.get(key) == inputs:
            return False
        self._inputs[key] = inputs
        started = self._clock()
        problems = self._build(key, raw_spec, labels, configs)
        elapsed = self._clock() - started
        generation = _generation(body)
        if not problems:
            self._serving[key] = generation or 0
            self.last_reload_seconds = elapsed
            log.info("profile %s generation %s serving (reload %.1f ms)", key, generation, elapsed * 1000)
            self.writer.event(
                body, NORMAL, "Reloaded", f"generation {generation} serving (built in {elapsed * 1000:.0f} ms)"
            )
        else:
            log.warning("profile %s generation %s is invalid: %s", key, generation, "; ".join(problems))
            self.writer.event(body, WARNING, "InvalidProfile", "; ".join(problems))
        fwk = self.scheduler.profiles.get(key)
        status = profile_status(
            generation=generation,
            problems=problems,
            serving_generation=self._serving.get(key),
            plugins=fwk.describe() if fwk is not None else None,
            previous=self.writer.current(PROFILE_PLURAL, body),
            now=self.writer.now(),
        )
        self.writer.set(PROFILE_PLURAL, body, status)
        return True

    def _build(
        self, key: ProfileKey, raw_spec: Mapping[str, Any], labels: dict[str, str], configs: list[tuple[str, Body]]
    ) -> list[str]:
        """Apply the profile; the problems (``field: reason``) when it does not build."""
        problems: list[str] = []
        try:
            spec = SchedulerProfileSpec.model_validate(raw_spec)
        except ValidationError as error:
            problems.extend(f"{path}: {reason}" for path, reason in format_validation_error("spec", error))
        if problems:
            return problems
        parsed: list[tuple[str, PluginConfigSpec]] = []
        for name, config in configs:
            try:
                parsed.append((name, PluginConfigSpec.model_validate(config.get("spec") or {})))
            except ValidationError:
                continue  # its own status says why; it cannot be merged
        merged = apply_plugin_configs(spec, labels, [c for _, c in parsed])
        try:
            self.scheduler.apply_profile(key, merged)
        except ProfileError as error:
            return self._attribute(key, spec, merged, parsed, error)
        return []

    @staticmethod
    def _attribute(
        key: ProfileKey,
        spec: SchedulerProfileSpec,
        merged: SchedulerProfileSpec,
        configs: list[tuple[str, PluginConfigSpec]],
        error: ProfileError,
    ) -> list[str]:
        """Name the object at fault: the profile's field, or the PluginConfig merged in."""
        own = len(spec.plugin_config)
        problems = []
        for path, reason in error.problems:
            if path.startswith("pluginConfig[") and "]" in path:
                index = int(path[len("pluginConfig[") : path.index("]")])
                rest = path[path.index("]") + 1 :].lstrip(".")
                if index >= own:
                    plugin = merged.plugin_config[index].name
                    name = next((n for n, c in configs if c.plugin == plugin), "?")
                    field = "spec.plugin" if rest == "name" else f"spec.{rest}" if rest else "spec"
                    problems.append(f"{PLUGIN_CONFIG_KIND} {key.namespace}/{name}: {field}: {reason}")
                    continue
            problems.append(f"spec.{path}: {reason}")
        return problems

    # -- PluginConfigs ---------------------------------------------------------------------------
    def plugin_config_changed(self, body: Body) -> None:
        namespace, name = str(_meta(body).get("namespace") or ""), str(_meta(body).get("name") or "")
        self.writer.observe(PLUGIN_CONFIG_PLURAL, body)
        self.configs.setdefault(namespace, {})[name] = body
        self._reconcile_namespace(namespace)
        self._refresh_config_statuses(namespace)

    def plugin_config_deleted(self, body: Body) -> None:
        namespace, name = str(_meta(body).get("namespace") or ""), str(_meta(body).get("name") or "")
        self.configs.get(namespace, {}).pop(name, None)
        self.writer.drop(PLUGIN_CONFIG_PLURAL, body)
        self._reconcile_namespace(namespace)

    def _reconcile_namespace(self, namespace: str) -> None:
        for key in [k for k in self.profiles if k.namespace == namespace]:
            self._reconcile_profile(key)

    def _refresh_config_statuses(self, namespace: str) -> None:
        for body in self.configs.get(namespace, {}).values():
            self.writer.set(PLUGIN_CONFIG_PLURAL, body, self._config_status(body))

    def _config_status(self, body: Body) -> dict[str, Any]:
        problems: list[str] = []
        unknown = False
        selected: list[str] = []
        try:
            spec = PluginConfigSpec.model_validate(body.get("spec") or {})
        except ValidationError as error:
            problems = [f"{path}: {reason}" for path, reason in format_validation_error("spec", error)]
        else:
            factory = self.registry.get(spec.plugin)
            if factory is None:
                unknown = True
                problems = [f"spec.plugin: plugin {spec.plugin!r} does not exist"]
            else:
                try:
                    validate_args(spec.plugin, getattr(factory, "args_model", None), spec.args, "spec.args")
                except ProfileError as error:
                    problems = [f"{path}: {reason}" for path, reason in error.problems]
            namespace = str(_meta(body).get("namespace") or "")
            match = (spec.profile_selector.match_labels if spec.profile_selector else {}).items()
            for key, profile in sorted(self.profiles.items(), key=lambda item: item[0].name):
                labels = _meta(profile).get("labels") or {}
                if key.namespace == namespace and all(labels.get(k) == v for k, v in match):
                    selected.append(key.name)
        return plugin_config_status(
            generation=_generation(body),
            problems=problems,
            unknown_plugin=unknown,
            profiles=selected,
            previous=self.writer.current(PLUGIN_CONFIG_PLURAL, body),
            now=self.writer.now(),
        )
