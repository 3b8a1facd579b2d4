"""DefaultBinder, the default Bind plugin."""

from scheduler_core.plugins.defaultbinder.default_binder import DefaultBinder

__all__ = ["DefaultBinder"]
