"""Property: whatever a user does to a valid manifest, ``simulate`` succeeds or reports input
errors (exit 2); it never raises anything else, so no plugin ever sees a bad shape.

Hypothesis mutates the bundled example (nodes, pods, PDBs, a profile) at random places: a
value replaced by one of another JSON type, a key dropped or renamed, a list turned into an
object (a forgotten dash) or an object into a string (a selector written as ``app=web``), a
number made huge, and several of these at once.
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_core.simulator import InputError, load_texts, simulate
from scheduler_operator.cli import main

EXAMPLE = Path(__file__).resolve().parents[3] / "examples"
DOCUMENTS: list[Any] = [
    doc for name in ("cluster.yaml", "profiles.yaml") for doc in yaml.safe_load_all((EXAMPLE / name).read_text()) if doc
]

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["app=web", "70Mi", "16Ei", "1e400", "-1", "yes", "In", "Exists", "", "NoSchedule", "*"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=6,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _paths(item, (*prefix, i))
    return found


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


@st.composite
def mutated(draw: st.DrawFn, documents: list[Any] = DOCUMENTS) -> list[Any]:
    docs = copy.deepcopy(documents)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = [p for p in _paths(docs) if p]
        path = draw(st.sampled_from(paths))
        parent, last = _get(docs, path[:-1]), path[-1]
        old = parent[last]
        action = draw(st.sampled_from(["replace", "drop", "undash", "stringify", "wrap", "rename"]))
        if action == "replace":
            parent[last] = draw(VALUES)
        elif action == "drop":
            del parent[last]
        elif action == "undash" and isinstance(old, list) and old:
            parent[last] = old[0]
        elif action == "stringify":
            parent[last] = "app=web" if isinstance(old, dict) else str(old)
        elif action == "wrap":
            parent[last] = [old]
        elif action == "rename" and isinstance(parent, dict):
            parent[f"{last}x"] = parent.pop(last)
    return docs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_manifests_simulate_or_report_input_errors(docs: list[Any]) -> None:
    text = yaml.safe_dump_all(docs)
    try:
        cluster = load_texts([("mutated.yaml", text)])
        simulate(cluster)
    except InputError as exc:
        assert exc.problems
        assert all(str(p).startswith("mutated.yaml: ") for p in exc.problems)


@settings(max_examples=25, deadline=None)
@given(mutated())
def test_mutated_manifests_exit_0_or_2(docs: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mutated.yaml"
        path.write_text(yaml.safe_dump_all(docs))
        assert main(["simulate", "-f", str(path), "-o", "json"]) in (0, 2)
        assert main(["validate", "-f", str(path)]) in (0, 2)
