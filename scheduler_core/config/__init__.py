"""Profile and plugin-config models: the single source of the CRD schemas."""

from scheduler_core.config.models import (
    Extender,
    ExtenderManagedResource,
    ExtenderTLSConfig,
    LabelSelector,
    PluginConfigEntry,
    PluginConfigSpec,
    PluginRef,
    Plugins,
    PluginSet,
    SchedulerProfileSpec,
)

__all__ = [
    "Extender",
    "ExtenderManagedResource",
    "ExtenderTLSConfig",
    "LabelSelector",
    "PluginConfigEntry",
    "PluginConfigSpec",
    "PluginRef",
    "PluginSet",
    "Plugins",
    "SchedulerProfileSpec",
]
