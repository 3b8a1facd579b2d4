"""The one set of accessors for the fields every kind shares (scheduler_core.framework.manifest)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import manifest

FULL: dict[str, Any] = {
    "metadata": {
        "name": "p",
        "namespace": "ns",
        "uid": "u-1",
        "labels": {"app": "a"},
        "annotations": {"note": "n"},
    },
    "spec": {"nodeName": "n1"},
    "status": {"phase": "Running"},
}


def test_fields_are_read_from_the_object() -> None:
    assert manifest.meta(FULL)["name"] == "p"
    assert manifest.spec(FULL) == {"nodeName": "n1"}
    assert manifest.status(FULL) == {"phase": "Running"}
    assert (manifest.name_of(FULL), manifest.namespace_of(FULL), manifest.uid_of(FULL)) == ("p", "ns", "u-1")
    assert manifest.labels_of(FULL) == {"app": "a"}
    assert manifest.annotations_of(FULL) == {"note": "n"}


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param({}, id="absent"),
        pytest.param({"metadata": None, "spec": None, "status": None}, id="null"),
        pytest.param({"metadata": {"name": None, "namespace": "", "labels": None}}, id="null-in-metadata"),
    ],
)
def test_absent_or_null_fields_read_as_empty(obj: dict[str, Any]) -> None:
    assert manifest.meta(obj).get("name") is None
    assert manifest.spec(obj) == {}
    assert manifest.status(obj) == {}
    assert (manifest.name_of(obj), manifest.uid_of(obj)) == ("", "")
    assert manifest.labels_of(obj) == {}
    assert manifest.annotations_of(obj) == {}
    # The API server defaults a namespaced object's namespace.
    assert manifest.namespace_of(obj) == "default"
