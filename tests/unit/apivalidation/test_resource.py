"""DRA kinds are validated as the API server validates them (``pkg/apis/resource/validation/
validation.go`` v1.36.3); ids name the upstream rule's function."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core import apivalidation

API = "resource.k8s.io/v1"


def claim(*requests: dict[str, Any], **devices: Any) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "default"},
            "spec": {"devices": {"requests": list(requests), **devices}}}  # fmt: skip


def slice_(**spec: Any) -> dict[str, Any]:
    body = {"driver": "d", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}, **spec}
    return {"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": "s"}, "spec": body}


def messages(kind: str, obj: dict[str, Any]) -> list[str]:
    return [str(p) for p in apivalidation.validate(kind, obj)]


NESTED = ("[" + ",".join(["1"] * 100) + "].all(a, ") * 4 + "true" + ")" * 4
EXACT = {"name": "r", "exactly": {"deviceClassName": "gpu"}}


@pytest.mark.parametrize(
    ("kind", "obj", "expected"),
    [
        pytest.param("ResourceClaim", claim(EXACT), [], id="valid-claim"),
        pytest.param("ResourceClaim", claim({"name": "r"}),
                     ["spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` "
                      "is required"],
                     id="validateDeviceRequest-none"),
        pytest.param("ResourceClaim", claim({"name": "r", "exactly": {"deviceClassName": "gpu", "count": -1}}),
                     ["spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero"],
                     id="validateDeviceAllocationMode-count"),
        pytest.param("ResourceClaim",
                     claim({"name": "r", "exactly": {"deviceClassName": "gpu", "allocationMode": "All", "count": 2}}),
                     ["spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when "
                      "allocationMode is 'All'"], id="validateDeviceAllocationMode-all"),
        pytest.param("ResourceClaim", claim({"name": "r", "exactly": {}}),
                     ["spec.devices.requests[0].exactly.deviceClassName: Required value"], id="validateDeviceClass"),
        pytest.param("ResourceClaim", claim(EXACT, EXACT), ['spec.devices.requests[1]: Duplicate value: "r"'],
                     id="validateSet-unique-requests"),
        pytest.param("ResourceClaim", claim(EXACT, constraints=[{"matchAttribute": "numa"}]),
                     ['spec.devices.constraints[0].matchAttribute: Invalid value: "numa": a fully qualified name must '
                      "be a domain and a name separated by a slash"], id="validateFullyQualifiedName"),
        pytest.param("ResourceClaim",
                     claim({"name": "r", "exactly": {"deviceClassName": "g",
                                                     "selectors": [{"cel": {"expression": "x" * 10241}}]}}),
                     ["spec.devices.requests[0].exactly.selectors[0].cel.expression: Too long: may not be more than "
                      "10240 bytes"], id="validateCELSelector-length"),
        pytest.param("DeviceClass", {"apiVersion": API, "kind": "DeviceClass", "metadata": {"name": "gpu"},
                                     "spec": {"selectors": [{"cel": {"expression": "device.nope("}}]}},
                     ['spec.selectors[0].cel.expression: Invalid value: "device.nope(": compilation failed: ERROR: '
                      "<input>:1:13: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', ')', '.', '-', "
                      "'!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n"
                      "| device.nope(\n| ............^"], id="validateCELSelector-syntax"),
        pytest.param("DeviceClass", {"apiVersion": API, "kind": "DeviceClass", "metadata": {"name": "gpu"},
                                     "spec": {"selectors": [{"cel": {"expression": NESTED}}]}},
                     ["spec.selectors[0].cel.expression: Forbidden: too complex, exceeds cost limit"],
                     id="validateCELSelector-cost"),
        pytest.param("DeviceClass", {"apiVersion": API, "kind": "DeviceClass", "metadata": {"name": "gpu"},
                                     "spec": {"extendedResourceName": "example.com/gpu"}}, [],
                     id="validateDeviceClassSpec-extendedResourceName"),
        pytest.param("DeviceClass", {"apiVersion": API, "kind": "DeviceClass", "metadata": {"name": "gpu"},
                                     "spec": {"extendedResourceName": "gpu"}},
                     ['spec.extendedResourceName: Invalid value: "gpu": must be a valid extended resource name'],
                     id="validateDeviceClassSpec-extendedResourceName-native"),
        pytest.param("DeviceClass", {"apiVersion": API, "kind": "DeviceClass", "metadata": {"name": "gpu"},
                                     "spec": {"extendedResourceName": "deviceclass.resource.kubernetes.io/gpu"}},
                     ['spec.extendedResourceName: Invalid value: "deviceclass.resource.kubernetes.io/gpu": must be '
                      "a valid extended resource name"],
                     id="validateDeviceClassSpec-extendedResourceName-implicit-prefix"),
        pytest.param("ResourceSlice", slice_(nodeName="n", devices=[{"name": "a"}]), [], id="valid-slice"),
        pytest.param("ResourceSlice", slice_(devices=[]),
                     ["spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                      "`perDeviceNodeSelection` is required"], id="validateResourceSliceSpec-no-node-selection"),
        pytest.param("ResourceSlice", slice_(nodeName="n", allNodes=True),
                     ["spec: Invalid value: \"{`nodeName`, `allNodes`}\": exactly one of `nodeName`, `nodeSelector`, "
                      "`allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"],
                     id="validateResourceSliceSpec-two-node-selections"),
        pytest.param("ResourceSlice", slice_(nodeName="n", pool={"name": "p", "resourceSliceCount": 0}),
                     ["spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero"],
                     id="validateResourcePool"),
    ],
)  # fmt: skip
def test_dra_kinds_are_validated_as_upstream(kind: str, obj: dict[str, Any], expected: list[str]) -> None:
    assert messages(kind, obj) == expected
