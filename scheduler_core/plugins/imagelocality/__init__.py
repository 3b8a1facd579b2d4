"""ImageLocality plugin."""

from scheduler_core.plugins.imagelocality.image_locality import ImageLocality

__all__ = ["ImageLocality"]
