"""NodePorts plugin."""

from scheduler_core.plugins.nodeports.node_ports import NodePorts

__all__ = ["NodePorts"]
