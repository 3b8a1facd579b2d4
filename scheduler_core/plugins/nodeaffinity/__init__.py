"""NodeAffinity plugin; :mod:`.selector` holds the node-selector matching it shares."""

from scheduler_core.plugins.nodeaffinity.node_affinity import NodeAffinity, NodeAffinityArgs

__all__ = ["NodeAffinity", "NodeAffinityArgs"]
