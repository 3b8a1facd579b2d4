"""GitHub Actions workflow annotations for ``crd-scheduler validate -o github``.

One ``::error file=...,line=...,title=...::message`` line per problem, escaped as the runner's
workflow-command parser expects (``%``, CR and LF in the message; also ``:`` and ``,`` in
properties), so each problem shows on the pull request's file, at its line.

The line is found in the file itself (:func:`line_of`): the object the problem names (``Kind
namespace/name``) is looked up among the file's YAML documents by kind and name, and the
problem's field path (``spec.plugins.score.enabled[0].name``) is followed as far as the file
has it; the line of the deepest node reached is the annotation's. A file that cannot be read
again, or an object not found in it, gives an annotation without a line, as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import yaml

from scheduler_core.simulator import Problem

TITLE = "crd-scheduler validate"
_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _message(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _message(text).replace(":", "%3A").replace(",", "%2C")


def github(problem: Problem) -> str:
    message = ": ".join(part for part in (problem.what, problem.path, problem.reason) if part)
    line = line_of(problem)
    where = f",line={line}" if line is not None else ""
    return f"::error file={_property(problem.source)}{where},title={_property(TITLE)}::{_message(message)}"


def line_of(problem: Problem) -> int | None:
    """The 1-based line of ``problem`` in its file (see the module docstring), or None."""
    kind, _, key = problem.what.partition(" ")
    if not key or problem.source == "-":
        return None
    namespace, _, name = key.rpartition("/")
    try:
        documents = list(yaml.compose_all(Path(problem.source).read_text(encoding="utf-8"), Loader=yaml.SafeLoader))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return None
    found = [d for d in documents if isinstance(d, yaml.MappingNode) and _names(d, kind, name)]
    if not found:
        return None
    # Several of that kind and name (one per namespace): the one whose namespace matches, else the first.
    node: yaml.Node = next(
        (d for d in found if _scalar(_child(_child(d, "metadata"), "namespace")) == namespace), found[0]
    )
    line: int = node.start_mark.line
    for step in _steps(problem.path):
        if isinstance(step, str):
            key_node, value = _entry(node, step)
            if key_node is None:
                break
            line, node = key_node.start_mark.line, value or key_node  # the key's line: "args:"
        else:
            item = _item(node, step)
            if item is None:
                break
            line, node = item.start_mark.line, item
    return line + 1


def _names(document: yaml.MappingNode, kind: str, name: str) -> bool:
    return _scalar(_child(document, "kind")) == kind and _scalar(_child(_child(document, "metadata"), "name")) == name


def _steps(path: str) -> Iterator[str | int]:
    for match in _STEP.finditer(path):
        yield match.group(1) if match.group(1) is not None else int(match.group(2))


def _child(node: yaml.Node | None, key: str) -> yaml.Node | None:
    return _entry(node, key)[1]


def _entry(node: yaml.Node | None, key: str) -> tuple[yaml.Node | None, yaml.Node | None]:
    """The key's node and the value's node of ``key`` in a mapping node (None, None: not there)."""
    if not isinstance(node, yaml.MappingNode):
        return None, None
    return next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), (None, None))


def _item(node: yaml.Node, index: int) -> yaml.Node | None:
    if isinstance(node, yaml.SequenceNode) and 0 <= index < len(node.value):
        item: yaml.Node = node.value[index]
        return item
    return None


def _scalar(node: yaml.Node | None) -> str | None:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else None
