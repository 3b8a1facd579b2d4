"""Profile and plugin-config models: the single source of the CRD schemas."""

from scheduler_core.config.models import (
    AllowedArgs,
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
    TenantPolicy,
)

__all__ = [
    "AllowedArgs",
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
    "TenantPolicy",
]
