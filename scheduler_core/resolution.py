"""Profile and PluginConfig resolution, with the problem attributed to the object at fault.

The one place where a SchedulerProfile's spec, its namespace's PluginConfigs and the tenant
policy become a serving framework, used by the operator (``scheduler_operator.control.reconciler``) and
``simulate`` (``scheduler_core.simulator.run``) alike, so both refuse and accept the same
profiles with the same messages:

* :func:`parse_profile`: a raw spec to a model, with its args bounded (depth, size, counts)
  before any model or plugin reads them (extenders of tenant profiles: the tenant policy);
* :func:`plugin_config_problems`: a PluginConfig's own problems (unknown plugin, args);
* :func:`apply`: merge the PluginConfigs, build and serve (``Scheduler.apply_profile``: the
  tenant policy is checked there), and name the PluginConfig when its merged args are at
  fault, else the profile's field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import ValidationError

from scheduler_core.config import PluginConfigSpec, SchedulerProfileSpec
from scheduler_core.names import PLUGIN_CONFIG_KIND, PROFILE_KIND
from scheduler_core.profiles import ProfileKey, apply_plugin_configs
from scheduler_core.runtime.build import ProfileError, format_validation_error, validate_args
from scheduler_core.runtime.framework import Framework
from scheduler_core.tenancy import check_args_bounds

_PLUGIN_CONFIG_PATH = re.compile(r"^pluginConfig\[(\d+)\]\.?(.*)$")

Problem = tuple[str, str]  # (field path, reason)


@dataclass(frozen=True, slots=True)
class Blame:
    """A problem of the object at fault: the profile, or one of its namespace's PluginConfigs."""

    kind: str  # PROFILE_KIND or PLUGIN_CONFIG_KIND
    name: str  # the PluginConfig's name; the profile's for PROFILE_KIND
    field: str
    reason: str


@dataclass(frozen=True, slots=True)
class NamedConfig:
    name: str
    spec: PluginConfigSpec


class ProfileApplier(Protocol):
    def apply_profile(
        self, key: ProfileKey, spec: SchedulerProfileSpec, *, created: str | None = None
    ) -> Framework: ...


def parse_profile(
    raw: Mapping[str, Any], *, tenant: bool, home_namespace: str
) -> tuple[SchedulerProfileSpec | None, list[Problem]]:
    """The spec model of a raw ``spec``, or the problems (paths start with ``spec.``)."""
    problems: list[Problem] = []
    entries = raw.get("pluginConfig")
    if isinstance(entries, list):
        for index, entry in enumerate(entries):
            if isinstance(entry, Mapping):
                problems.extend(check_args_bounds(entry.get("args"), f"spec.pluginConfig[{index}].args"))
    if problems:
        return None, problems
    try:
        return SchedulerProfileSpec.model_validate(raw), []
    except ValidationError as error:
        return None, format_validation_error("spec", error)


def parse_plugin_config(raw: Mapping[str, Any]) -> tuple[PluginConfigSpec | None, list[Problem]]:
    bounds = check_args_bounds(raw.get("args"), "spec.args")
    if bounds:
        return None, bounds
    try:
        return PluginConfigSpec.model_validate(raw), []
    except ValidationError as error:
        return None, format_validation_error("spec", error)


def plugin_config_problems(spec: PluginConfigSpec, registry: Mapping[str, Any]) -> tuple[bool, list[Problem]]:
    """``(unknown plugin?, problems)`` of a parsed PluginConfig: its plugin exists, its args fit."""
    factory = registry.get(spec.plugin)
    if factory is None:
        return True, [("spec.plugin", f"plugin {spec.plugin!r} does not exist")]
    try:
        validate_args(spec.plugin, getattr(factory, "args_model", None), spec.args, "spec.args")
    except ProfileError as error:
        return False, list(error.problems)
    return False, []


def apply(
    scheduler: ProfileApplier,
    key: ProfileKey,
    spec: SchedulerProfileSpec,
    labels: Mapping[str, str],
    configs: Sequence[NamedConfig],
    *,
    created: str | None = None,
) -> tuple[SchedulerProfileSpec, list[Blame]]:
    """Merge ``configs`` into ``spec``, build and serve; the merged spec and the blames."""
    merged = apply_plugin_configs(spec, labels, [c.spec for c in configs])
    try:
        scheduler.apply_profile(key, merged, created=created)
    except ProfileError as error:
        return merged, attribute(key, spec, merged, configs, error.problems)
    return merged, []


def attribute(
    key: ProfileKey,
    spec: SchedulerProfileSpec,
    merged: SchedulerProfileSpec,
    configs: Sequence[NamedConfig],
    problems: Sequence[Problem],
) -> list[Blame]:
    """Name the object at fault: the profile's field, or the PluginConfig merged in."""
    own = len(spec.plugin_config)
    blames = []
    for path, reason in problems:
        match = _PLUGIN_CONFIG_PATH.match(path)
        if match and int(match[1]) >= own:
            plugin = merged.plugin_config[int(match[1])].name
            config = next((c for c in configs if c.spec.plugin == plugin), None)
            if config is not None:
                rest = match[2]
                field = "spec.plugin" if rest == "name" else f"spec.{rest}" if rest else "spec"
                blames.append(Blame(PLUGIN_CONFIG_KIND, config.name, field, reason))
                continue
        field = path if path.startswith("metadata.") else f"spec.{path}"  # the profile-count rule's
        blames.append(Blame(PROFILE_KIND, key.name, field, reason))
    return blames
