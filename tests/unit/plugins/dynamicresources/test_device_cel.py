"""CEL device selectors against upstream's cases.

Ids name the case in ``k8s.io/dynamic-resource-allocation@v0.36.3/cel/compile_test.go``
(``compile/<name>``) or in ``k8s.io/apiserver@v0.36.3/pkg/cel/library`` (``quantity_test.go``,
``semver_test.go``: ``quantity/<...>``, ``semver/<...>``).
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import pytest

from scheduler_core.framework.device_cel import (
    CEL_SELECTOR_EXPRESSION_MAX_LENGTH,
    CELError,
    CostError,
    compile_selector,
)

DRIVER = "dra.example.com"


def device(attributes: dict[str, Any] | None = None, capacity: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "name": "dev",
        "driver": DRIVER,
        "attributes": attributes or {},
        "capacity": {k: {"value": v} for k, v in (capacity or {}).items()},
    }


CASES = [
    pytest.param("true", device(), True, id="compile/true"),
    pytest.param("false", device(), False, id="compile/false"),
    pytest.param('"no-such-domain" in device.attributes', device(), False, id="compile/domain-check-negative"),
    pytest.param('"dra.example.com" in device.attributes', device({"services": {"string": "x"}}), True,
                 id="compile/domain-check-positive"),
    pytest.param('device.driver == "dra.example.com"', device(), True, id="compile/real-driver-name"),
    pytest.param('device.attributes["dra.example.com"].name', device({"name": {"bool": True}}), True,
                 id="compile/driver-name-qualifier"),
    pytest.param('device.attributes["dra.example.com"]["name"]', device({"name": {"bool": True}}), True,
                 id="compile/driver-name-qualifier-map-lookup"),
    pytest.param('device.attributes["other.example.com"].name', device({"other.example.com/name": {"bool": True}}),
                 True, id="compile/qualified-attribute-name"),
    pytest.param('device.attributes["dra.example.com"].name > 0', device({"name": {"int": 1}}), True, id="compile/int"),
    pytest.param('device.attributes["dra.example.com"].name == "fish"', device({"name": {"string": "fish"}}), True,
                 id="compile/string"),
    pytest.param('device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))',
                 device({"name": {"version": "1.0.0"}}), True, id="compile/version"),
    pytest.param('device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) && '
                 'isSemver("v1.0.0", true)', device({"name": {"version": "1.0.0"}}), True, id="compile/version_v"),
    pytest.param('device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
                 device(capacity={"name": "1Mi"}), True, id="compile/quantity"),
    pytest.param('"name" in device.capacity["dra.example.com"] && '
                 'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
                 device(capacity={"name": "1Mi"}), True, id="compile/check-positive"),
    pytest.param('!("name" in device.capacity["dra.example.com"]) || '
                 'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))', device(), True,
                 id="compile/check-negative"),
    pytest.param('device.attributes.exists_one(x, x == "dra.example.com")', device({"services": {"string": "x"}}),
                 True, id="compile/check_attribute_domains"),
    pytest.param('device.attributes["dra.example.com"].exists_one(x, x == "services")',
                 device({"services": {"string": "x"}}), True, id="compile/check_attribute_ids"),
    pytest.param('device.attributes["dra.example.com"].services.matches("[^a]?sym")',
                 device({"services": {"string": "asymetric"}}), True, id="compile/regexp_attribute"),
    pytest.param('quantity("1Mi").compareTo(quantity("1024Ki")) == 0', device(), True, id="quantity/compareTo-equal"),
    pytest.param('quantity("50M").isLessThan(quantity("100M"))', device(), True, id="quantity/isLessThan"),
    pytest.param('quantity("1.5").isInteger() == false && quantity("2").asInteger() == 2', device(), True,
                 id="quantity/isInteger-asInteger"),
    pytest.param('quantity("50k").add(quantity("20k")) == quantity("70k")', device(), True, id="quantity/add"),
    pytest.param('quantity("50k").sub(20000) == quantity("30k")', device(), True, id="quantity/sub-int"),
    pytest.param('quantity("-1").sign() == -1', device(), True, id="quantity/sign"),
    pytest.param('isQuantity("20") && !isQuantity("20x")', device(), True, id="quantity/isQuantity"),
    pytest.param('semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3',
                 device(), True, id="semver/major-minor-patch"),
    pytest.param('semver("1.0.0-alpha").isLessThan(semver("1.0.0"))', device(), True, id="semver/prerelease-less"),
    pytest.param('semver("1.2.3").compareTo(semver("2.0.0")) == -1', device(), True, id="semver/compareTo"),
    pytest.param('isSemver("1.0.0") && !isSemver("v1.0.0") && !isSemver("1.0")', device(), True, id="semver/isSemver"),
    pytest.param('semver("1.0", true) == semver("1.0.0")', device(), True, id="semver/normalize"),
]  # fmt: skip


@pytest.mark.parametrize(("expression", "dev", "expected"), CASES)
def test_selector_matches_as_upstream(expression: str, dev: dict[str, Any], expected: bool) -> None:
    assert compile_selector(expression).matches(dev) is expected


ERRORS = [
    pytest.param("?!", "Syntax error", id="compile/syntax-error"),
    pytest.param("1", "must evaluate to bool or the unknown type, not int", id="compile/type-error"),
    pytest.param('device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
                 "no such key: noSuchAttr", id="compile/runtime-error-lookup-identifier"),
    pytest.param('device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
                 "no such key: noSuchAttr", id="compile/runtime-error-lookup-map"),
    pytest.param('device.attributes["dra.example.com"].noSuch(1)', "undeclared reference to 'noSuch'",
                 id="compile/includes-function-undeclared-error (another name)"),
    pytest.param('quantity("1Mi") < quantity("2Mi")', "no such overload", id="quantity/no-ordering-operators"),
]  # fmt: skip


@pytest.mark.parametrize(("expression", "message"), ERRORS)
def test_errors_carry_upstreams_text(expression: str, message: str) -> None:
    with pytest.raises(CELError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        compile_selector(expression).matches(device())


@pytest.mark.parametrize(
    "expression",
    [
        pytest.param(("[" + ",".join(["1"] * 60) + "].all(a, ") * 4 + "true" + ")" * 4, id="nested-comprehensions"),
        pytest.param(
            "[" + ",".join(["1"] * 3000) + "].all(a, [" + ",".join(["1"] * 1000) + "].all(b, true))",
            id="two-long-lists",
        ),
        pytest.param("true && " * 2000 + "true", id="too-long"),
        pytest.param("(" * 5000 + "true" + ")" * 5000, id="deep-nesting"),
    ],
)
def test_hostile_expressions_are_refused_quickly(expression: str) -> None:
    started = time.monotonic()
    with pytest.raises(CELError):
        compile_selector(expression).matches(device())
    assert time.monotonic() - started < 5


def test_cost_is_refused_before_any_evaluation() -> None:
    nested = ("[" + ",".join(["1"] * 60) + "].all(a, ") * 4 + "true" + ")" * 4
    with pytest.raises(CostError, match="too complex, exceeds cost limit"):
        compile_selector(nested)
    # three levels over attribute-sized lists stay within the limit, and run quickly
    assert compile_selector(("[" + ",".join(["1"] * 30) + "].all(a, ") * 3 + "true" + ")" * 3).matches(device())


def test_length_limit_is_upstreams() -> None:
    assert CEL_SELECTOR_EXPRESSION_MAX_LENGTH == 10 * 1024


def test_first_selector_loads_only_the_interpreter() -> None:
    """The library's package also imports its command line (typer, prompt_toolkit: ~0.18 s of
    CPU), which the operator's first DRA cycle paid (PartitionableBacktracking's one pod took
    120 ms of CPU on the dev cluster against kube-scheduler's 20). A fresh interpreter compiles
    and runs a selector with the Rust interpreter alone."""
    code = (
        "import sys\n"
        "from scheduler_core.framework.device_cel import compile_selector\n"
        'selector = compile_selector(\'device.driver == "dra.example.com" && '
        'device.capacity["dra.example.com"].memory.isGreaterThan(quantity("1Gi"))\')\n'
        "print(selector.matches({'name': 'd', 'driver': 'dra.example.com', 'attributes': {}, "
        "'capacity': {'memory': {'value': '2Gi'}}}))\n"
        "print(*sorted(m for m in ('cel', 'cel.cli', 'typer', 'prompt_toolkit') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:2] == ["True", ""]
