"""Args validation for the NodeResources plugins, with upstream's exact messages.

Upstream: ``pkg/scheduler/apis/config/validation/validation_pluginargs.go``
(``ValidateNodeResourcesFitArgs``, ``ValidateNodeResourcesBalancedAllocationArgs``,
``validateResources``, ``validateFunctionShape``), rendered as apimachinery renders a
``field.ErrorList`` aggregate (``util/validation/field/errors.go``, ``util/errors``):
``<path>: Invalid value: <value>: <detail>``, several errors as ``[e1, e2]``. The plugin
factories pass a nil root path, so paths start at the args' own fields.

Label-key checks are :func:`scheduler_core.framework.content.qualified_name` (``IsLabelKey``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from scheduler_core.framework import content, field

if TYPE_CHECKING:
    from scheduler_core.plugins.noderesources.args import (
        NodeResourcesBalancedAllocationArgs,
        NodeResourcesFitArgs,
        ResourceSpec,
        UtilizationShapePoint,
    )

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
SUPPORTED_SCORING_STRATEGY_TYPES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)  # sorted

MAX_CUSTOM_PRIORITY_SCORE = 10  # pkg/scheduler/apis/config/types.go
_MIN_UTILIZATION, _MAX_UTILIZATION = 0, 100


# -- the validators ---------------------------------------------------------------------
def _function_shape_errors(shape: Sequence[UtilizationShapePoint], path: str) -> field.ErrorList:
    if not shape:
        return [field.required(path, "at least one point must be specified")]
    errs: field.ErrorList = []
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            errs.append(
                field.invalid(
                    f"{path}[{i}].utilization", shape[i].utilization, "values must be sorted in increasing order"
                )
            )
            break
    for i, point in enumerate(shape):
        if not _MIN_UTILIZATION <= point.utilization <= _MAX_UTILIZATION:
            detail = f"not in valid range [{_MIN_UTILIZATION}, {_MAX_UTILIZATION}]"
            errs.append(field.invalid(f"{path}[{i}].utilization", point.utilization, detail))
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            errs.append(
                field.invalid(f"{path}[{i}].score", point.score, f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")
            )
    return errs


def _resources_errors(resources: Sequence[ResourceSpec], path: str) -> field.ErrorList:
    return [
        field.invalid(f"{path}[{i}].weight", r.weight, f"resource weight of {r.name} not in valid range (0, 100]")
        for i, r in enumerate(resources)
        if r.weight <= 0 or r.weight > 100
    ]


def fit_args_errors(args: NodeResourcesFitArgs) -> field.ErrorList:
    """Upstream ``ValidateNodeResourcesFitArgs(nil, args)``, on defaulted args."""
    errs: field.ErrorList = []
    for i, res in enumerate(args.ignored_resources):
        errs.extend(field.invalid(f"ignoredResources[{i}]", res, m) for m in content.qualified_name(res))
    for i, group in enumerate(args.ignored_resource_groups):
        path = f"ignoredResourceGroups[{i}]"
        if "/" in group:
            errs.append(field.invalid(path, group, "resource group name can't contain '/'"))
        errs.extend(field.invalid(path, group, m) for m in content.qualified_name(group))
    strategy = args.scoring_strategy
    if strategy.type not in SUPPORTED_SCORING_STRATEGY_TYPES:
        errs.append(field.not_supported("scoringStrategy.type", strategy.type, SUPPORTED_SCORING_STRATEGY_TYPES))
    errs.extend(_resources_errors(strategy.resources, "scoringStrategy.resources"))
    ratio_path = "scoringStrategy.requestedToCapacityRatio"
    if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        if strategy.requested_to_capacity_ratio is None:
            errs.append(field.required(ratio_path, "must be specified when type is RequestedToCapacityRatio"))
        else:
            errs.extend(_function_shape_errors(strategy.requested_to_capacity_ratio.shape, ratio_path + ".shape"))
    elif strategy.requested_to_capacity_ratio is not None:
        errs.append(field.forbidden(ratio_path, "must be nil when type is not RequestedToCapacityRatio"))
    return errs


def balanced_allocation_args_errors(args: NodeResourcesBalancedAllocationArgs) -> field.ErrorList:
    """Upstream ``ValidateNodeResourcesBalancedAllocationArgs(nil, args)``."""
    errs: field.ErrorList = []
    seen: set[str] = set()
    for i, resource in enumerate(args.resources):
        if resource.name in seen:
            errs.append(field.duplicate(f"resources[{i}].name", resource.name))
        else:
            seen.add(resource.name)
        if resource.weight != 1:
            errs.append(field.invalid(f"resources[{i}].weight", resource.weight, "must be 1"))
    return errs
