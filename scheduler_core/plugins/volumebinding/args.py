"""VolumeBinding args: ``bindTimeoutSeconds`` and the (feature-gated) scoring ``shape``.

Upstream: ``VolumeBindingArgs`` (``k8s.io/kube-scheduler/config/v1``), defaults in
``pkg/scheduler/apis/config/v1/defaults.go`` (``bindTimeoutSeconds`` 600; ``shape`` defaulted
only when the StorageCapacityScoring gate is on) and validation in
``pkg/scheduler/apis/config/validation/validation_pluginargs.go``
(``ValidateVolumeBindingArgsWithOptions``), rendered as a ``field.ErrorList`` aggregate.

StorageCapacityScoring is alpha and off by default in v1.36, and crd-scheduler does not
implement it: a ``shape`` is refused with upstream's gate-off message, so a configuration
never means something here that it would not mean upstream.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator, model_validator
from pydantic.alias_generators import to_camel

DEFAULT_BIND_TIMEOUT_SECONDS = 600


class _Args(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class UtilizationShapePoint(_Args):
    utilization: int = 0
    score: int = 0


class VolumeBindingArgs(_Args):
    bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS
    shape: list[UtilizationShapePoint] | None = None

    @field_validator("bind_timeout_seconds", mode="before")
    @classmethod
    def _default_timeout(cls, value: Any) -> Any:
        return DEFAULT_BIND_TIMEOUT_SECONDS if value is None else value

    @model_validator(mode="after")
    def _validate(self) -> VolumeBindingArgs:
        errors = []
        if self.bind_timeout_seconds < 0:
            errors.append(
                f"bindTimeoutSeconds: Invalid value: {self.bind_timeout_seconds}: "
                "invalid BindTimeoutSeconds, should not be a negative value"
            )
        if self.shape is not None:
            # field.Invalid renders a struct slice as JSON of the internal (untagged) type.
            value = json.dumps(
                [{"Utilization": p.utilization, "Score": p.score} for p in self.shape], separators=(",", ":")
            )
            errors.append(
                f"shape: Invalid value: {value}: unexpected field `shape`, "
                "remove it or turn on the feature gate StorageCapacityScoring"
            )
        if errors:
            raise ValueError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
        return self
