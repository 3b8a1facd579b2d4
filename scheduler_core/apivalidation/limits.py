"""Hostile-input limits: a manifest is measured before it is built into Python objects.

Every verb that reads manifests (``simulate``, ``validate``) parses text through
:func:`load_documents`, which refuses, before anything is constructed:

* a file over :data:`MAX_DOCUMENT_BYTES` (the API server refuses requests over 3 MiB, etcd
  objects over 1.5 MiB; a file holds many objects, so the bound is larger);
* nesting deeper than :data:`MAX_DEPTH` (Go's ``encoding/json`` stops at 10,000; no
  Kubernetes object comes near 100, and Python's parsers recurse);
* more than :data:`MAX_NODES` values in a file, counting every YAML alias as the copy it
  stands for: the size is summed from the event stream, so an alias bomb (``&a [*b, *b, ...]``
  nine levels deep) is refused while it is still a few hundred bytes, never expanded;
* a number literal longer than :data:`MAX_NUMBER_CHARS` characters (Kubernetes numbers are
  int64 or float64; Python would otherwise parse, or refuse with an exception, a 5,000-digit
  integer).

Together these keep the memory of reading any input far under 512 MiB (tested in a
subprocess with ``RLIMIT_AS``). Messages name the file, the line and the limit, never the
value. See ``docs/validation.md``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

MAX_DOCUMENT_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 100
MAX_NODES = 500_000
MAX_NUMBER_CHARS = 64
MAX_TOTAL_BYTES = 32 * 1024 * 1024  # all files of one command
MAX_TOTAL_NODES = 1_000_000


@dataclass(slots=True)
class Budget:
    """What is left for the files still to read in one command (a hundred 8 MiB files would
    each pass the per-file limits)."""

    bytes: int = MAX_TOTAL_BYTES
    nodes: int = MAX_TOTAL_NODES


class LimitError(ValueError):
    """A file that breaks a limit or does not parse: the message, without the file name."""


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]  # libyaml when built with it
    """Safe YAML where timestamps stay strings, as they are in the Kubernetes API."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_NUMBER_LIKE = re.compile(r"^[-+]?(\.?[0-9]|0[xob])")
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},]|[-0-9][-+0-9.eE]*')


@dataclass(slots=True)
class _Frame:
    anchor: str | None
    size: int = 1


def load_documents(text: str, *, json_only: bool = False, budget: Budget | None = None) -> Iterator[object]:
    """The documents of a YAML (or JSON, a subset of YAML) text, checked against the limits.

    ``json_only`` parses with :mod:`json` (a ``.json`` file) after the same checks; a
    ``budget`` shared by the files of one command bounds them together."""
    if len(text) > MAX_DOCUMENT_BYTES:
        raise LimitError(f"file is larger than {MAX_DOCUMENT_BYTES} bytes")
    budget = budget if budget is not None else Budget()
    budget.bytes -= len(text)
    if budget.bytes < 0:
        raise LimitError(f"the files together are larger than {MAX_TOTAL_BYTES} bytes")
    nodes = _measure_json(text) if json_only else _measure_yaml(text)
    budget.nodes -= nodes
    if budget.nodes < 0:
        raise LimitError(f"the files together hold more than {MAX_TOTAL_NODES} values")
    if json_only:
        try:
            yield json.loads(text)
        except (json.JSONDecodeError, RecursionError, ValueError) as exc:
            if isinstance(exc, json.JSONDecodeError):
                raise LimitError(f"line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
            raise LimitError("invalid JSON") from None
        return
    try:
        yield from yaml.load_all(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise LimitError(_yaml_message(exc)) from None
    except (ValueError, RecursionError, OverflowError) as exc:  # measured away; a last guard
        raise LimitError(f"invalid YAML: {type(exc).__name__}") from None


def _measure_json(text: str) -> int:
    depth = nodes = 0
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            nodes += 1
            if depth > MAX_DEPTH:
                raise LimitError(f"{_at(text, match.start())}nesting is deeper than {MAX_DEPTH} levels")
        elif token in "]}":
            depth -= 1
        elif token == ",":
            nodes += 1
        elif token[0] != '"' and len(token) > MAX_NUMBER_CHARS:
            raise LimitError(f"{_at(text, match.start())}number is longer than {MAX_NUMBER_CHARS} characters")
        if nodes > MAX_NODES:
            raise LimitError(f"more than {MAX_NODES} values in one file")
    return nodes


def _at(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    return f"line {line}: "


def _measure_yaml(text: str) -> int:
    """Depth, expanded size and number lengths from the event stream; nothing is built."""
    anchors: dict[str, int] = {}
    stack: list[_Frame] = []
    total = 0
    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                stack.append(_Frame(event.anchor))
                if len(stack) > MAX_DEPTH:
                    raise LimitError(f"{_line(event)}nesting is deeper than {MAX_DEPTH} levels")
                continue
            if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                frame = stack.pop()
                size = frame.size
                if frame.anchor:
                    anchors[frame.anchor] = size
            elif isinstance(event, yaml.ScalarEvent):
                if event.implicit[0] and len(event.value) > MAX_NUMBER_CHARS and _NUMBER_LIKE.match(event.value):
                    raise LimitError(f"{_line(event)}number is longer than {MAX_NUMBER_CHARS} characters")
                size = 1
                if event.anchor:
                    anchors[event.anchor] = 1
            elif isinstance(event, yaml.AliasEvent):
                size = anchors.get(event.anchor or "", 1)
            elif isinstance(event, yaml.DocumentStartEvent):
                anchors.clear()  # anchors do not cross documents
                continue
            else:
                continue
            if stack:
                stack[-1].size += size
            else:
                total += size
            if total > MAX_NODES or (stack and stack[-1].size > MAX_NODES):
                aliases = "YAML aliases count as the copies they make"
                raise LimitError(f"{_line(event)}more than {MAX_NODES} values in one file ({aliases})")
    except yaml.YAMLError as exc:
        raise LimitError(_yaml_message(exc)) from None
    return total


def _line(event: Any) -> str:
    mark = getattr(event, "start_mark", None)
    return f"line {mark.line + 1}: " if mark is not None else ""


def _yaml_message(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        problem = exc.problem or "invalid YAML"
        context = f" ({exc.context})" if exc.context else ""
        return f"line {mark.line + 1}, column {mark.column + 1}: {problem}{context}"
    return "invalid YAML"
