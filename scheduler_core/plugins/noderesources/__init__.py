"""The NodeResources plugins: NodeResourcesFit (filter and score) and
NodeResourcesBalancedAllocation (score), over the one Resource type of the framework.

Upstream: ``pkg/scheduler/framework/plugins/noderesources/`` (k8s.io/kubernetes v1.36.3).
"""

from scheduler_core.plugins.noderesources.args import (
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from scheduler_core.plugins.noderesources.balanced_allocation import NodeResourcesBalancedAllocation
from scheduler_core.plugins.noderesources.fit import NodeResourcesFit

__all__ = [
    "NodeResourcesBalancedAllocation",
    "NodeResourcesBalancedAllocationArgs",
    "NodeResourcesFit",
    "NodeResourcesFitArgs",
    "RequestedToCapacityRatioParam",
    "ResourceSpec",
    "ScoringStrategy",
    "UtilizationShapePoint",
]
