"""What the in-memory cluster answers to a write, in the API server's words.

The stores (:mod:`.volumes`, :mod:`.claims`, the pods of :mod:`.backend`) check a write here
before they apply it: the object must exist (404 NotFound), its uid and resourceVersion must be
the ones the write expects (``Write.expected``: 409 Conflict), a create's name must be free (409
AlreadyExists). A patch is applied by :func:`merge_patch`. Every refusal carries the HTTP code
and reason (``writes.WriteError``), as the operator's answers do, so that a plugin reads both
backends alike (``writes.is_conflict``).

Messages: ``k8s.io/apimachinery`` ``pkg/api/errors/errors.go`` (``NewNotFound``,
``NewConflict``, ``NewAlreadyExists``), and for a delete's uid precondition
``k8s.io/apiserver`` ``pkg/registry/rest/delete.go`` ``BeforeDelete`` (v0.36.3).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from scheduler_core.framework import Manifest, Status, manifest
from scheduler_core.framework.writes import Resource, Verb, Write, refused

MODIFIED = "the object has been modified; please apply your changes to the latest version and try again"


def not_found(resource: Resource, name: str) -> Status:
    return refused(f'{resource.qualified} "{name}" not found', code=404, reason="NotFound")


def conflict(qualified: str, name: str, why: str) -> Status:
    return refused(f'Operation cannot be fulfilled on {qualified} "{name}": {why}', code=409, reason="Conflict")


def already_exists(resource: Resource, name: str) -> Status:
    return refused(f'{resource.qualified} "{name}" already exists', code=409, reason="AlreadyExists")


def invalid(kind: str, name: str, problems: str) -> Status:
    return refused(f'{kind} "{name}" is invalid: {problems}', code=422, reason="Invalid")


def not_allowed(call: Write) -> Status:
    """A write the in-memory cluster does not carry out (no plugin of ours makes it)."""
    return refused(f"the in-memory cluster does not {call.verb} {call.target}", code=405, reason="MethodNotAllowed")


def check(call: Write, stored: Manifest | None) -> Status | None:
    """None when ``call`` may apply to ``stored`` (the object of its name, None if there is none)."""
    name = call.name
    if stored is None:
        return not_found(call.resource, name)
    expected = call.expected()
    meta = manifest.meta(stored)
    if expected.uid and expected.uid != meta.get("uid"):
        if call.verb is Verb.DELETE:  # BeforeDelete
            kind = f"{call.resource.kind}.{call.resource.group}" if call.resource.group else call.resource.kind
            return conflict(
                kind, name,
                f"the UID in the precondition ({expected.uid}) does not match the UID in record ({meta.get('uid')}). "
                "The object might have been deleted and then recreated",
            )  # fmt: skip
        why = f"Precondition failed: UID in precondition: {expected.uid}, UID in object meta: {meta.get('uid')}"
        return conflict(call.resource.qualified, name, why)
    if expected.resource_version and expected.resource_version != meta.get("resourceVersion"):
        return conflict(call.resource.qualified, name, MODIFIED)
    return None


def merge_patch(stored: Manifest, patch: Manifest) -> dict[str, Any]:
    """``stored`` with ``patch`` applied as a JSON merge patch (RFC 7386: maps merge, a null
    removes a field, anything else replaces), which is what a strategic merge patch does to the
    fields the plugins patch; ``stored`` is left as it was."""
    merged = dict(stored)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping):
            current = merged.get(key)
            merged[key] = merge_patch(current if isinstance(current, Mapping) else {}, value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged
