"""NodeAffinityArgs validation, as upstream ``TestValidateNodeAffinityArgs``
(pkg/scheduler/apis/config/validation/validation_pluginargs_test.go)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from scheduler_core.plugins.nodeaffinity import NodeAffinity, NodeAffinityArgs
from tests.unit.plugins.nodeaffinity.helpers import expr, name_in, preferred, required, term

VALID = {
    **required(term(expr("label-1", "In", "label-1-val"))),
    **preferred((1, term(fields=[name_in("node-1")]))),
}


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param({}, id="TestValidateNodeAffinityArgs/empty"),
        pytest.param({"addedAffinity": VALID}, id="TestValidateNodeAffinityArgs/valid added affinity"),
        pytest.param({"addedAffinity": {}}, id="empty added affinity"),
    ],
)
def test_valid(raw: dict[str, object]) -> None:
    args = NodeAffinityArgs.model_validate(raw)
    assert NodeAffinity.args_model is NodeAffinityArgs
    NodeAffinity(args, None)


def test_invalid_added_affinity_names_every_field() -> None:
    # TestValidateNodeAffinityArgs/invalid added affinity
    raw = {
        "addedAffinity": {
            **required(term(expr("invalid/label/key", "In", "label-1-val"))),
            **preferred((1, term(fields=[name_in("node-1", "node-2")]))),
        }
    }
    with pytest.raises(ValidationError) as info:
        NodeAffinityArgs.model_validate(raw)
    message = str(info.value)
    assert (
        "[addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key: "
        'Invalid value: "invalid/label/key": a valid label key must consist of' in message
    )
    assert (
        "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchFields[0].values: "
        'Invalid value: []string{"node-1", "node-2"}: must have one element]' in message
    )


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        pytest.param(
            required(term(expr("zone", "Near", "a"))),
            'nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "Near": supported values: '
            '"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"',
            id="unsupported operator",
        ),
        pytest.param(
            required(term(expr("zone", "Gt", "ten"))),
            'matchExpressions[0].values[0]: Invalid value: "ten": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
            id="Gt needs an integer",
        ),
        pytest.param(
            required(term(expr("zone", "In"))),
            "matchExpressions[0].values: Invalid value: []string(nil): "
            "for 'in', 'notin' operators, values set can't be empty",
            id="In needs values",
        ),
        pytest.param(
            required(term(expr("zone", "Exists", "a"))),
            'matchExpressions[0].values: Invalid value: []string{"a"}: '
            "values set must be empty for exists and does not exist",
            id="Exists takes no values",
        ),
        pytest.param(
            required(term(fields=[expr("metadata.name", "Exists")])),
            'matchFields[0].operator: Unsupported value: "Exists": supported values: "In", "NotIn"',
            id="field operator",
        ),
    ],
)
def test_invalid_requirements(raw: dict[str, object], fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        NodeAffinityArgs.model_validate({"addedAffinity": raw})
    assert fragment in str(info.value)


def test_unknown_field_is_rejected() -> None:
    with pytest.raises(ValidationError) as info:
        NodeAffinityArgs.model_validate({"addedAffinity": {"requiredDuringSchedulingRequiredDuringExecution": {}}})
    assert "requiredDuringSchedulingRequiredDuringExecution" in str(info.value)


def test_zero_weight_and_empty_preferred_terms_are_ignored() -> None:
    # NewPreferredSchedulingTerms skips them before parsing.
    raw = preferred((0, term(expr("bad key", "In", "x"))), (5, {}))
    NodeAffinityArgs.model_validate({"addedAffinity": raw})


def test_camel_case_round_trip() -> None:
    args = NodeAffinityArgs.model_validate({"addedAffinity": VALID})
    assert args.model_dump(by_alias=True, exclude_none=True) == {"addedAffinity": VALID}
