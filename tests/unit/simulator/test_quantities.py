"""Extreme quantities through every reader of resources: no traceback, upstream's numbers.

A Node's allocatable and a Pod's requests go through validation, the Resource conversion
(``MilliValue``/``Value``: 0 past int64, as upstream's ``int64Amount``), the columnar
snapshot's int64 arrays, NodeResourcesFit (filter, LeastAllocated, MostAllocated,
RequestedToCapacityRatio), NodeResourcesBalancedAllocation, preemption, and the json, table
and html reports. ``1e400`` once crashed the snapshot (issue 26): ``OverflowError: Python int
too large to convert to C long``.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_core.framework import NodeInfo, QuantityError, milli_value, parse_quantity, value
from scheduler_core.framework.quantity import MAX_INT64
from scheduler_core.simulator import load_files, simulate
from scheduler_operator.cli.command import main
from scheduler_operator.cli.output import EXIT_BAD_INPUT
from tests.unit.simulator.support import PROFILE_API
from tests.wrappers import node, pod

# Every scoring strategy of NodeResourcesFit and BalancedAllocation, besides the default profile.
_STRATEGIES: list[dict[str, Any]] = [
    {"type": "MostAllocated"},
    {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
        {"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}},
]  # fmt: skip


def _profiles() -> list[dict[str, Any]]:
    strategies: list[dict[str, Any]] = [{}, *({"scoringStrategy": s} for s in _STRATEGIES)]
    return [
        {
            "apiVersion": PROFILE_API,
            "kind": "SchedulerProfile",
            "metadata": {"name": f"s{i}", "namespace": "crd-scheduler"},
            "spec": {"schedulerName": name, "pluginConfig": [{"name": "NodeResourcesFit", "args": args}]},
        }
        for i, (name, args) in enumerate(zip(_SCHEDULERS, strategies, strict=True))
    ]


_SCHEDULERS = ["crd-scheduler", "most-allocated", "requested-to-capacity"]
_RESOURCES = ("cpu", "memory", "example.com/gpu", "ephemeral-storage")


def _cluster(quantity: Any, tmp: Path) -> Path:
    """Two nodes, one ("huge") with ``quantity`` as its allocatable and capacity of every
    resource the plugins read, a pod bound there requesting it; pods requesting ``quantity``
    of each resource under each profile, and a high-priority pod that fits nowhere (preemption)."""
    extra = {"example.com/gpu": "4", "ephemeral-storage": "10Gi"}
    huge = node("huge", cpu="4", memory="8Gi", extra=extra)
    for resource in _RESOURCES:
        huge["status"]["allocatable"][resource] = huge["status"]["capacity"][resource] = quantity
    objects: list[Any] = [huge, node("plain", cpu="4", memory="8Gi", extra=extra), *_profiles()]
    objects.append(pod("resident", node_name="huge", cpu=quantity, memory=quantity))
    for i, scheduler in enumerate(_SCHEDULERS):
        objects += [
            pod(f"cpu-{i}", scheduler_name=scheduler, cpu=quantity),
            pod(f"mem-{i}", scheduler_name=scheduler, memory=quantity),
            pod(f"gpu-{i}", scheduler_name=scheduler, containers=[{"name": "c", "image": "pause", "resources": {
                "requests": {"example.com/gpu": quantity}, "limits": {"example.com/gpu": quantity}}}]),
            pod(f"disk-{i}", scheduler_name=scheduler, requests={"ephemeral-storage": quantity}),
            pod(f"small-{i}", scheduler_name=scheduler, cpu="100m", memory="64Mi"),
        ]  # fmt: skip
    objects.append(pod("urgent", cpu="5", priority=1000))
    path = tmp / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    return path


def _run(path: Path, output: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["simulate", "-f", str(path), "-o", output])
    out, err = capsys.readouterr()
    return code, out, err


def _huge_node(path: Path) -> NodeInfo:
    sim = simulate(load_files([str(path)]))
    info = sim.scheduler.cache.get_node("huge")
    assert info is not None
    return info


@pytest.mark.parametrize(
    ("quantity", "milli"),
    [
        pytest.param("1e400", 0, id="1e400-reads-as-0"),
        pytest.param("1e19", 0, id="1e19-reads-as-0"),
        pytest.param("10P", 0, id="10P-milli-past-int64"),
        pytest.param("16Ei", 0, id="16Ei-capped-milli-past-int64"),
        pytest.param("9223372036854775807", 0, id="max-int64-milli-past-int64"),
        pytest.param("9P", 9 * 10**18, id="9P-fits"),
        pytest.param("2e4294967296", 2000, id="exponent-wraps-as-int32"),
    ],
)
@pytest.mark.parametrize("output", ["json", "table", "html"])
def test_extreme_node_quantities_schedule_as_upstream_in_every_report(
    quantity: str, milli: int, output: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _cluster(quantity, tmp_path)
    code, out, err = _run(path, output, capsys)
    assert code == 0, err
    assert "Traceback" not in err
    assert out
    if output == "json":
        info = _huge_node(path)
        assert info.allocatable.milli_cpu == milli
        assert info.allocatable.scalar_resources["example.com/gpu"] == value(quantity)
        placed = {p["name"]: p["node"] for p in json.loads(out)["pods"]}
        assert placed["small-0"] is not None


def test_a_node_of_1e400_cpu_fits_no_pod_that_requests_cpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's reproduction: a Node whose allocatable cpu is 1e400, once a traceback."""
    path = tmp_path / "n.yaml"
    path.write_text(yaml.safe_dump_all([node("big", cpu="1e400"), pod("p", cpu="100m")]))
    code, out, err = _run(path, "json", capsys)
    assert code == 0, err
    (report,) = json.loads(out)["pods"]
    assert report["node"] is None
    assert report["filtered"] == {"big": ["Insufficient cpu"]}


@pytest.mark.parametrize(
    ("text", "whole", "milli"),
    [
        # Value() and MilliValue() of k8s.io/apimachinery v0.36.3, run on amd64 (tests/corpus/README.md)
        pytest.param("1e18", 10**18, 0, id="1e18"),
        pytest.param("1e400", 0, 0, id="1e400"),
        pytest.param("-1e400", 0, 0, id="minus-1e400"),
        pytest.param("1.5e400", 0, 0, id="1.5e400"),
        pytest.param("1234567890123456789e400", 0, 0, id="19-digits-e400"),
        pytest.param("16Ei", MAX_INT64, 0, id="16Ei-upstream-milli-wraps-to-minus-1000"),
        pytest.param("9P", 9 * 10**15, 9 * 10**18, id="9P"),
        pytest.param("1e-10", 1, 1, id="1e-10"),
        pytest.param("0.5n", 1, 1, id="half-nano"),
        pytest.param("2e4294967296", 2, 2000, id="int32-exponent"),
    ],
)
def test_value_and_milli_value_past_int64(text: str, whole: int, milli: int) -> None:
    assert (value(text), milli_value(text)) == (whole, milli)


def test_an_exponent_past_int64_is_refused() -> None:
    with pytest.raises(QuantityError):
        parse_quantity("1e99999999999999999999")


# -- property: any quantity string through every plugin that reads resources ---------------

_SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
             "e", "E", "Kb", "K", "mi", "i", " ", "e+", "e-"]  # fmt: skip
_EXPONENTS = st.one_of(
    st.integers(-50, 50),
    st.integers(-(2**65), 2**65),
    st.sampled_from([2**31, 2**31 - 1, -(2**31), 2**32, 2**63 - 1, -(2**63), 2**63]),
)
_NUMBER = st.from_regex(r"\A[+-]?([0-9]{1,25}(\.[0-9]{0,12})?|\.[0-9]{1,12})\Z")
_GRAMMAR = st.one_of(
    st.builds(lambda n, s: n + s, _NUMBER, st.sampled_from(_SUFFIXES)),
    st.builds(lambda n, e, c: f"{n}{c}{e}", _NUMBER, _EXPONENTS, st.sampled_from(["e", "E"])),
    st.text(alphabet=string.digits + ".+-eEinumkKMGTP x", max_size=14),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(quantity=_GRAMMAR)
def test_any_quantity_string_exits_0_or_2_and_reads_as_the_parser_says(
    quantity: str | int | float, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _cluster(quantity, tmp_path_factory.mktemp("q"))
    code, out, err = _run(path, "json", capsys)
    assert "Traceback" not in err
    assert code in (0, EXIT_BAD_INPUT), err
    try:
        amount = parse_quantity(quantity)
    except QuantityError:
        assert code == EXIT_BAD_INPUT
        assert any(line.startswith(f"error: {path}: ") for line in err.splitlines())
        return
    if amount < 0 or amount.denominator != 1:  # negative; not whole for the extended resource
        assert code == EXIT_BAD_INPUT
        assert "must be greater than or equal to 0" in err or "must be an integer" in err
        return
    assert code == 0, err
    # The scheduler's numbers are the parser's: MilliValue/Value, 0 past int64 (upstream's
    # answer for 1e400), and the node's sums int64 too.
    info = _huge_node(path)
    assert info.allocatable.milli_cpu == milli_value(quantity)
    assert info.allocatable.memory == value(quantity)
    assert info.allocatable.ephemeral_storage == value(quantity)
    for total in (info.requested.milli_cpu, info.requested.memory, info.non_zero_requested.milli_cpu):
        assert -(2**63) <= total <= MAX_INT64
    assert json.loads(out)["pods"]
