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

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from scheduler_core.framework import validation as v
from scheduler_core.plugins.podtopologyspread.common import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY

SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class TopologySpreadConstraint(_Model):
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


class PodTopologySpreadArgs(_Model):
    default_constraints: list[TopologySpreadConstraint] = Field(default_factory=list)
    defaulting_type: str = SYSTEM_DEFAULTING

    @field_validator("defaulting_type", mode="before")
    @classmethod
    def _default_type(cls, value: Any) -> Any:
        return SYSTEM_DEFAULTING if value in ("", None) else value

    @field_validator("default_constraints", mode="before")
    @classmethod
    def _null_list(cls, value: Any) -> Any:
        return [] if value is None else value

    @model_validator(mode="after")
    def _validate(self) -> PodTopologySpreadArgs:
        errors = validate(self)
        if errors:
            raise ValueError(v.aggregate(errors))
        return self


def _json(value: str) -> str:
    """``json.Marshal`` of a named string type, as ``field.Error`` prints it."""
    text = json.dumps(value, ensure_ascii=False)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028")):
        text = text.replace(raw, escaped)
    return text.replace("\u2029", "\\u2029")


def validate(args: PodTopologySpreadArgs) -> list[str]:
    """``ValidatePodTopologySpreadArgs``: the ``field.Error`` messages, in upstream's order."""
    errors: list[str] = []
    kind = args.defaulting_type
    if kind not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        detail = f'supported values: "{SYSTEM_DEFAULTING}", "{LIST_DEFAULTING}"'
        errors.append(f"defaultingType: Unsupported value: {_json(kind)}: {detail}")
    elif kind == SYSTEM_DEFAULTING and args.default_constraints:
        errors.append(f"defaultingType: Invalid value: {_json(kind)}: when .defaultConstraints are not empty")
    for i, c in enumerate(args.default_constraints):
        path = f"defaultConstraints[{i}]"
        if c.max_skew <= 0:
            errors.append(f"{path}.maxSkew: Invalid value: {c.max_skew}: not in valid range (0, inf)")
        if not c.topology_key:
            errors.append(f"{path}.topologyKey: Required value: can not be empty")
        else:
            # metav1validation.ValidateLabelName: one error per message.
            errors.extend(
                v.invalid(f"{path}.topologyKey", v.go_quote(c.topology_key), msg)
                for msg in v.label_key_errors(c.topology_key)
            )
        if not c.when_unsatisfiable:
            errors.append(f"{path}.whenUnsatisfiable: Required value: can not be empty")
        elif c.when_unsatisfiable not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            detail = f'supported values: "{DO_NOT_SCHEDULE}", "{SCHEDULE_ANYWAY}"'
            errors.append(f"{path}.whenUnsatisfiable: Unsupported value: {_json(c.when_unsatisfiable)}: {detail}")
        if c.label_selector is not None:
            errors.append(
                f"{path}.labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod"
            )
        for other in args.default_constraints[:i]:
            if (other.topology_key, other.when_unsatisfiable) == (c.topology_key, c.when_unsatisfiable):
                value = v.go_quote(f"{{{c.topology_key}, {c.when_unsatisfiable}}}")
                errors.append(f"{path}: Duplicate value: {value}")
                break
    return errors
