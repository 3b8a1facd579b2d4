"""NodeUnschedulable plugin."""

from scheduler_core.plugins.nodeunschedulable.node_unschedulable import NodeUnschedulable

__all__ = ["NodeUnschedulable"]
