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


POLICY = "spec.devices[0].capacity[memory].requestPolicy"


def shared(**policy: Any) -> dict[str, Any]:
    """A slice with one device that allows multiple allocations, 80Gi of memory with ``policy``."""
    device = {"name": "a", "allowMultipleAllocations": True,
              "capacity": {"memory": {"value": "80Gi", "requestPolicy": policy}}}  # fmt: skip
    return slice_(nodeName="n", devices=[device])


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
        pytest.param("ResourceSlice", shared(default="1Gi", validRange={"min": "1Gi"}), [],
                     id="validateMultiAllocatableDeviceCapacity-valid"),
        pytest.param("ResourceSlice", slice_(nodeName="n", devices=[
                         {"name": "a", "capacity": {"memory": {"value": "8Gi", "requestPolicy": {"default": "1Gi"}}}}]),
                     [f"{POLICY}: Forbidden: allowMultipleAllocations must be true"],
                     id="validateSingleAllocatableDeviceCapacity"),
        pytest.param("ResourceSlice", shared(default="1Gi", validRange={"min": "1Gi"}, validValues=["1Gi"]),
                     [f'{POLICY}: Forbidden: exactly one policy can be specified, cannot specify "validValues" and '
                      '"validRange" at the same time'],
                     id="validateRequestPolicy-both"),
        pytest.param("ResourceSlice", shared(validRange={"min": "1Gi"}),
                     [f"{POLICY}.default: Required value: required when validRange is defined"],
                     id="validateValidRequestValues-no-default"),
        pytest.param("ResourceSlice", shared(default="1Gi", validRange={"min": "2Gi", "max": "100Gi", "step": "3Gi"}),
                     [f'{POLICY}.validRange.min: Invalid value: "1Gi": default is less than min: 2Gi',
                      f'{POLICY}.validRange.max: Invalid value: "100Gi": max is larger than capacity value: 80Gi',
                      f'{POLICY}.validRange.step: Invalid value: "1Gi": value is not a multiple of a given step (3Gi) '
                      "from (2Gi)",
                      f'{POLICY}.validRange.step: Invalid value: "100Gi": value is not a multiple of a given step '
                      "(3Gi) from (2Gi)"],
                     id="validateRequestPolicyRange"),
        pytest.param("ResourceSlice", shared(default="1Gi", validRange={"min": "79Gi", "step": "2Gi"}),
                     [f'{POLICY}.validRange.min: Invalid value: "1Gi": default is less than min: 79Gi',
                      f'{POLICY}.validRange.step: Invalid value: "2Gi": one step 81Gi is larger than capacity '
                      "value: 80Gi"],
                     id="validateRequestPolicyRange-step-past-capacity"),
        pytest.param("ResourceSlice", shared(default="3Gi", validValues=["4Gi", "2Gi", "2Gi", "90Gi"]),
                     [f'{POLICY}.validValues[1]: Invalid value: "2Gi": values must be sorted in ascending order',
                      f'{POLICY}.validValues[3]: Invalid value: "90Gi": option is larger than capacity value: 80Gi',
                      f'{POLICY}.validValues[2]: Duplicate value: "2147483648"',
                      f'{POLICY}.validValues: Invalid value: "3Gi": default value is not valid according to the '
                      "requestPolicy"],
                     id="validateRequestPolicyValidValues"),
    ],
)  # fmt: skip
def test_dra_kinds_are_validated_as_upstream(kind: str, obj: dict[str, Any], expected: list[str]) -> None:
    assert messages(kind, obj) == expected
