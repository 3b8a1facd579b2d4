"""Profile and plugin-config models: the single source of the CRD schemas."""

from scheduler_core.config.models import (
    LabelSelector,
    PluginConfigEntry,
    PluginConfigSpec,
    PluginRef,
    Plugins,
    PluginSet,
    SchedulerProfileSpec,
)

__all__ = [
    "LabelSelector",
    "PluginConfigEntry",
    "PluginConfigSpec",
    "PluginRef",
    "PluginSet",
    "Plugins",
    "SchedulerProfileSpec",
]
