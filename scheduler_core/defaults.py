"""The built-in default profile (schedulerName ``crd-scheduler``, ``names.DEFAULT_SCHEDULER_NAME``).

It is upstream kube-scheduler's default plugin list and weights, restricted to the plugins
this build has (``scheduler_core.plugins.registry.UPSTREAM_DEFAULT_PLUGINS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler_core.config import PluginRef, PluginSet, SchedulerProfileSpec
from scheduler_core.names import DEFAULT_SCHEDULER_NAME
from scheduler_core.plugins.registry import UPSTREAM_DEFAULT_PLUGINS

DEFAULT_PROFILE_NAME = "default"


def default_plugins(registry: Mapping[str, Any]) -> PluginSet:
    return PluginSet(
        enabled=[PluginRef(name=name, weight=weight) for name, weight in UPSTREAM_DEFAULT_PLUGINS if name in registry]
    )


def default_profile_spec() -> SchedulerProfileSpec:
    return SchedulerProfileSpec(scheduler_name=DEFAULT_SCHEDULER_NAME)
