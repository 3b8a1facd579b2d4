"""What every CLI verb prints: the report on stdout, warnings and errors on stderr."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from scheduler_core.simulator import InputError

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def emit(text: str) -> None:
    """Print the report; a reader that left (``| head``) is not an error."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def warn(warnings: Sequence[str]) -> None:
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def errors(error: InputError) -> int:
    """One ``error: ...`` line per problem; the bad-input exit code."""
    for problem in error.problems:
        print(f"error: {problem}", file=sys.stderr)
    return EXIT_BAD_INPUT
