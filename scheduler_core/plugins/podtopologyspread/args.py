"""PodTopologySpreadArgs, with upstream's defaults and validation messages.

Upstream (k8s.io/kubernetes v1.36.3): ``pkg/scheduler/apis/config/types_pluginargs.go``
(``PodTopologySpreadArgs``), ``v1/defaults.go`` (``SetDefaults_PodTopologySpreadArgs``: an
empty ``defaultingType`` becomes ``System``) and ``validation/validation_pluginargs.go``
(``ValidatePodTopologySpreadArgs``, called with a nil root path, so paths start at the args'
fields). Messages are ``field.Error`` strings, several joined as ``[e1, e2]``.

``defaultingType: System`` uses the system default constraints (hostname maxSkew 3, zone
maxSkew 5, both ScheduleAnyway); ``List`` uses ``defaultConstraints``, which must not have a
``labelSelector``: it is deduced per pod from the Services and controllers selecting it.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from scheduler_core.framework import content, field
from scheduler_core.framework.args import PluginArgs
from scheduler_core.plugins.podtopologyspread.common import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY

SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"


class TopologySpreadConstraint(PluginArgs):
    """A ``v1.TopologySpreadConstraint`` (only the fields a default constraint may use matter)."""

    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: dict[str, Any] | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] | None = None

    def as_manifest(self) -> dict[str, Any]:
        """The constraint as it appears in a pod spec (camelCase, unset fields left out)."""
        return self.model_dump(by_alias=True, exclude_none=True)


class PodTopologySpreadArgs(PluginArgs):
    NULL_IS_DEFAULT = True

    default_constraints: list[TopologySpreadConstraint] = Field(default_factory=list)
    defaulting_type: str = SYSTEM_DEFAULTING

    @field_validator("defaulting_type", mode="before")
    @classmethod
    def _default_type(cls, value: Any) -> Any:
        return SYSTEM_DEFAULTING if value == "" else value

    def validation_errors(self) -> field.ErrorList:
        return validate(self)


def validate(args: PodTopologySpreadArgs) -> field.ErrorList:
    """``ValidatePodTopologySpreadArgs``: the ``field.Error`` messages, in upstream's order.

    ``defaultingType`` and ``whenUnsatisfiable`` are named string types upstream, which
    ``ErrorBody`` prints as JSON (:func:`~scheduler_core.framework.field.go_json`)."""
    errors: field.ErrorList = []
    kind = args.defaulting_type
    if kind not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        errors.append(field.not_supported("defaultingType", field.go_json(kind), (SYSTEM_DEFAULTING, LIST_DEFAULTING)))
    elif kind == SYSTEM_DEFAULTING and args.default_constraints:
        errors.append(field.invalid("defaultingType", field.go_json(kind), "when .defaultConstraints are not empty"))
    for i, c in enumerate(args.default_constraints):
        path = field.index("defaultConstraints", i)
        if c.max_skew <= 0:
            errors.append(field.invalid(field.child(path, "maxSkew"), c.max_skew, "not in valid range (0, inf)"))
        if not c.topology_key:
            errors.append(field.required(field.child(path, "topologyKey"), "can not be empty"))
        else:
            # metav1validation.ValidateLabelName: one error per message.
            errors.extend(
                field.invalid(field.child(path, "topologyKey"), c.topology_key, msg)
                for msg in content.qualified_name(c.topology_key)
            )
        if not c.when_unsatisfiable:
            errors.append(field.required(field.child(path, "whenUnsatisfiable"), "can not be empty"))
        elif c.when_unsatisfiable not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            unsatisfiable = field.go_json(c.when_unsatisfiable)
            supported = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
            errors.append(field.not_supported(field.child(path, "whenUnsatisfiable"), unsatisfiable, supported))
        if c.label_selector is not None:
            detail = "constraint must not define a selector, as they deduced for each pod"
            errors.append(field.forbidden(field.child(path, "labelSelector"), detail))
        for other in args.default_constraints[:i]:
            if (other.topology_key, other.when_unsatisfiable) == (c.topology_key, c.when_unsatisfiable):
                errors.append(field.duplicate(path, f"{{{c.topology_key}, {c.when_unsatisfiable}}}"))
                break
    return errors
