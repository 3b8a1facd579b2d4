"""Small builders for node-affinity manifests, shaped as the API holds them."""

from __future__ import annotations

from typing import Any

Json = dict[str, Any]


def expr(key: str, operator: str, *values: str) -> Json:
    requirement: Json = {"key": key, "operator": operator}
    if values:
        requirement["values"] = list(values)
    return requirement


def term(*expressions: Json, fields: list[Json] | None = None) -> Json:
    result: Json = {}
    if expressions:
        result["matchExpressions"] = list(expressions)
    if fields is not None:
        result["matchFields"] = fields
    return result


def name_in(*names: str) -> Json:
    return expr("metadata.name", "In", *names)


def required(*terms: Json) -> Json:
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}


def preferred(*weighted: tuple[int, Json]) -> Json:
    return {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": w, "preference": t} for w, t in weighted]}


def affinity(node_affinity: Json) -> Json:
    return {"nodeAffinity": node_affinity}
