"""NodeVolumeLimits plugin."""

from scheduler_core.plugins.nodevolumelimits.csi import NodeVolumeLimits

__all__ = ["NodeVolumeLimits"]
