"""NodeDeclaredFeatures plugin."""

from scheduler_core.plugins.nodedeclaredfeatures.node_declared_features import NodeDeclaredFeatures

__all__ = ["NodeDeclaredFeatures"]
