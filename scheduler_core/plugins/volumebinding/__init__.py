"""VolumeBinding plugin, and the storage helpers the volume plugins share."""

from scheduler_core.plugins.volumebinding.args import VolumeBindingArgs
from scheduler_core.plugins.volumebinding.volume_binding import VolumeBinding

__all__ = ["VolumeBinding", "VolumeBindingArgs"]
