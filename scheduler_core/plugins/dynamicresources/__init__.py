"""DynamicResources plugin: ResourceClaims allocated from ResourceSlices (structured parameters)."""

from scheduler_core.plugins.dynamicresources.dynamic_resources import DynamicResources

__all__ = ["DynamicResources"]
