"""The base of the in-tree plugins' args models: one home for what every one of them repeated.

Fields are upstream's v1 YAML names (camelCase aliases, the Python names accepted too) and an
unknown field is refused. A model whose v1 fields are pointers upstream sets ``NULL_IS_DEFAULT``:
a field given as null then takes its default, as ``SetDefaults_*`` fills a nil pointer (only
the model's own fields: a null unknown field is still refused). :meth:`PluginArgs.validation_errors`
is upstream's ``Validate*Args``; its ``field.ErrorList`` is raised as one aggregate message.

Not exported from :mod:`scheduler_core.framework`: out-of-tree plugins may use any pydantic model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic.alias_generators import to_camel

from scheduler_core.framework import field


class PluginArgs(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    NULL_IS_DEFAULT: ClassVar[bool] = False

    @model_validator(mode="before")
    @classmethod
    def _null_is_default(cls, data: Any) -> Any:
        if not cls.NULL_IS_DEFAULT or not isinstance(data, dict):
            return data
        names = {*cls.model_fields, *(info.alias for info in cls.model_fields.values())}
        return {key: value for key, value in data.items() if value is not None or key not in names}

    @model_validator(mode="after")
    def _validate(self) -> Self:
        errors = self.validation_errors()
        if errors:
            raise ValueError(field.aggregate(errors))
        return self

    def validation_errors(self) -> Sequence[field.Error | str]:
        """Upstream's ``Validate*Args`` for this model, in its order; none by default."""
        return []
