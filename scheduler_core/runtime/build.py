"""Build a Framework from a profile spec, with upstream's rules.

Upstream: ``pkg/scheduler/apis/config/v1/default_plugins.go`` (``mergePlugins``) and
``pkg/scheduler/framework/runtime/framework.go`` (``NewFramework``,
``expandMultiPointPlugins``, ``getScoreWeights``). The defaults are merged into the
profile's ``multiPoint`` set; each extension point's own ``enabled`` list comes first,
multiPoint plugins are expanded into every point they implement unless disabled there
(``*`` disables them all); there must be exactly one QueueSort and at least one Bind
plugin; a score weight defaults to 1 and the total may not overflow int64.

Every problem is reported with the field path it comes from, e.g.
``plugins.score.enabled[0].name: plugin "Foo" does not exist``.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from scheduler_core.config import PluginRef, Plugins, PluginSet, SchedulerProfileSpec
from scheduler_core.framework import MAX_NODE_SCORE, MAX_TOTAL_SCORE, Handle, Plugin
from scheduler_core.framework import field as field_errors
from scheduler_core.framework.extension_points import EXTENSION_POINTS, plugin_problems


class ProfileError(ValueError):
    """A profile that cannot be built; ``problems`` lists ``(field path, reason)``."""

    def __init__(self, problems: Sequence[tuple[str, str]]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(f"{path}: {reason}" for path, reason in self.problems))


@dataclass(slots=True)
class BuiltProfile:
    """The outcome of building: plugin instances per extension point and score weights."""

    plugins: dict[str, Plugin]
    points: dict[str, list[Plugin]]
    score_weights: dict[str, int]


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """Upstream ``mergePluginSet``: custom disables and re-configurations over defaults."""
    disabled = [PluginRef(name=p.name) for p in (*custom.disabled, *default.disabled)]
    disabled_names = {p.name for p in disabled}
    custom_index = {p.name: i for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in disabled_names:
        for plugin in default.enabled:
            if plugin.name in disabled_names:
                continue
            if plugin.name in custom_index:
                index = custom_index[plugin.name]
                plugin = custom.enabled[index]
                replaced.add(index)
            enabled.append(plugin)
    enabled.extend(p for i, p in enumerate(custom.enabled) if i not in replaced)
    return PluginSet(enabled=enabled, disabled=disabled)


def merge_with_defaults(default_multi_point: PluginSet, plugins: Plugins) -> Plugins:
    merged = plugins.model_copy()
    merged.multi_point = merge_plugin_set(default_multi_point, plugins.multi_point)
    return merged


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = field_errors.MAX_VALUE_CHARS
_REPR.maxlong = 64


def short_repr(value: object) -> str:
    """``repr`` cut short: a message never embeds a whole hostile value."""
    return _REPR.repr(value)


def format_validation_error(prefix: str, error: ValidationError) -> list[tuple[str, str]]:
    problems = []
    for item in error.errors():
        loc = ".".join(str(part) for part in item["loc"])
        path = f"{prefix}.{loc}" if loc else prefix
        got = item.get("input")
        detail = item["msg"]
        if item["type"] not in ("missing", "extra_forbidden") and not isinstance(got, dict):
            detail = f"{detail} (got {short_repr(got)})"
        elif item["type"] == "extra_forbidden":
            detail = "unknown field"
        problems.append((path, detail))
    return problems


def strip_type_meta(name: str, raw: Mapping[str, Any], path: str) -> dict[str, Any]:
    """Args pasted from a KubeSchedulerConfiguration carry ``apiVersion``/``kind``
    (``kind: NodeResourcesFitArgs``), which upstream's decoder accepts; they name the type, so
    a kind for another plugin is refused and both are dropped before the model sees the args."""
    args = dict(raw)
    kind = args.pop("kind", None)
    api_version = args.pop("apiVersion", None)
    expected = f"{name}Args"
    if kind is not None and kind != expected:
        raise ProfileError([_pair(field_errors.not_supported(f"{path}.kind", kind, [expected]))])
    if api_version is not None and (not isinstance(api_version, str) or "/" not in api_version):
        raise ProfileError([_pair(field_errors.invalid(f"{path}.apiVersion", api_version, "must be group/version"))])
    return args


def _pair(error: field_errors.Error) -> tuple[str, str]:
    return error.field, error.body()


def validate_args(name: str, args_model: type[BaseModel] | None, raw: Mapping[str, Any], path: str) -> Any:
    """Validate a plugin's args with its model; raise ProfileError naming plugin and field."""
    raw = strip_type_meta(name, raw, path)
    if args_model is None:
        if raw:
            raise ProfileError([(path, f"plugin {name!r} takes no args")])
        return None
    try:
        return args_model.model_validate(dict(raw))
    except ValidationError as exc:
        problems = format_validation_error(path, exc)
        raise ProfileError([(p, f"plugin {name!r}: {reason}") for p, reason in problems]) from None


def build_profile(
    spec: SchedulerProfileSpec,
    registry: Mapping[str, Any],
    handle: Handle,
    default_multi_point: PluginSet,
) -> BuiltProfile:
    plugins_cfg = merge_with_defaults(default_multi_point, spec.plugins)
    problems: list[tuple[str, str]] = []

    # Which plugins are needed, and where each was named first (for messages).
    needed: dict[str, str] = {}
    for field, camel in (*((p.field, p.config_name) for p in EXTENSION_POINTS), ("multi_point", "multiPoint")):
        plugin_set: PluginSet = getattr(plugins_cfg, field)
        for i, ref in enumerate(plugin_set.enabled):
            needed.setdefault(ref.name, f"plugins.{camel}.enabled[{i}].name")

    args_by_name: dict[str, tuple[int, dict[str, Any]]] = {}
    for i, entry in enumerate(spec.plugin_config):
        if entry.name in args_by_name:
            problems.append((f"pluginConfig[{i}].name", f"repeated config for plugin {entry.name!r}"))
        elif entry.name not in registry:
            problems.append((f"pluginConfig[{i}].name", f"plugin {entry.name!r} does not exist"))
        else:
            args_by_name[entry.name] = (i, entry.args)

    instances: dict[str, Plugin] = {}
    for name, path in needed.items():
        factory = registry.get(name)
        if factory is None:
            problems.append((path, f"plugin {name!r} does not exist"))
            continue
        index, raw_args = args_by_name.get(name, (-1, {}))
        args_path = f"pluginConfig[{index}].args" if index >= 0 else f"pluginConfig({name}).args"
        try:
            args = validate_args(name, getattr(factory, "args_model", None), raw_args, args_path)
            instance = factory(args, handle)
            # A factory function's plugin is first seen here; a class was checked at registration.
            instance_problems = plugin_problems(name, instance)
            if instance_problems:
                raise ProfileError([(path, problem) for problem in instance_problems])
            instances[name] = instance
        except ProfileError as exc:
            problems.extend(exc.problems)
        except Exception as exc:  # a plugin factory refusing its args is a profile problem, not a crash
            problems.append((args_path, f"plugin {name!r} failed to initialize: {exc}"))
    # Upstream validates the args of every pluginConfig entry, a disabled plugin's too.
    for name, (index, raw_args) in args_by_name.items():
        if name not in needed:
            try:
                args_model = getattr(registry[name], "args_model", None)
                validate_args(name, args_model, raw_args, f"pluginConfig[{index}].args")
            except ProfileError as exc:
                problems.extend(exc.problems)
    if problems:
        raise ProfileError(problems)

    points: dict[str, list[Plugin]] = {}
    for point in EXTENSION_POINTS:
        field, camel, method = point.field, point.config_name, point.method
        plugin_set = getattr(plugins_cfg, field)
        enabled: list[str] = []
        for i, ref in enumerate(plugin_set.enabled):
            if not hasattr(instances[ref.name], method):
                problems.append((f"plugins.{camel}.enabled[{i}].name", f"plugin {ref.name!r} does not extend {camel}"))
            elif ref.name in enabled:
                problems.append(
                    (f"plugins.{camel}.enabled[{i}].name", f"plugin {ref.name!r} already registered as {camel}")
                )
            else:
                enabled.append(ref.name)
        points[field] = [
            instances[n] for n in _expand_multi_point(plugins_cfg, field, camel, method, enabled, instances, problems)
        ]
    if problems:
        raise ProfileError(problems)

    if len(points["queue_sort"]) != 1:
        problems.append(
            (
                "plugins.queueSort",
                f"only one queue sort plugin required for profile with scheduler name "
                f"{spec.scheduler_name!r}, but got {len(points['queue_sort'])}",
            )
        )
    if not points["bind"]:
        problems.append(
            (
                "plugins.bind",
                f"at least one bind plugin is needed for profile with scheduler name {spec.scheduler_name!r}",
            )
        )
    weights = _score_weights(plugins_cfg, instances, problems)
    for plugin in points["score"]:
        if weights.get(plugin.name, 0) == 0:
            problems.append(("plugins.score", f"score plugin {plugin.name!r} is not configured with weight"))
    if problems:
        raise ProfileError(problems)
    return BuiltProfile(instances, points, weights)


def _expand_multi_point(
    plugins_cfg: Plugins,
    field: str,
    camel: str,
    method: str,
    enabled: list[str],
    instances: Mapping[str, Plugin],
    problems: list[tuple[str, str]],
) -> list[str]:
    """Upstream ``expandMultiPointPlugins`` for one extension point."""
    plugin_set: PluginSet = getattr(plugins_cfg, field)
    disabled = {p.name for p in plugin_set.disabled}
    if "*" in disabled:
        return enabled
    overrides: list[str] = []
    multi: list[str] = []
    for i, ref in enumerate(plugins_cfg.multi_point.enabled):
        if not hasattr(instances[ref.name], method) or ref.name in disabled:
            continue
        if ref.name in enabled:
            if ref.name not in overrides:
                overrides.append(ref.name)
            continue
        if ref.name in multi:
            problems.append(
                (f"plugins.multiPoint.enabled[{i}].name", f"plugin {ref.name!r} already registered as {camel}")
            )
            continue
        multi.append(ref.name)
    ordered: list[str] = []
    for name in (*overrides, *multi, *enabled):
        if name not in ordered:
            ordered.append(name)
    return ordered


def _score_weights(
    plugins_cfg: Plugins, instances: Mapping[str, Plugin], problems: list[tuple[str, str]]
) -> dict[str, int]:
    """Upstream ``getScoreWeights``: a point's own weight wins over multiPoint's; 0 means 1."""
    weights: dict[str, int] = {}
    total = 0
    for ref in (*plugins_cfg.score.enabled, *plugins_cfg.multi_point.enabled):
        if not hasattr(instances[ref.name], "score") or ref.name in weights:
            continue
        weight = ref.weight or 1
        weights[ref.name] = weight
        if weight * MAX_NODE_SCORE > MAX_TOTAL_SCORE - total:
            problems.append(("plugins.score", "total score of Score plugins could overflow"))
            break
        total += weight * MAX_NODE_SCORE
    return weights
