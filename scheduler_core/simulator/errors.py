"""Input problems: what is wrong, where, and in which object.

Bad input never ends in a traceback: every problem found while reading manifests or building
profiles from them names the file, the object (``Kind namespace/name``), the field path and the
reason, as ``kubectl apply`` would, e.g. ``x.yaml: Pod default/web:
spec.containers[0].resources.requests.cpu: quantities must match ...``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scheduler_core.framework.field import TRUNCATED

MAX_REASON_CHARS = 2048


@dataclass(frozen=True, slots=True)
class Problem:
    source: str  # the file ("-" for standard input)
    what: str  # the object ("Pod default/web"), or "" when the file itself is bad
    path: str  # the field path inside the object, or ""
    reason: str

    def __str__(self) -> str:
        reason = self.reason
        if len(reason) > MAX_REASON_CHARS:  # a last bound: no message grows with the input
            reason = reason[:MAX_REASON_CHARS] + TRUNCATED
        return ": ".join(part for part in (self.source, self.what, self.path, reason) if part)


class InputError(ValueError):
    """Manifests that cannot be simulated; ``problems`` says why, one line each."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))
