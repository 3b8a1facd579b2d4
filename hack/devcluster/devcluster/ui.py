"""Messages for humans go to stderr: stdout carries only what callers parse (a path, JSON)."""

from __future__ import annotations

import contextlib
import fcntl
import sys
from collections.abc import Iterator
from pathlib import Path


def say(message: str) -> None:
    print(f"dev-cluster: {message}", file=sys.stderr, flush=True)


def tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no {path})"
    return "\n".join(text.splitlines()[-lines:])


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Serialise concurrent invocations (e.g. two pytest sessions calling ``up``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
