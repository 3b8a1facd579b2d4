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

from scheduler_core.framework.args import PluginArgs

DEFAULT_BIND_TIMEOUT_SECONDS = 600


class UtilizationShapePoint(PluginArgs):
    utilization: int = 0
    score: int = 0


class VolumeBindingArgs(PluginArgs):
    NULL_IS_DEFAULT = True

    bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS
    shape: list[UtilizationShapePoint] | None = None

    def validation_errors(self) -> list[str]:
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
        return errors
