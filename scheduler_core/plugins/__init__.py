"""In-tree plugins: one folder per plugin, each importing only ``scheduler_core.framework``."""
