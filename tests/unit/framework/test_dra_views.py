"""The DRA views read a manifest's fields as Go reads the object: absent and null are zero values."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import DeviceClass, ResourceClaim, ResourceSlice
from scheduler_core.framework.dra import allocated_devices

ALLOCATION = {
    "devices": {
        "results": [
            {"driver": "d", "pool": "p", "device": "gpu-0", "request": "r"},
            {"driver": "d", "pool": "p", "device": "gpu-1", "request": "r", "adminAccess": True},
        ]
    }
}

CLAIM: dict[str, Any] = {
    "metadata": {
        "name": "c",
        "namespace": "ns",
        "uid": "u1",
        "finalizers": ["resource.kubernetes.io/delete-protection"],
        "deletionTimestamp": "2026-01-01T00:00:00Z",
        "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
        "ownerReferences": [{"uid": "pod-1", "controller": True}, {"uid": "other"}],
    },
    "spec": {"devices": {"requests": [{"name": "r", "firstAvailable": [{"name": "a"}]}]}},
    "status": {"allocation": ALLOCATION, "reservedFor": [{"resource": "pods", "name": "p", "uid": "pod-1"}]},
}


def test_a_claim_reads_every_field_it_names() -> None:
    claim = ResourceClaim(CLAIM)
    assert claim.manifest is CLAIM
    assert (claim.key, claim.uid) == (("ns", "c"), "u1")
    assert claim.deleting and claim.finalizers == ["resource.kubernetes.io/delete-protection"]
    assert claim.allocation is ALLOCATION
    assert claim.devices == [("d", "p", "gpu-0")]  # admin access takes no device
    assert claim.is_reserved_for("pod-1") and not claim.is_reserved_for("other")
    assert claim.controlled_by("pod-1") and not claim.controlled_by("other")
    assert claim.controllers == ("pod-1",)
    assert claim.is_extended_resource_claim and claim.has_first_available


@pytest.mark.parametrize(
    ("obj", "uid"),
    [
        pytest.param({}, "None/None", id="empty"),
        pytest.param({"metadata": None, "spec": None, "status": None}, "None/None", id="null-parts"),
        pytest.param(
            {"metadata": {"name": "c"}, "status": {"allocation": None, "reservedFor": None}}, "None/c", id="null-fields"
        ),
    ],
)
def test_a_claim_reads_absent_and_null_fields_as_zero(obj: dict[str, Any], uid: str) -> None:
    """A claim without a uid (a hand-written manifest) is known by its key, as before the views."""
    claim = ResourceClaim(obj)
    assert claim.namespace == "default"  # the API server's default
    assert claim.allocation is None and claim.devices == [] and claim.reserved_for == ()
    assert claim.requests is None  # absent, not empty: a special claim before Filter
    assert not claim.deleting and not claim.is_extended_resource_claim and not claim.has_first_available
    assert claim.uid == uid


def test_allocated_devices_of_an_allocation_in_flight() -> None:
    assert allocated_devices(ALLOCATION) == [("d", "p", "gpu-0")]
    assert allocated_devices({}) == []


def test_a_device_class_and_a_slice() -> None:
    cls = DeviceClass({
        "metadata": {"name": "gpu", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"extendedResourceName": "example.com/gpu", "selectors": [{"cel": {"expression": "true"}}]},
    })  # fmt: skip
    assert (cls.name, cls.extended_resource_name, cls.created) == ("gpu", "example.com/gpu", "2026-01-01T00:00:00Z")
    assert len(cls.selectors) == 1 and cls.config == ()
    assert DeviceClass({"metadata": {"name": "x"}, "spec": {"extendedResourceName": ""}}).extended_resource_name is None
    s = ResourceSlice({
        "metadata": {"name": "s"},
        "spec": {"driver": "d", "pool": {"name": "p", "generation": 2, "resourceSliceCount": 3}, "nodeName": "n1",
                 "devices": [{"name": "gpu-0"}]},
    })  # fmt: skip
    assert (s.name, s.driver, s.pool, s.generation, s.slice_count, s.node_name) == ("s", "d", "p", 2, 3, "n1")
    assert not s.all_nodes and s.node_selector is None and len(s.devices) == 1
    empty = ResourceSlice({})
    assert (empty.generation, empty.slice_count, empty.devices) == (0, 0, ())
