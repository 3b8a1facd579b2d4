"""PodGroups in simulate input: both APIs carried apart, bad fields named."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.simulator import InputError
from tests.unit.plugins.coscheduling.gangs import gang_group, pod_group
from tests.unit.simulator.support import load


def test_both_pod_group_apis_are_carried_under_their_own_keys() -> None:
    cluster = load(pod_group("a", 2), gang_group("b", 3))
    assert [o["metadata"]["name"] for o in cluster.objects["scheduling.x-k8s.io/PodGroup"]] == ["a"]
    assert [o["metadata"]["name"] for o in cluster.objects["scheduling.k8s.io/PodGroup"]] == ["b"]
    assert cluster.warnings == []


def _with(obj: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {**obj, "spec": {**obj["spec"], **spec}}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(
            _with(pod_group("a", 2), minMember="two"),
            "in.yaml: PodGroup default/a: spec.minMember: must be an integer (got 'two')",
            id="minMember not a number",
        ),
        pytest.param(
            _with(pod_group("a", 2), minMember=-1),
            "in.yaml: PodGroup default/a: spec.minMember: must be greater than or equal to 0 (got -1)",
            id="negative minMember",
        ),
        pytest.param(
            _with(pod_group("a", 2), minResources={"cpu": "lots"}),
            "in.yaml: PodGroup default/a: spec.minResources.cpu: invalid quantity 'lots'",
            id="bad minResources quantity",
        ),
        pytest.param(
            _with(gang_group("b", 1), schedulingPolicy={"gang": {"minCount": 0}}),
            "in.yaml: PodGroup default/b: spec.schedulingPolicy.gang.minCount: must be greater than or equal to 1",
            id="zero minCount",
        ),
        pytest.param(
            _with(gang_group("b", 1), schedulingPolicy={"gang": {"minCount": 2}, "basic": {}}),
            "in.yaml: PodGroup default/b: spec.schedulingPolicy: exactly one of basic or gang must be set",
            id="two policies",
        ),
    ],
)
def test_bad_pod_groups_are_input_errors_naming_object_field_and_reason(obj: dict[str, Any], expected: str) -> None:
    with pytest.raises(InputError) as caught:
        load(obj)
    assert any(str(p).startswith(expected) for p in caught.value.problems), caught.value.problems
