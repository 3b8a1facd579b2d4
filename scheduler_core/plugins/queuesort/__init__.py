"""PrioritySort, the default QueueSort plugin."""

from scheduler_core.plugins.queuesort.priority_sort import PrioritySort

__all__ = ["PrioritySort"]
