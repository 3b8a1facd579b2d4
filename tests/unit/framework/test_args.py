"""PluginArgs, the base of the in-tree args models: camelCase names, unknown fields refused,
null fields taking their defaults only where the model says so, and validation_errors raised
as one aggregate."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from scheduler_core.framework import field
from scheduler_core.framework.args import PluginArgs


class _Strict(PluginArgs):
    some_count: int = 3


class _Nullable(PluginArgs):
    NULL_IS_DEFAULT = True

    some_count: int = 3
    other_count: int = 5

    def validation_errors(self) -> field.ErrorList:
        errors = []
        if self.some_count < 0:
            errors.append(field.invalid("someCount", self.some_count, "must be positive"))
        if self.other_count < 0:
            errors.append(field.invalid("otherCount", self.other_count, "must be positive"))
        return errors


@pytest.mark.parametrize(
    ("raw", "some", "other"),
    [
        pytest.param({}, 3, 5, id="defaults"),
        pytest.param({"someCount": None, "other_count": None}, 3, 5, id="nulls by alias and by name"),
        pytest.param({"someCount": 7}, 7, 5, id="camelCase"),
    ],
)
def test_null_is_default(raw: dict[str, Any], some: int, other: int) -> None:
    args = _Nullable.model_validate(raw)
    assert (args.some_count, args.other_count) == (some, other)


@pytest.mark.parametrize(
    ("model", "raw", "error_type"),
    [
        pytest.param(_Nullable, {"unknownField": None}, "extra_forbidden", id="a null unknown field is refused"),
        pytest.param(_Strict, {"someCount": None}, "int_type", id="null is an error without NULL_IS_DEFAULT"),
    ],
)
def test_refused(model: type[PluginArgs], raw: dict[str, Any], error_type: str) -> None:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(raw)
    assert [e["type"] for e in caught.value.errors()] == [error_type]


def test_validation_errors_are_one_aggregate() -> None:
    with pytest.raises(ValidationError, match=r"\[someCount: Invalid value: -1: must be positive, otherCount: "):
        _Nullable.model_validate({"someCount": -1, "otherCount": -2})
    with pytest.raises(ValidationError, match=r"Value error, someCount: Invalid value: -1: must be positive \["):
        _Nullable.model_validate({"someCount": -1})
