"""NodeName plugin."""

from scheduler_core.plugins.nodename.node_name import NodeName

__all__ = ["NodeName"]
