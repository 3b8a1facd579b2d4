"""The hostile-input limits refuse before building (``scheduler_core.apivalidation.limits``)."""

from __future__ import annotations

import pytest

from scheduler_core.apivalidation.limits import MAX_DEPTH, MAX_NODES, Budget, LimitError, load_documents


def _bomb(levels: int) -> str:
    text, prev = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n', "a"
    for i in range(levels):
        name = f"l{i}"
        text += f"{name}: &{name} [{', '.join('*' + prev for _ in range(9))}]\n"
        prev = name
    return text


@pytest.mark.parametrize(
    ("text", "json_only", "message"),
    [
        pytest.param(_bomb(8), False, f"more than {MAX_NODES} values", id="alias-bomb"),
        pytest.param("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), True, "nesting is deeper", id="deep-json"),
        pytest.param("a: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), False, "nesting is deeper", id="deep-yaml"),
        pytest.param("n: " + "1" * 5000, False, "number is longer than 64", id="long-int-yaml"),
        pytest.param('{"n": ' + "1" * 5000 + "}", True, "number is longer than 64", id="long-int-json"),
        pytest.param("n: -" + "1" * 100 + ".5e3", False, "number is longer", id="long-float-yaml"),
        pytest.param("{a: 1", False, "column", id="syntax"),
        pytest.param("!!python/name:os.system x", False, "could not determine a constructor", id="python-tag"),
        pytest.param("n: !!int '" + "1" * 5000 + "'", False, "invalid YAML", id="tagged-huge-int"),
    ],
)
def test_refused(text: str, json_only: bool, message: str) -> None:
    with pytest.raises(LimitError, match=message.replace("(", r"\(").replace(".", r"\.")):
        list(load_documents(text, json_only=json_only))


def test_within_limits_loads_and_aliases_share() -> None:
    docs = list(load_documents(_bomb(4)))
    assert len(docs) == 1 and isinstance(docs[0], dict)
    assert list(load_documents('{"a": 1}', json_only=True)) == [{"a": 1}]


def test_a_budget_bounds_files_together() -> None:
    budget = Budget(bytes=100, nodes=10**6)
    list(load_documents("a: " + "x" * 60, budget=budget))
    with pytest.raises(LimitError, match="the files together are larger than"):
        list(load_documents("a: " + "x" * 60, budget=budget))


def test_quoted_long_digit_strings_are_strings() -> None:
    assert list(load_documents("n: '" + "1" * 5000 + "'")) == [{"n": "1" * 5000}]
