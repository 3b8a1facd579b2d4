"""Args of DefaultPreemption.

Field names are upstream's v1 YAML (``k8s.io/kube-scheduler/config/v1`` ``DefaultPreemptionArgs``);
defaults are ``pkg/scheduler/apis/config/v1/defaults.go`` (``SetDefaults_DefaultPreemptionArgs``:
10 % and 100 nodes, a null field taking its default as the v1 pointer fields do); validation and
its messages are ``ValidateDefaultPreemptionArgs`` in
``pkg/scheduler/apis/config/validation/validation_pluginargs.go``, rendered as apimachinery renders
a ``field.ErrorList`` aggregate (``<field>: Invalid value: <value>: <detail>``, several errors as
``[e1, e2]``; the factory passes a nil root path, so paths start at the args' own fields).
"""

from __future__ import annotations

from scheduler_core.framework import field
from scheduler_core.framework.args import PluginArgs

DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE = 100

PERCENTAGE_FIELD = "minCandidateNodesPercentage"
ABSOLUTE_FIELD = "minCandidateNodesAbsolute"


def args_errors(percentage: int, absolute: int) -> field.ErrorList:
    """Upstream ``ValidateDefaultPreemptionArgs``, in its order."""
    errors: field.ErrorList = []
    if percentage < 0 or percentage > 100:
        errors.append(field.invalid(PERCENTAGE_FIELD, percentage, "not in valid range [0, 100]"))
    if absolute < 0:
        errors.append(field.invalid(ABSOLUTE_FIELD, absolute, "not in valid range [0, inf)"))
    if percentage == 0 and absolute == 0:
        errors.append(
            field.invalid(PERCENTAGE_FIELD, percentage, "cannot be zero at the same time as minCandidateNodesAbsolute")
        )
        errors.append(
            field.invalid(ABSOLUTE_FIELD, absolute, "cannot be zero at the same time as minCandidateNodesPercentage")
        )
    return errors


class DefaultPreemptionArgs(PluginArgs):
    """How many nodes a preemption dry-runs at least: a percentage of the candidate nodes, and an
    absolute floor (the larger of the two, never more than the candidate nodes)."""

    NULL_IS_DEFAULT = True

    min_candidate_nodes_percentage: int = DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE
    min_candidate_nodes_absolute: int = DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE

    def validation_errors(self) -> field.ErrorList:
        return args_errors(self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute)
