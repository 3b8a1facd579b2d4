"""SchedulingGates plugin."""

from scheduler_core.plugins.schedulinggates.scheduling_gates import SchedulingGates

__all__ = ["SchedulingGates"]
