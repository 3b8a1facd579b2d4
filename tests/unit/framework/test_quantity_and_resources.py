"""Quantities (apimachinery resource.Quantity) and pod requests (component-helpers resource.PodRequests)."""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction
from typing import Any

import pytest

from scheduler_core.framework import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    PodInfo,
    QuantityError,
    Resource,
    compute_pod_resources,
    milli_value,
    parse_quantity,
    value,
)
from scheduler_core.framework.quantity import MAX_INT64, int64_wrap
from tests.wrappers import node_info, pod, pod_info


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("100m", Fraction(1, 10), id="milli"),
        pytest.param("1Gi", Fraction(2**30), id="binary-Gi"),
        pytest.param("1e3", Fraction(1000), id="exponent"),
        pytest.param("1E-2", Fraction(1, 100), id="negative-exponent"),
        pytest.param("0.5", Fraction(1, 2), id="decimal"),
        pytest.param("1k", Fraction(1000), id="kilo"),
        pytest.param("1M", Fraction(10**6), id="mega"),
        pytest.param("1.5Gi", Fraction(3 * 2**29), id="fractional-binary"),
        pytest.param(".5", Fraction(1, 2), id="leading-dot"),
        pytest.param("+2", Fraction(2), id="plus-sign"),
        pytest.param("-1", Fraction(-1), id="negative"),
        pytest.param("12n", Fraction(12, 10**9), id="nano"),
        pytest.param(3, Fraction(3), id="yaml-int"),
        pytest.param(0.25, Fraction(1, 4), id="yaml-float"),
    ],
)
def test_parse_quantity(text: Any, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("0e2147483647", id="zero-at-int32-max"),
        pytest.param("-0.0E2147483647", id="negative-zero-at-int32-max"),
        pytest.param("0e-2147483648", id="zero-at-int32-min"),
        pytest.param(".000e9223372036854775807", id="zero-at-int64-max"),
    ],
)
def test_zero_at_any_exponent_is_zero_without_computing_the_power(text: str) -> None:
    # 10**2147483647 as an exact Fraction never finishes: a manifest's "0e2147483647" hung
    # simulate (found by test_quantities' hypothesis run). Checked in a child process, so the
    # test fails on its time limit instead of hanging the suite.
    script = f"from scheduler_core.framework.quantity import parse_quantity; print(parse_quantity({text!r}))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=20, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "0"), done.stderr


@pytest.mark.parametrize("text", ["lots", "1KB", "1 Gi", "", "1.2.3", "e3", "1Gib", " 1"])
def test_bad_quantities_are_refused(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "milli", "whole"),
    [
        pytest.param("100m", 100, 1, id="value-rounds-up"),
        pytest.param("0.0001", 1, 1, id="milli-rounds-up"),
        pytest.param("1.5", 1500, 2, id="one-and-a-half"),
        pytest.param("1Ki", 1024000, 1024, id="binary"),
    ],
)
def test_milli_value_and_value_round_up(text: str, milli: int, whole: int) -> None:
    assert milli_value(text) == milli
    assert value(text) == whole


def _container(cpu: str | None = None, memory: str | None = None, **extra: Any) -> dict[str, Any]:
    requests = {k: v for k, v in {"cpu": cpu, "memory": memory}.items() if v is not None}
    container: dict[str, Any] = {"name": "c", "resources": {"requests": requests}}
    container.update(extra)
    return container


@pytest.mark.parametrize(
    ("containers", "init", "overhead", "cpu", "memory"),
    [
        pytest.param(
            [_container("100m", "1Gi"), _container("200m", "1Gi")], [], None, 300, 2 * 2**30, id="containers-summed"
        ),
        pytest.param([_container("100m")], [_container("500m")], None, 500, 0, id="init-container-max"),
        pytest.param([_container("100m")], [_container("50m")], None, 100, 0, id="init-smaller-than-containers"),
        pytest.param(
            [_container("100m")],
            [_container("200m", restartPolicy="Always"), _container("250m")],
            None,
            450,
            0,
            id="sidecar-runs-beside-later-init-and-containers",
        ),
        pytest.param(
            [_container("100m")],
            [_container("200m", restartPolicy="Always")],
            {"cpu": "10m"},
            310,
            0,
            id="overhead-added",
        ),
        pytest.param([_container("0.0001"), _container("0.0001")], [], None, 1, 0, id="exact-sum-then-round-once"),
    ],
)
def test_pod_requests(containers: list[Any], init: list[Any], overhead: Any, cpu: int, memory: int) -> None:
    manifest = pod(containers=containers, init_containers=init, overhead=overhead)
    requests, _, _ = compute_pod_resources(manifest)
    assert (requests.milli_cpu, requests.memory) == (cpu, memory)


def test_non_zero_defaults_per_container() -> None:
    manifest = pod(containers=[_container("200m"), _container(memory="1Gi"), {"name": "empty"}])
    requests, non_zero_cpu, non_zero_memory = compute_pod_resources(manifest)
    assert requests.milli_cpu == 200 and requests.memory == 2**30
    assert non_zero_cpu == 200 + DEFAULT_MILLI_CPU_REQUEST * 2
    assert non_zero_memory == 2 * DEFAULT_MEMORY_REQUEST + 2**30


def test_scalar_resources_kept_and_unknown_native_names_ignored() -> None:
    res = Resource.from_list({"example.com/gpu": "2", "hugepages-2Mi": "4Mi", "foo": "3", "pods": "110"})
    assert res.scalar_resources == {"example.com/gpu": 2, "hugepages-2Mi": 4 * 2**20}
    assert res.allowed_pod_number == 110


def test_pod_info_reuses_resources_of_an_unchanged_earlier_version() -> None:
    first = PodInfo(pod("a", cpu="1"))
    bound = dict(first.pod)
    bound["spec"] = {**first.pod["spec"], "nodeName": "n1"}
    second = PodInfo(bound, like=first)
    assert second.requests is first.requests and second.node_name == "n1"
    changed = dict(first.pod)
    changed["spec"] = {**first.pod["spec"], "containers": [_container("2")]}
    assert PodInfo(changed, like=first).requests.milli_cpu == 2000


def test_pod_without_containers_requests_nothing() -> None:
    requests, cpu, memory = compute_pod_resources({"spec": {"containers": []}})
    assert requests.is_zero() and (cpu, memory) == (0, 0)


def test_pod_level_requests_replace_the_container_aggregate() -> None:
    manifest = pod(containers=[_container("100m", "1Gi"), _container("100m", "1Gi")])
    manifest["spec"]["resources"] = {"requests": {"cpu": "1"}}
    requests, non_zero_cpu, _ = compute_pod_resources(manifest)
    assert (requests.milli_cpu, requests.memory) == (1000, 2 * 2**30)
    assert non_zero_cpu == 1000


def test_a_node_s_sums_wrap_around_int64_as_go_s_and_come_back() -> None:
    """NodeInfo's requested sums are Go int64 (``Resource.Add``'s ``+=``): past MaxInt64 they wrap
    to the negative side, and removing the pod brings them back; within range they are plain
    sums (the range check that skips the wrap must not change either)."""
    info = node_info("n", memory="1Ei", pods="10")
    small = pod_info("small", uid="u-small", memory="1Ki")
    huge = pod_info("huge", uid="u-huge", memory="8Ei")  # 2**63 bytes: past MaxInt64 alone
    info.add_pod(small)
    assert info.requested.memory == 1024
    info.add_pod(huge)
    assert info.requested.memory == int64_wrap(1024 + huge.requests.memory) < 0
    assert huge.requests.memory + 1024 > MAX_INT64
    info.remove_pod(huge)
    assert info.requested.memory == 1024
    info.remove_pod(small)
    assert info.requested.memory == 0
