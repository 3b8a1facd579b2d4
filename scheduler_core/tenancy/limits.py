"""Bounds on free-form args: depth, size, counts.

The args of an out-of-tree plugin have no schema the API server could check, so they are
free-form (``x-kubernetes-preserve-unknown-fields``) in the CRDs, with ``maxProperties`` at
the top; everything else about them is unbounded tenant input. They are bounded here, before
any plugin sees them: a PluginConfig or a profile whose args break a limit is ``Valid=False``
naming the limit. A body too deep to decode at all never reaches this check: the operator's
tolerant decoder (``scheduler_operator.io.decoding``) replaces the too-deep part, which is then
deeper than :attr:`ArgsLimits.max_depth` here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ArgsLimits:
    max_depth: int = 16  # nesting of objects and lists below ``args``
    max_bytes: int = 32 * 1024  # compact JSON
    max_items: int = 256  # entries of any one object or list
    max_string: int = 4096


ARGS_LIMITS = ArgsLimits()


def check_args_bounds(args: Any, path: str, limits: ArgsLimits = ARGS_LIMITS) -> list[tuple[str, str]]:
    """Problems ``(field, reason)`` of ``args`` against ``limits``; iterative, never recursing."""
    stack: list[tuple[Any, str, int]] = [(args, path, 0)]
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth > limits.max_depth:
                return [(where, f"nested deeper than {limits.max_depth} levels")]
            if len(value) > limits.max_items:
                return [(where, f"has {len(value)} entries, more than {limits.max_items}")]
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, child in items:
                sub = f"{where}.{key}" if isinstance(value, dict) else f"{where}[{key}]"
                stack.append((child, sub, depth + 1))
        elif isinstance(value, str) and len(value) > limits.max_string:
            return [(where, f"string longer than {limits.max_string} characters")]
    size = len(json.dumps(args, separators=(",", ":")))
    if size > limits.max_bytes:
        return [(path, f"{size} bytes of JSON, more than {limits.max_bytes}")]
    return []
