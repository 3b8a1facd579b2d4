"""Which victims would violate a PodDisruptionBudget (upstream default_preemption.go
filterPodsWithPDBViolation; cases after preemption_test.go TestFilterVictimsWithPDBViolation,
v1.36.3) and how a budget's selector reads (metav1.LabelSelectorAsSelector)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.plugins.defaultpreemption.pdb import budgets, filter_pods_with_pdb_violation, parse_selector
from tests.unit.plugins.defaultpreemption.harness import pdb
from tests.wrappers import pod_info

FOO = {"app": "foo"}


@pytest.mark.parametrize(
    ("victims", "pdbs", "violating", "non_violating"),
    [
        pytest.param([], [], [], [], id="TestFilterVictimsWithPDBViolation/no victims, no PDBs"),
        pytest.param(
            [("a", FOO)],
            [pdb({"app": "bar"})],
            [],
            ["a"],
            id="TestFilterVictimsWithPDBViolation/victim with no matching PDBs",
        ),
        pytest.param(
            [("a", FOO)],
            [pdb(FOO, allowed=1)],
            [],
            ["a"],
            id="TestFilterVictimsWithPDBViolation/victim matching PDB, adequate DisruptionsAllowed",
        ),
        pytest.param(
            [("a", FOO)],
            [pdb(FOO, allowed=0)],
            ["a"],
            [],
            id="TestFilterVictimsWithPDBViolation/victim matching PDB, no DisruptionsAllowed",
        ),
        pytest.param(
            [("a", FOO), ("b", FOO), ("c", FOO)],
            [pdb(FOO, allowed=1)],
            ["b", "c"],
            ["a"],
            id="TestFilterVictimsWithPDBViolation/multiple victims matching the same PDB",
        ),
        pytest.param(
            [("a", FOO), ("b", FOO)],
            [pdb(FOO, allowed=0, disrupted=["a"])],
            ["b"],
            ["a"],
            id="TestFilterVictimsWithPDBViolation/pod in DisruptedPods is ignored",
        ),
        pytest.param(
            [("a", FOO)], [pdb(selector={})], [], ["a"], id="TestFilterVictimsWithPDBViolation/PDB with empty selector"
        ),
        pytest.param([("a", None)], [pdb(selector={})], [], ["a"], id="pod without labels"),
        pytest.param([("a", FOO)], [pdb(FOO, namespace="other")], [], ["a"], id="PDB of another namespace"),
        pytest.param(
            [("a", {"app": "foo", "tier": "web"}), ("b", {"tier": "web"})],
            [pdb(FOO, allowed=1, name="app"), pdb({"tier": "web"}, allowed=1, name="tier")],
            ["b"],
            ["a"],
            id="TestFilterVictimsWithPDBViolation/Multiple PDBs: every matching budget is spent",
        ),
        pytest.param(
            [("a", {"app": "foo", "tier": "web"}), ("b", {"tier": "web"})],
            [pdb(FOO, allowed=0, name="app"), pdb({"tier": "web"}, allowed=1, name="tier")],
            ["a", "b"],
            [],
            id="a violating pod still spends the other budgets that select it",
        ),
        pytest.param(
            [("a", FOO)],
            [pdb(selector={"matchExpressions": [{"key": "app", "operator": "In", "values": ["foo", "bar"]}]})],
            ["a"],
            [],
            id="matchExpressions In",
        ),
        pytest.param(
            [("a", FOO)],
            [pdb(selector={"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["foo"]}]})],
            [],
            ["a"],
            id="matchExpressions NotIn",
        ),
        pytest.param(
            [("a", FOO)],
            [pdb(selector={"matchExpressions": [{"key": "app", "operator": "Exists"}]})],
            ["a"],
            [],
            id="matchExpressions Exists",
        ),
        pytest.param(
            [("a", FOO)],
            [pdb(selector={"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]})],
            ["a"],
            [],
            id="matchExpressions DoesNotExist",
        ),
        pytest.param(
            [("a", FOO)],
            [pdb(selector={"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]})],
            [],
            ["a"],
            id="invalid operator matches nothing",
        ),
    ],
)
def test_filter_pods_with_pdb_violation(
    victims: list[tuple[str, dict[str, str] | None]],
    pdbs: list[dict[str, Any]],
    violating: list[str],
    non_violating: list[str],
) -> None:
    got_violating, got_non_violating = filter_pods_with_pdb_violation(
        [pod_info(name, uid=name, node_name="n", labels=labels) for name, labels in victims], budgets(pdbs)
    )
    assert [p.name for p in got_violating] == violating
    assert [p.name for p in got_non_violating] == non_violating


@pytest.mark.parametrize(
    "selector",
    [
        pytest.param(None, id="null"),
        pytest.param({}, id="empty"),
        pytest.param({"matchLabels": {}, "matchExpressions": []}, id="empty lists"),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}, id="In without values"),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}, id="Exists with values"
        ),
        pytest.param({"matchLabels": {"bad key!": "x"}}, id="invalid key"),
        pytest.param({"matchLabels": {"a": "bad value!"}}, id="invalid value"),
        pytest.param({"matchLabels": {"/a": "x"}}, id="empty prefix"),
        pytest.param({"matchLabels": {"a/b/c": "x"}}, id="two slashes"),
    ],
)
def test_selectors_that_match_nothing(selector: dict[str, Any] | None) -> None:
    assert parse_selector(selector) is None


def test_prefixed_keys_and_empty_values_are_valid() -> None:
    selector = parse_selector({"matchLabels": {"example.com/app": ""}})
    assert selector is not None and selector.matches({"example.com/app": ""})
