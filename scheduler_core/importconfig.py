"""``import-config``: a kube-scheduler ``KubeSchedulerConfiguration`` (v1) as SchedulerProfiles.

Each of its profiles becomes one SchedulerProfile in the home namespace (where profiles apply
cluster-wide) with the same ``schedulerName``, ``plugins`` (every extension point, weights,
``disabled`` and ``*``), ``pluginConfig`` (args without their ``apiVersion``/``kind``) and
``percentageOfNodesToScore`` (the profile's own, else the configuration's, as upstream's
``KubeSchedulerProfile.PercentageOfNodesToScore`` doc says). A configuration without profiles
is upstream's default: one profile, ``default-scheduler``. The plugin args stay in the profile
(its own ``pluginConfig``), not in separate PluginConfigs: a namespace's PluginConfig would
apply to every profile of the namespace, which is not what a per-profile ``pluginConfig`` says.

What has no equivalent is never dropped silently: each such field is a warning naming it and
saying why (the operator's own flags, a plugin this build lacks,
args its model refuses). The field names are those of
``k8s.io/kube-scheduler@v0.36.3/config/v1/types.go``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler_core.config import Plugins, SchedulerProfileSpec
from scheduler_core.names import API_VERSION as PROFILE_API_VERSION
from scheduler_core.names import DEFAULT_SCHEDULER_NAME, PROFILE_KIND, UPSTREAM_DEFAULT_SCHEDULER_NAME
from scheduler_core.runtime.build import ProfileError, validate_args

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
EXTENSION_POINTS = tuple(str(f.alias) for f in Plugins.model_fields.values())  # the profile's, as upstream's
# Top-level fields the operator has its own way to set, and upstream's defaults: a value equal
# to the default needs no warning (types.go and config/v1/defaults.go).
_OPERATOR_FIELDS = {
    "parallelism": ("the operator runs scheduling cycles serially", 16),
    "podInitialBackoffSeconds": ("the operator's backoff is upstream's default (1 s)", 1),
    "podMaxBackoffSeconds": ("the operator's backoff is upstream's default (10 s)", 10),
    "leaderElection": ("use `crd-scheduler run --lease-name/--lease-duration/--renew-deadline/--retry-period`", None),
    "clientConnection": ("use the operator's kubeconfig and `--max-in-flight`", None),
    "enableProfiling": ("no equivalent", None),
    "enableContentionProfiling": ("no equivalent", None),
    "delayCacheUntilActive": ("no equivalent: every replica keeps its caches warm", False),
}
_PROFILE_UNSUPPORTED = ("placementGenerate", "placementScore")  # v1.36 workload-aware scheduling
# Upstream's default plugins behind feature gates (pkg/scheduler/apis/config/v1/default_plugins.go);
# DynamicResources is on by default in v1.36 (DynamicResourceAllocation is GA), the others are not.
UPSTREAM_GATED_DEFAULTS = ("DynamicResources", "NodeDeclaredFeatures", "GangScheduling",
                           "TopologyPlacementGenerator", "PodGroupPodsCount")  # fmt: skip
_DEFAULT_ON_GATED = ("DynamicResources",)
_DNS_LABEL = re.compile(r"[^a-z0-9-]+")


class ConfigImportError(ValueError):
    """The file is not a KubeSchedulerConfiguration v1 at all."""


@dataclass(slots=True)
class Imported:
    """The SchedulerProfile manifests, and a warning per thing that has no equivalent."""

    objects: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)


def convert(
    config: object,
    *,
    namespace: str,
    registry: Mapping[str, Any],
    source: str = "",
    take_over_default_scheduler: bool = False,
) -> Imported:
    """``config`` (the parsed YAML) as SchedulerProfile objects in ``namespace``.

    A profile for ``default-scheduler`` (upstream's default name, the name of every pod that
    names no scheduler) is renamed to :data:`DEFAULT_SCHEDULER_NAME` with a warning unless
    ``take_over_default_scheduler``: served while kube-scheduler runs, it makes two schedulers
    bind the same pods, each blind to the other's assumptions (issue 22)."""
    where = f"{source}: " if source else ""
    if not isinstance(config, Mapping):
        raise ConfigImportError(f"{where}must be an object, a {KIND}")
    if config.get("kind") != KIND or config.get("apiVersion") != API_VERSION:
        got = f"{config.get('apiVersion')}/{config.get('kind')}"
        raise ConfigImportError(f"{where}apiVersion/kind: must be {API_VERSION}/{KIND}, got {got}")
    warnings: list[str] = []
    for name, value in config.items():
        if name in ("apiVersion", "kind", "profiles", "percentageOfNodesToScore", "extenders"):
            continue
        why, default = _OPERATOR_FIELDS.get(name, ("unknown field", None))
        if value in (None, {}, []) or (default is not None and value == default):
            continue
        warnings.append(f"{where}{name}: not imported: {why}")
    for name in _DEFAULT_ON_GATED:
        if name not in registry:
            why = "the profiles run without it (pods with resource claims are not scheduled as upstream would)"
            warnings.append(f"{where}profiles: upstream's default plugin {name} does not exist in this build: {why}")
    profiles = config.get("profiles") or [{}]
    if not isinstance(profiles, list):
        raise ConfigImportError(f"{where}profiles: must be an array")
    objects: list[dict[str, Any]] = []
    names: set[str] = set()
    for i, profile in enumerate(profiles):
        path = f"{where}profiles[{i}]"
        if not isinstance(profile, Mapping):
            raise ConfigImportError(f"{path}: must be an object")
        spec = _profile_spec(profile, config.get("percentageOfNodesToScore"), registry, path, warnings)
        if spec["schedulerName"] == UPSTREAM_DEFAULT_SCHEDULER_NAME and not take_over_default_scheduler:
            spec["schedulerName"] = _renamed(profiles, path, warnings)
        if config.get("extenders"):
            # Upstream's extenders are global: every profile calls them (same field names).
            spec["extenders"] = _shaped(config["extenders"], list, f"{where}extenders")
        name = _name(str(spec["schedulerName"]), names)
        objects.append(
            {
                "apiVersion": PROFILE_API_VERSION,
                "kind": PROFILE_KIND,
                "metadata": {"name": name, "namespace": namespace},
                "spec": spec,
            }
        )
    return Imported(objects, warnings)


def _renamed(profiles: Sequence[object], path: str, warnings: list[str]) -> str:
    taken = {p.get("schedulerName") for p in profiles if isinstance(p, Mapping)}
    if DEFAULT_SCHEDULER_NAME in taken:
        raise ConfigImportError(
            f"{path}.schedulerName: {UPSTREAM_DEFAULT_SCHEDULER_NAME!r} cannot be renamed to "
            f"{DEFAULT_SCHEDULER_NAME!r}, which another profile serves: rename one of them, or pass "
            "--take-over-default-scheduler"
        )
    warnings.append(
        f"{path}.schedulerName: {UPSTREAM_DEFAULT_SCHEDULER_NAME!r} renamed to {DEFAULT_SCHEDULER_NAME!r}: "
        "served while kube-scheduler runs, both schedulers would bind the same pods; pods opt in with "
        f"spec.schedulerName: {DEFAULT_SCHEDULER_NAME}. To replace kube-scheduler, turn it off first and "
        "pass --take-over-default-scheduler (docs/deploy.md: As the cluster's only scheduler)"
    )
    return DEFAULT_SCHEDULER_NAME


def _profile_spec(
    profile: Mapping[str, Any], global_percentage: object, registry: Mapping[str, Any], path: str, warnings: list[str]
) -> dict[str, Any]:
    name = _shaped(profile.get("schedulerName") or UPSTREAM_DEFAULT_SCHEDULER_NAME, str, f"{path}.schedulerName")
    spec: dict[str, Any] = {"schedulerName": name}
    percentage = profile.get("percentageOfNodesToScore")
    if percentage is None:
        percentage = global_percentage
    if percentage is not None:
        spec["percentageOfNodesToScore"] = percentage
    for name in profile:
        if name not in ("schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"):
            warnings.append(f"{path}.{name}: not imported: unknown field")
    plugins = _plugins(
        _shaped(profile.get("plugins") or {}, Mapping, f"{path}.plugins"), registry, f"{path}.plugins", warnings
    )
    if plugins:
        spec["plugins"] = plugins
    entries = _plugin_config(
        _shaped(profile.get("pluginConfig") or [], list, f"{path}.pluginConfig"),
        registry,
        f"{path}.pluginConfig",
        warnings,
    )
    if entries:
        spec["pluginConfig"] = entries
    try:
        SchedulerProfileSpec.model_validate(spec)
    except ValueError as exc:
        raise ConfigImportError(f"{path}: {exc}") from None
    return spec


def _plugins(plugins: Mapping[str, Any], registry: Mapping[str, Any], path: str, warnings: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for point, plugin_set in plugins.items():
        if point in _PROFILE_UNSUPPORTED or point not in EXTENSION_POINTS:
            why = "workload-aware scheduling has no equivalent" if point in _PROFILE_UNSUPPORTED else "unknown field"
            if plugin_set:
                warnings.append(f"{path}.{point}: not imported: {why}")
            continue
        if not isinstance(plugin_set, Mapping):
            raise ConfigImportError(f"{path}.{point}: must be an object")
        converted: dict[str, Any] = {}
        for which in ("enabled", "disabled"):
            refs = []
            for j, ref in enumerate(_shaped(plugin_set.get(which) or [], list, f"{path}.{point}.{which}")):
                name = _shaped(_shaped(ref, Mapping, f"{path}.{point}.{which}[{j}]").get("name"), str,
                               f"{path}.{point}.{which}[{j}].name")  # fmt: skip
                if name != "*" and name not in registry:
                    why = "not imported" if which == "enabled" else "nothing to disable"
                    warnings.append(f"{path}.{point}.{which}[{j}]: plugin {name!r} does not exist in this build: {why}")
                    continue
                refs.append({k: v for k, v in ref.items() if k in ("name", "weight")})
            if refs:
                converted[which] = refs
        if converted:
            out[point] = converted
    return out


def _plugin_config(
    entries: Sequence[Any], registry: Mapping[str, Any], path: str, warnings: list[str]
) -> list[dict[str, Any]]:
    out = []
    for j, entry in enumerate(entries):
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if not isinstance(name, str) or name not in registry:
            warnings.append(f"{path}[{j}]: args of plugin {name!r}, which does not exist in this build: not imported")
            continue
        given = _shaped(entry.get("args") or {}, Mapping, f"{path}[{j}].args")
        args = {k: v for k, v in given.items() if k not in ("apiVersion", "kind")}
        try:
            validate_args(name, getattr(registry[name], "args_model", None), args, "args")
        except ProfileError as exc:
            reasons = "; ".join(f"{p}: {r}" for p, r in exc.problems)
            warnings.append(f"{path}[{j}] ({name}): not imported: {reasons}")
            continue
        out.append({"name": name, "args": args} if args else {"name": name})
    return out


_SHAPES: dict[type, str] = {Mapping: "an object", list: "an array", str: "a string"}


def _shaped(value: Any, shape: type, path: str) -> Any:
    """``value`` when it has the JSON ``shape`` upstream's types give ``path``; else the refusal
    naming the field (the input is a file the user wrote)."""
    if not isinstance(value, shape):
        raise ConfigImportError(f"{path}: must be {_SHAPES[shape]}")
    return value


def _name(scheduler_name: str, taken: set[str]) -> str:
    """A DNS-1123 name from the scheduler name, unique among the imported profiles."""
    base = _DNS_LABEL.sub("-", scheduler_name.lower()).strip("-")[:58] or "profile"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    taken.add(name)
    return name
