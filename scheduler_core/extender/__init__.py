"""HTTP scheduler extenders (upstream ``HTTPExtender``), called from profiles with ``spec.extenders``.

- :mod:`wire`: the JSON of ``k8s.io/kube-scheduler/extender/v1`` as Go reads and writes it;
- :mod:`client`: one extender, its calls awaited on the event loop;
- :mod:`build`: validation (upstream ``validateExtenders``) and building a profile's clients;
- :mod:`cycle`: the awaitable scheduling cycle used only by profiles that have extenders.
"""

from scheduler_core.extender.build import ExtenderConfigError, build_extenders, validate_extenders
from scheduler_core.extender.client import ExtenderError, HTTPExtender

__all__ = [
    "ExtenderConfigError",
    "ExtenderError",
    "HTTPExtender",
    "build_extenders",
    "validate_extenders",
]
