"""Args of NodeResourcesFit and NodeResourcesBalancedAllocation.

Field names and shapes are upstream's v1 YAML (``k8s.io/kube-scheduler/config/v1``
``NodeResourcesFitArgs``, ``ScoringStrategy``, ``ResourceSpec``, ``UtilizationShapePoint``);
defaults are ``pkg/scheduler/apis/config/v1/defaults.go`` (no strategy: LeastAllocated over
cpu and memory; no resources: cpu and memory; weight 0: 1), applied before validation as the
v1 decoder does; validation messages are upstream's (see ``validation.py``).
"""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from scheduler_core.framework import field
from scheduler_core.framework.args import PluginArgs
from scheduler_core.plugins.noderesources import validation
from scheduler_core.plugins.noderesources.validation import LEAST_ALLOCATED


class ResourceSpec(PluginArgs):
    """One resource considered when scoring, with its weight (defaulted from 0 to 1)."""

    name: str
    weight: int = 0

    @model_validator(mode="after")
    def _default_weight(self) -> ResourceSpec:
        if self.weight == 0:
            self.weight = 1
        return self


def default_resources() -> list[ResourceSpec]:
    return [ResourceSpec(name="cpu", weight=1), ResourceSpec(name="memory", weight=1)]


class UtilizationShapePoint(PluginArgs):
    """A point of the RequestedToCapacityRatio shape: utilization 0..100, score 0..10."""

    utilization: int = 0
    score: int = 0


class RequestedToCapacityRatioParam(PluginArgs):
    shape: list[UtilizationShapePoint] = Field(default_factory=list)


class ScoringStrategy(PluginArgs):
    """How NodeResourcesFit scores: LeastAllocated, MostAllocated or RequestedToCapacityRatio."""

    type: str = ""
    resources: list[ResourceSpec] = Field(default_factory=list)
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None

    @model_validator(mode="after")
    def _default_resources(self) -> ScoringStrategy:
        if not self.resources:
            self.resources = default_resources()
        return self


class NodeResourcesFitArgs(PluginArgs):
    NULL_IS_DEFAULT = True

    ignored_resources: list[str] = Field(default_factory=list)
    ignored_resource_groups: list[str] = Field(default_factory=list)
    scoring_strategy: ScoringStrategy = Field(default_factory=lambda: ScoringStrategy(type=LEAST_ALLOCATED))

    def validation_errors(self) -> field.ErrorList:
        return validation.fit_args_errors(self)


class NodeResourcesBalancedAllocationArgs(PluginArgs):
    NULL_IS_DEFAULT = True

    resources: list[ResourceSpec] = Field(default_factory=default_resources)

    @field_validator("resources")
    @classmethod
    def _default_resources(cls, value: list[ResourceSpec]) -> list[ResourceSpec]:
        return value or default_resources()

    def validation_errors(self) -> field.ErrorList:
        return validation.balanced_allocation_args_errors(self)
