"""One test kit: pods and nodes in tests are built with :mod:`tests.wrappers` only.

Upstream has one way to build a Pod or a Node in a test (``st.MakePod()`` / ``st.MakeNode()``,
``pkg/scheduler/testing/wrappers.go``); so do we. This test reads every ``.py`` under ``tests/``
with :mod:`ast` and refuses a module-level function or class, outside ``tests/wrappers.py``,
that is a local pod or node builder:

* it spells a pod or node by hand, anywhere in its body: a dict display with ``"kind": "Pod"``
  or ``"Node"`` and a ``"metadata"`` key; one with a ``"containers"`` key (a pod spec, a
  template's included); one with an ``"allocatable"`` or ``"capacity"`` dict naming ``cpu``,
  ``memory`` or ``pods`` with a quantity (a node's status; a DRA device's capacity maps them
  to dicts); or ``PodInfo({...})`` / ``NodeInfo({...})`` of a
  dict display with a ``"metadata"`` key; or
* its name says it makes pods or nodes and it returns what it made: the name's head word (the
  last word, or the one before the first of ``with``/``on``/``for``/``in``/``from``/``at``/
  ``of``/``and``) is ``pod(s)``/``node(s)`` (``mkpod``..., ``pod_info``, ``node_infos``), its
  body calls the kit or returns a dict display with ``"metadata"``, and its return annotation
  can hold a pod or node (a dict, Mapping, ``Any``, ``PodInfo``, ``NodeInfo``..., or none).

Not refused: ``test_*`` functions (a test may spell the object it is about); pytest fixtures and
hypothesis strategies under the second rule (a strategy draws, then builds with the kit); helpers
that look things up (``node_of``) or act on a cluster and return names or nothing
(``create_nodes``). ``bench/`` is not read: its workloads are upstream scheduler_perf's
templates and the parity harness's generated scenarios, the benchmark's inputs, which must not
move when the test kit's defaults do.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

TESTS = Path(__file__).resolve().parents[1]
KIT = TESTS / "wrappers.py"

# The kit's builders, as a call names them (``make_pod()``, ``wrappers.node(...)``).
KIT_BUILDERS = frozenset(
    {"make_pod", "make_node", "pod", "node", "pod_info", "node_info", "pods_on", "make_node_info", "node_infos"}
)
HEADS = re.compile(r"(mk|make|build|new)?(pod|node)s?")
LINKS = frozenset({"with", "on", "for", "in", "from", "at", "of", "and"})
# Names in a return annotation that can hold a pod or node; inside Callable[...] they do not count.
OBJECT_TYPES = frozenset(
    {"dict", "Dict", "Mapping", "MutableMapping", "Any", "Json", "Obj", "Body", "Manifest",
     "PodInfo", "NodeInfo", "QueuedPodInfo", "PodWrapper", "NodeWrapper"}
)  # fmt: skip
NODE_RESOURCES = frozenset({"cpu", "memory", "pods"})
NAMED = "is named for pods/nodes and returns what it builds"


class Builder(NamedTuple):
    path: str
    line: int
    name: str
    why: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.name} {self.why}"


def _keys(node: ast.Dict) -> dict[object, ast.expr]:
    return {k.value: v for k, v in zip(node.keys, node.values, strict=True) if isinstance(k, ast.Constant)}


def _spelled(node: ast.AST) -> str | None:
    """What pod or node ``node`` spells by hand, if it does."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("PodInfo", "NodeInfo")
        and node.args
        and isinstance(node.args[0], ast.Dict)
        and "metadata" in _keys(node.args[0])
    ):
        return f"a {node.func.id} of a dict"
    if not isinstance(node, ast.Dict):
        return None
    keys = _keys(node)
    kind = keys.get("kind")
    if isinstance(kind, ast.Constant) and kind.value in ("Pod", "Node") and "metadata" in keys:
        return f"a {kind.value} manifest"
    if "containers" in keys:
        return "a pod spec"
    for field in ("allocatable", "capacity"):
        value = keys.get(field)
        if not isinstance(value, ast.Dict):
            continue
        entries = _keys(value)
        # A node's resources map to quantities; a DRA device's capacity maps each to a dict.
        if any(not isinstance(entries[name], ast.Dict) for name in NODE_RESOURCES & set(entries)):
            return "a node's status"
    return None


def _head(name: str) -> str:
    words = [w for w in name.lower().split("_") if w]
    for i, word in enumerate(words):
        if word in LINKS and i > 0:
            return words[i - 1]
    if len(words) > 1 and words[-1] in ("info", "infos"):
        return words[-2]
    return words[-1] if words else ""


def _calls_kit(fn: ast.AST, local: set[str]) -> bool:
    """Whether ``fn`` calls the kit, a builder ``local`` to its module, or builds a PodInfo/NodeInfo."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in KIT_BUILDERS | local | {"PodInfo", "NodeInfo"}:
                return True
            if (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id in ("wrappers", "builders")
                and func.attr in KIT_BUILDERS
            ):
                return True
    return False


def _returns_object(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(
        isinstance(node, ast.Return) and isinstance(node.value, ast.Dict) and "metadata" in _keys(node.value)
        for node in ast.walk(fn)
    )


def _may_return_object(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return True

    def names(node: ast.AST) -> Iterator[str]:
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "Callable":
            return
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Attribute):
            yield node.attr
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield from names(ast.parse(node.value, mode="eval").body)
        for child in ast.iter_child_nodes(node):
            yield from names(child)

    return any(name in OBJECT_TYPES for name in names(annotation))


def _decorators(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    return " ".join(ast.unparse(d.func if isinstance(d, ast.Call) else d) for d in fn.decorator_list)


def builders(source: str, path: str = "<source>") -> list[Builder]:
    """The module-level pod and node builders of ``source`` (see the module docstring)."""
    tops = [
        top
        for top in ast.parse(source).body
        if isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and not top.name.startswith("test_")
        and not (isinstance(top, ast.ClassDef) and top.name.startswith("Test"))
    ]
    found: dict[str, Builder] = {}
    for top in tops:
        spelled = next((s for s in map(_spelled, ast.walk(top)) if s), None)
        if spelled:
            found[top.name] = Builder(path, top.lineno, top.name, f"spells {spelled} by hand")
    named = [
        top
        for top in tops
        if not isinstance(top, ast.ClassDef)
        and HEADS.fullmatch(_head(top.name))
        and not re.search(r"\bfixture\b|\bcomposite\b", _decorators(top))
        and _may_return_object(top.returns)
    ]
    grown = True
    while grown:  # a builder that calls a local builder is one too
        grown = False
        for top in named:
            if top.name not in found and (_calls_kit(top, set(found)) or _returns_object(top)):
                found[top.name] = Builder(path, top.lineno, top.name, NAMED)
                grown = True
    return sorted(found.values(), key=lambda b: b.line)


def _tree() -> list[Builder]:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        if path != KIT:
            found += builders(path.read_text(), path.relative_to(TESTS.parent).as_posix())
    return found


def test_no_pod_or_node_builder_outside_the_kit() -> None:
    found = [str(b) for b in _tree()]
    assert not found, "build pods and nodes with tests/wrappers.py (add a method there if it lacks one):\n" + "\n".join(
        found
    )


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(
            'def pod(name):\n    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}}\n',
            ["<source>:1: pod spells a Pod manifest by hand"],
            id="a-pod-manifest",
        ),
        pytest.param(
            'def target(n):\n    return {"metadata": {"name": n}, "spec": {"containers": []}}\n',
            ["<source>:1: target spells a pod spec by hand"],
            id="a-pod-spec-under-any-name",
        ),
        pytest.param(
            'def hosts(*names):\n    return [{"metadata": {"name": n}, "status": {"allocatable": {"cpu": "4"}}}'
            " for n in names]\n",
            ["<source>:1: hosts spells a node's status by hand"],
            id="nodes-by-their-status",
        ),
        pytest.param(
            'def labelled(**labels):\n    return NodeInfo({"metadata": {"name": "n", "labels": labels}})\n',
            ["<source>:1: labelled spells a NodeInfo of a dict by hand"],
            id="a-node-info-of-a-dict",
        ),
        pytest.param(
            "class MakePod:\n    def obj(self):\n"
            '        return {"kind": "Pod", "metadata": {}, "spec": {"containers": []}}\n',
            ["<source>:1: MakePod spells a Pod manifest by hand"],
            id="a-second-kit",
        ),
        pytest.param(
            'def spread_pod(name: str) -> dict[str, Any]:\n    return make_pod().name(name).label("app", "x").obj()\n',
            ["<source>:1: spread_pod is named for pods/nodes and returns what it builds"],
            id="a-kit-chain-wrapped",
        ),
        pytest.param(
            "def pod_with_claim(name: str, claim: str) -> PodInfo:\n    return wrappers.pod_info(name)\n",
            ["<source>:1: pod_with_claim is named for pods/nodes and returns what it builds"],
            id="named-pod-with",
        ),
        pytest.param(
            'def pod(uid, rv):\n    return {"metadata": {"uid": uid, "resourceVersion": rv}}\n',
            ["<source>:1: pod is named for pods/nodes and returns what it builds"],
            id="a-bare-object-named-pod",
        ),
        pytest.param(
            "def labelled_node(name, labels) -> NodeInfo:\n    return NodeInfo(builders.node(name, labels=labels))\n"
            'def zonal_node(name: str, zone: str) -> NodeInfo:\n    return labelled_node(name, {"zone": zone})\n',
            [
                "<source>:1: labelled_node is named for pods/nodes and returns what it builds",
                "<source>:3: zonal_node is named for pods/nodes and returns what it builds",
            ],
            id="a-builder-over-a-local-builder",
        ),
    ],
)
def test_the_checker_refuses_a_builder(source: str, expected: list[str]) -> None:
    assert [str(b) for b in builders(source)] == expected


@pytest.mark.parametrize(
    "source",
    [
        pytest.param('def test_parse():\n    assert parse({"kind": "Pod", "metadata": {}})\n', id="a-test"),
        pytest.param("def node_of(cluster, name) -> str | None:\n    return cluster.pod(name).node\n", id="a-lookup"),
        pytest.param(
            "def create_nodes(core, count) -> list[str]:\n"
            "    return [core.create(node(f'n{i}')) for i in range(count)]\n",
            id="an-action-returning-names",
        ),
        pytest.param(
            "@st.composite\ndef pods(draw) -> dict[str, Any]:\n    return pod(draw(NAMES))\n",
            id="a-strategy-building-with-the-kit",
        ),
        pytest.param(
            "@pytest.fixture\ndef pod_wrapper() -> Callable[[], PodWrapper]:\n    return make_pod\n", id="a-fixture"
        ),
        pytest.param(
            "def pod_group(name: str) -> dict[str, Any]:\n"
            '    return {"kind": "PodGroup", "metadata": {"name": name}}\n',
            id="another-kind-named-pod-something",
        ),
        pytest.param(
            'def _event(ns):\n    return {"metadata": {}, "involvedObject": {"kind": "Pod", "name": "p"}}\n',
            id="a-reference-to-a-pod",
        ),
        pytest.param(
            "def shared(**policy):\n"
            '    return {"name": "a", "capacity": {"memory": {"value": "80Gi", "requestPolicy": policy}}}\n',
            id="a-dra-device-capacity",
        ),
        pytest.param(
            "def _one_pod_one_node() -> tuple[Scheduler, Callable[[PodInfo], None]]:\n"
            '    return make_scheduler(pods=[pod("p")])\n',
            id="a-setup-returning-no-pod",
        ),
    ],
)
def test_the_checker_lets_through_what_builds_nothing(source: str) -> None:
    assert builders(source) == []
