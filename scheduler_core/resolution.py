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
  fault, else the profile's field;
* :func:`validate`: a whole set of profiles and PluginConfigs at once, the one entry of the
  admission webhook, ``crd-scheduler validate`` and ``simulate``. Pure and synchronous: without
  a scheduler to serve them (``into``) the frameworks are built into a :class:`ProfileSet` of
  its own over an empty cluster, with no event loop, no thread and no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import ValidationError

from scheduler_core.cache.snapshot import Snapshot
from scheduler_core.config import PluginConfigSpec, SchedulerProfileSpec
from scheduler_core.defaults import default_plugins
from scheduler_core.framework import ClusterAPI, PodInfo, Status
from scheduler_core.framework.writes import Write, Written
from scheduler_core.names import PLUGIN_CONFIG_KIND, PROFILE_KIND
from scheduler_core.profiles import ProfileKey, ProfileSet, apply_plugin_configs
from scheduler_core.runtime.build import ProfileError, format_validation_error, validate_args
from scheduler_core.runtime.framework import Framework
from scheduler_core.runtime.handle import FrameworkHandle
from scheduler_core.runtime.registry import default_registry
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


class ProfileServer(ProfileApplier, Protocol):
    """What :func:`validate` serves the profiles into: the ``Scheduler`` (``simulate``), or a
    bare :class:`ProfileSet` (:class:`_Unserved`, the webhook and ``validate``)."""

    def claim_profile(self, key: ProfileKey, scheduler_name: str, created: str = "") -> None: ...


class ProfileInput(Protocol):
    """A SchedulerProfile read from somewhere (a manifest, a review, a snapshot)."""

    @property
    def key(self) -> ProfileKey: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def spec(self) -> SchedulerProfileSpec: ...


class ConfigInput(Protocol):
    """A PluginConfig read from somewhere."""

    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def spec(self) -> PluginConfigSpec: ...


@dataclass(frozen=True, slots=True)
class Finding:
    """A problem of one of the objects given to :func:`validate` (``obj`` is that object)."""

    obj: ProfileInput | ConfigInput
    field: str
    reason: str


def validate(
    profiles: Sequence[ProfileInput],
    configs: Sequence[ConfigInput],
    *,
    home_namespace: str,
    registry: Mapping[str, Any] | None = None,
    into: ProfileServer | None = None,
) -> list[Finding]:
    """The problems of ``profiles`` and ``configs`` taken together, as the operator would find
    them: each PluginConfig's own (its plugin exists, its args fit), then every profile built
    with its namespace's PluginConfigs merged in, the cluster-wide ones first (they carry the
    tenant policy the others are checked against), each problem naming the object at fault.

    Every profile claims its schedulerName before any is built (the oldest claim wins, as in
    the operator). The frameworks are served ``into`` the given scheduler (``simulate``), else
    built and dropped (nothing else runs: no event loop, thread or I/O)."""
    registry = default_registry() if registry is None else registry
    server = into if into is not None else _Unserved(home_namespace, registry)
    findings: list[Finding] = []
    for config in configs:
        bounds = check_args_bounds(config.spec.args, "spec.args")
        _, own = plugin_config_problems(config.spec, registry) if not bounds else (False, bounds)
        findings.extend(Finding(config, path, reason) for path, reason in own)
    for profile in profiles:
        server.claim_profile(profile.key, profile.spec.scheduler_name)
    for profile in sorted(profiles, key=lambda p: p.key.namespace != home_namespace):
        mine = [c for c in configs if c.namespace == profile.key.namespace]
        named = [NamedConfig(c.name, c.spec) for c in mine]
        _, blames = apply(server, profile.key, profile.spec, profile.labels, named)
        by_name = {c.name: c for c in mine}
        for blame in blames:
            at_fault = by_name.get(blame.name) if blame.kind == PLUGIN_CONFIG_KIND else None
            findings.append(Finding(at_fault if at_fault is not None else profile, blame.field, blame.reason))
    return findings


class _Unserved:
    """Profiles built as the scheduler builds them (``ProfileSet``: claims, the queue sort, the
    tenant rules) over an empty cluster, and served to nobody."""

    def __init__(self, home_namespace: str, registry: Mapping[str, Any]) -> None:
        self._home = home_namespace
        self.profiles = ProfileSet(
            home_namespace=home_namespace,
            registry=registry,
            default_multi_point=default_plugins(registry),
            make_handle=self._handle,
        )

    def _handle(self, key: ProfileKey) -> FrameworkHandle:
        tenant = None if key.namespace == self._home else key.namespace
        return FrameworkHandle(
            str(key), snapshot=lambda: Snapshot([]), api=_NoWrites(), objects=lambda kind: (), tenant_namespace=tenant
        )

    def claim_profile(self, key: ProfileKey, scheduler_name: str, created: str = "") -> None:
        self.profiles.claim(key, scheduler_name, created)

    def apply_profile(self, key: ProfileKey, spec: SchedulerProfileSpec, *, created: str | None = None) -> Framework:
        if created is not None:
            self.profiles.claim(key, spec.scheduler_name, created)
        fwk = self.profiles.build(key, spec)
        self.profiles.install(key, fwk, spec)
        return fwk


class _NoWrites(ClusterAPI):
    """The API of a framework that only validates: no plugin runs, so nothing writes."""

    async def bind(self, pod: PodInfo, node_name: str, annotations: Mapping[str, str] | None = None) -> Status | None:
        raise AssertionError("a framework built to validate a profile never binds")

    async def write(self, call: Write) -> Written:
        raise AssertionError("a framework built to validate a profile never writes")


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
