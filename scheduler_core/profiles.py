"""Profiles: which Framework schedules which pod, and how profiles are (re)built.

Resolution (DESIGN.md): a pod in namespace N with schedulerName S is scheduled by the
profile in N whose schedulerName is S, else by the one in the home namespace (cluster-wide),
else it is not ours. A profile outside the home namespace only ever sees pods of its own
namespace. The QueueSort plugin is one per scheduler, as upstream: every profile must use
the same one.

A change is validated by building a new Framework first; only a successful build replaces
the serving one, between scheduling cycles. A failed build raises ``ProfileError`` and
leaves the last good framework serving.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from scheduler_core.config import PluginConfigEntry, PluginConfigSpec, PluginSet, SchedulerProfileSpec
from scheduler_core.explanation import ANNOTATE
from scheduler_core.framework import PodInfo
from scheduler_core.runtime.build import ProfileError, build_profile
from scheduler_core.runtime.framework import Framework
from scheduler_core.runtime.handle import FrameworkHandle


@dataclass(frozen=True, slots=True)
class ProfileKey:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def apply_plugin_configs(
    spec: SchedulerProfileSpec,
    profile_labels: Mapping[str, str],
    plugin_configs: list[PluginConfigSpec],
) -> SchedulerProfileSpec:
    """Args from the namespace's PluginConfigs (selected by labels) fill in args the
    profile does not set itself; the profile's own pluginConfig wins."""
    own = {entry.name for entry in spec.plugin_config}
    extra = []
    for config in plugin_configs:
        selector = config.profile_selector
        if selector and any(profile_labels.get(k) != v for k, v in selector.match_labels.items()):
            continue
        if config.plugin in own:
            continue
        own.add(config.plugin)
        extra.append({"name": config.plugin, "args": config.args})
    if not extra:
        return spec
    merged = spec.model_copy(deep=True)
    merged.plugin_config.extend(PluginConfigEntry.model_validate(e) for e in extra)
    return merged


class ProfileSet:
    def __init__(
        self,
        *,
        home_namespace: str,
        registry: Mapping[str, object],
        default_multi_point: PluginSet,
        make_handle: Callable[[ProfileKey], FrameworkHandle],
        batch: bool = True,
    ) -> None:
        self.home_namespace = home_namespace
        self._registry = registry
        self._default_multi_point = default_multi_point
        self._make_handle = make_handle
        self._batch = batch
        self._by_key: dict[ProfileKey, Framework] = {}
        # (namespace, schedulerName) -> key, for resolution
        self._by_scheduler: dict[tuple[str, str], ProfileKey] = {}

    def build(self, key: ProfileKey, spec: SchedulerProfileSpec) -> Framework:
        """Build (validate) a framework for ``spec`` without installing it."""
        handle = self._make_handle(key)
        built = build_profile(spec, self._registry, handle, self._default_multi_point)
        fwk = Framework(
            profile_name=str(key),
            scheduler_name=spec.scheduler_name,
            percentage_of_nodes_to_score=spec.percentage_of_nodes_to_score,
            built=built,
            handle=handle,
            batch=self._batch,
            annotate=spec.explain == ANNOTATE,
        )
        self._check_queue_sort(key, fwk)
        return fwk

    def _check_queue_sort(self, key: ProfileKey, fwk: Framework) -> None:
        for other_key, other in self._by_key.items():
            if other_key == key:
                continue
            if other.queue_sort_plugin.name != fwk.queue_sort_plugin.name:
                raise ProfileError(
                    [
                        (
                            "plugins.queueSort",
                            f"queue sort plugin {fwk.queue_sort_plugin.name!r} differs from "
                            f"{other.queue_sort_plugin.name!r} used by profile {other_key}: "
                            "one QueueSort per scheduler",
                        )
                    ]
                )
            break

    def install(self, key: ProfileKey, fwk: Framework) -> Framework | None:
        """Serve ``fwk`` for ``key``; returns the framework it replaces, if any."""
        scheduler_key = (key.namespace, fwk.scheduler_name)
        owner = self._by_scheduler.get(scheduler_key)
        if owner is not None and owner != key:
            raise ProfileError(
                [
                    (
                        "schedulerName",
                        f"schedulerName {fwk.scheduler_name!r} is already served by profile {owner} "
                        f"in namespace {key.namespace!r}",
                    )
                ]
            )
        old = self._by_key.get(key)
        if old is not None and old.scheduler_name != fwk.scheduler_name:
            self._by_scheduler.pop((key.namespace, old.scheduler_name), None)
        self._by_key[key] = fwk
        self._by_scheduler[scheduler_key] = key
        return old

    def remove(self, key: ProfileKey) -> Framework | None:
        old = self._by_key.pop(key, None)
        if old is not None:
            self._by_scheduler.pop((key.namespace, old.scheduler_name), None)
        return old

    def get(self, key: ProfileKey) -> Framework | None:
        return self._by_key.get(key)

    def for_pod(self, pod: PodInfo) -> Framework | None:
        key = self._by_scheduler.get((pod.namespace, pod.scheduler_name))
        if key is None:
            key = self._by_scheduler.get((self.home_namespace, pod.scheduler_name))
        return self._by_key.get(key) if key is not None else None

    def handles(self, pod: PodInfo) -> bool:
        return self.for_pod(pod) is not None

    def __iter__(self) -> Iterator[tuple[ProfileKey, Framework]]:
        return iter(list(self._by_key.items()))

    def __len__(self) -> int:
        return len(self._by_key)
