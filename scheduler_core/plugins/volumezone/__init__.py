"""VolumeZone plugin."""

from scheduler_core.plugins.volumezone.volume_zone import VolumeZone

__all__ = ["VolumeZone"]
