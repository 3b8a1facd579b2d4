"""CEL device selectors, evaluated by the ``common-expression-language`` library (``cel``).

Upstream: ``k8s.io/dynamic-resource-allocation@v0.36.3/cel/compile.go``. A selector sees one
variable, ``device``, with ``driver``, ``allowMultipleAllocations``, ``attributes`` and
``capacity``; attribute and capacity names without a domain get the driver's name as domain.
The interpreter is the library's (a Rust CEL implementation); this module only builds the
``device`` value and registers the Kubernetes CEL library functions DRA selectors use, which
the library does not have:

* quantities (``k8s.io/apiserver/pkg/cel/library/quantity.go``): ``quantity``, ``isQuantity``,
  ``sign``, ``isInteger``, ``asInteger``, ``asApproximateFloat``, ``add``, ``sub``,
  ``isLessThan``, ``isGreaterThan``, ``compareTo``; a capacity is a quantity;
* semantic versions (``library/semverlib.go``): ``semver``, ``isSemver``, ``major``,
  ``minor``, ``patch``, ``isLessThan``, ``isGreaterThan``, ``compareTo``; a ``version``
  attribute is a semver;
* ``includes`` (compile.go, for list-type attributes) and the ``split``/``lowerAscii``/
  ``upperAscii``/``trim`` string functions of cel-go's strings extension.

A quantity or semver is a map with one private key (``{"@quantity": "3/2"}``, an exact
fraction; ``{"@semver": "1.2.3"}``), so ``==`` compares values as upstream does.

Upstream semantics kept: a missing attribute domain reads as an empty map
(``newStringInterfaceMapWithDefault``), so ``device.attributes["x"].y`` fails with
``no such key: y`` and ``"x" in device.attributes`` is false; a result that is not a bool is an
error. Bounds, since a tenant writes these: the expression is at most
``CELSelectorExpressionMaxLength`` (10 KiB) long and its estimated cost at most
``CELSelectorExpressionMaxCost`` (1,000,000; both ``k8s.io/api/resource/v1/types.go``). The
library has no cost tracker, so the estimate is ours and conservative: comprehensions
(``all``, ``exists``, ``exists_one``, ``map``, ``filter``) nested ``d`` deep over ranges of at
most ``r`` elements cost ``r**d``, where ``r`` is the longest list a device attribute may hold
(48) or all the literal list elements of the expression together, whichever is more (with
``split``, also the longest string literal). Everything else is linear in
the expression's length; the library's parser refuses deep nesting with an error (no crash).
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from scheduler_core.framework.manifest import Manifest
from scheduler_core.framework.quantity import QuantityError, parse_quantity

# k8s.io/api@v0.36.3 resource/v1/types.go
CEL_SELECTOR_EXPRESSION_MAX_COST = 1_000_000
CEL_SELECTOR_EXPRESSION_MAX_LENGTH = 10 * 1024
RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE = 48

_QUANTITY = "@quantity"
_SEMVER = "@semver"
_MACROS = re.compile(r"\.\s*(all|exists|exists_one|map|filter)\s*\(")
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_SEMVER_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
    r"(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


class CELError(Exception):
    """A selector that does not compile or fails at run time; the message is upstream's."""


class CostError(CELError):
    """A selector whose estimated cost is over ``CEL_SELECTOR_EXPRESSION_MAX_COST``."""


# -- quantities and semantic versions as CEL values ------------------------------------------------
def quantity_value(text: str) -> dict[str, str]:
    value = parse_quantity(text)
    return {_QUANTITY: f"{value.numerator}/{value.denominator}"}


def _as_fraction(value: Any) -> Fraction:
    if isinstance(value, Mapping) and _QUANTITY in value:
        return Fraction(value[_QUANTITY])
    raise CELError("no such overload")


def _semver_parts(text: str, normalize: bool = False) -> tuple[int, int, int, tuple[Any, ...]] | None:
    if normalize:  # semverlib.go: a "v" prefix, and missing minor/patch as 0, are accepted
        core, rest = re.match(r"^v?([0-9.]*)(.*)$", text).groups()  # type: ignore[union-attr]
        parts = core.split(".")
        if 1 <= len(parts) <= 3 and all(p.isdigit() for p in parts):
            text = ".".join([str(int(p)) for p in parts] + ["0"] * (3 - len(parts))) + rest
    match = _SEMVER_RE.match(text)
    if match is None:
        return None
    pre = tuple(int(p) if p.isdigit() else p for p in (match.group(4) or "").split(".") if p)
    return int(match.group(1)), int(match.group(2)), int(match.group(3)), pre


def semver_value(text: str, normalize: bool = False) -> dict[str, str]:
    parts = _semver_parts(text, normalize)
    if parts is None:
        raise CELError("could not parse semver")
    major, minor, patch, pre = parts
    canonical = f"{major}.{minor}.{patch}" + ("-" + ".".join(str(p) for p in pre) if pre else "")
    return {_SEMVER: canonical}


def _semver_key(value: Any) -> tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]:
    if not (isinstance(value, Mapping) and _SEMVER in value):
        raise CELError("no such overload")
    parts = _semver_parts(str(value[_SEMVER]))
    assert parts is not None
    major, minor, patch, pre = parts
    # semver precedence: a version without pre-release sorts after one with it.
    pre_key = tuple((0, p, "") if isinstance(p, int) else (1, 0, p) for p in pre)
    return major, minor, patch, 0 if pre else 1, pre_key


def _compare(a: Any, b: Any) -> int:
    if isinstance(a, Mapping) and _QUANTITY in a:
        x, y = _as_fraction(a), _as_fraction(b)
    else:
        x, y = _semver_key(a), _semver_key(b)  # type: ignore[assignment]
    return (x > y) - (x < y)


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def _as_integer(q: Any) -> int:
    value = _as_fraction(q)
    if value.denominator != 1 or not -(2**63) <= value.numerator < 2**63:
        raise CELError("cannot convert value to integer")
    return value.numerator


def _from_fraction(value: Fraction) -> dict[str, str]:
    return {_QUANTITY: f"{value.numerator}/{value.denominator}"}


def _arith(sign: int) -> Callable[[Any, Any], dict[str, str]]:
    def op(a: Any, b: Any) -> dict[str, str]:
        other = Fraction(b) if isinstance(b, int) else _as_fraction(b)
        return _from_fraction(_as_fraction(a) + sign * other)

    return op


def _includes(target: Any, arg: Any) -> bool:
    if isinstance(target, list):
        if len(target) > RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE:
            raise CELError(
                "'includes' function cannot be applied to lists longer than "
                f"{RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE} values"
            )
        return arg in target
    return bool(target == arg)


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "quantity": quantity_value,
    "isQuantity": _is_quantity,
    "sign": lambda q: (_as_fraction(q) > 0) - (_as_fraction(q) < 0),
    "isInteger": lambda q: _as_fraction(q).denominator == 1,
    "asInteger": _as_integer,
    "asApproximateFloat": lambda q: float(_as_fraction(q)),
    "add": _arith(1),
    "sub": _arith(-1),
    "semver": semver_value,
    "isSemver": lambda text, normalize=False: _semver_parts(text, normalize) is not None,
    "major": lambda v: _semver_key(v)[0],
    "minor": lambda v: _semver_key(v)[1],
    "patch": lambda v: _semver_key(v)[2],
    "isLessThan": lambda a, b: _compare(a, b) < 0,
    "isGreaterThan": lambda a, b: _compare(a, b) > 0,
    "compareTo": _compare,
    "includes": _includes,
    "split": lambda s, sep, n=-1: s.split(sep) if n < 0 else s.split(sep, n - 1) if n > 0 else [],
    "lowerAscii": lambda s: s.lower(),
    "upperAscii": lambda s: s.upper(),
    "trim": lambda s: s.strip(),
}
# The library's own functions and operators, as ``Program.references()`` names them.
_BUILTINS = frozenset({
    "size", "contains", "startsWith", "endsWith", "matches", "int", "uint", "double", "string", "bytes",
    "bool", "type", "dyn", "has", "max", "min", "timestamp", "duration", "all", "exists", "exists_one",
    "map", "filter", "getDays", "getHours", "getMinutes", "getSeconds", "getMilliseconds",
})  # fmt: skip


# -- compiling ------------------------------------------------------------------------------------------
def _estimated_cost(expression: str) -> int:
    """A conservative bound of the evaluation cost (see the module docstring)."""
    strings = _STRINGS.findall(expression)
    code = _STRINGS.sub('""', expression)
    depth = deepest = elements = 0
    stack: list[list[Any]] = []  # [opened by a comprehension, a list literal, its commas]
    i = 0
    while i < len(code):
        macro = _MACROS.match(code, i)
        if macro is not None:
            stack.append([True, False, 0])
            depth += 1
            deepest = max(deepest, depth)
            i = macro.end()
            continue
        char = code[i]
        if char in "([{":
            stack.append([False, char == "[", 0])
        elif char == "," and stack:
            stack[-1][2] += 1
        elif char in ")]}" and stack:
            comprehension, is_list, commas = stack.pop()
            depth -= comprehension
            elements += commas + 1 if is_list else 0
        i += 1
    # No list can be longer than all literal elements together (concatenation), an attribute
    # list, or, with ``split``, the longest literal string.
    widest = max(RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE, elements)
    if "split" in code:
        widest = max(widest, *(len(s) for s in strings), 64)  # DeviceAttributeMaxValueLength
    return int(widest**deepest)


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled selector: evaluate it with :meth:`matches`."""

    expression: str
    program: Any

    def matches(self, device: Manifest) -> bool:
        """Whether ``device`` (a ResourceSlice device, with ``driver``) is selected; raises
        :class:`CELError` with upstream's wording on a runtime error."""
        variables = device_variables(device)
        context = _context()
        for _ in range(64):  # one retry per missing attribute/capacity domain the expression reads
            context.add_variable("device", variables)
            try:
                result = self.program.execute(context)
            except KeyError as error:
                key = str(error.args[0]) if error.args else ""
                if _default_domain(variables, key, self.expression):
                    continue
                raise CELError(f"no such key: {key}") from None
            except CELError:
                raise
            except Exception as error:  # the library's runtime errors (no such overload, ...)
                raise CELError(_runtime_message(error)) from None
            if not isinstance(result, bool):
                raise CELError(f"must evaluate to bool or the unknown type, not {_type_name(result)}")
            return result
        raise CELError("no such key")


def _default_domain(variables: dict[str, Any], key: str, expression: str) -> bool:
    """Upstream's empty-map default for a domain the device lacks, added on demand."""
    if f'"{key}"' not in expression and f"'{key}'" not in expression:
        return False
    added = False
    for field in ("attributes", "capacity"):
        if key not in variables[field]:
            variables[field][key] = {}
            added = True
    return added


def _type_name(value: object) -> str:
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return "map"


def _runtime_message(error: Exception) -> str:
    text = str(error)
    if "No such overload" in text:
        return "no such overload"
    return text.split(". Check that")[0]


@lru_cache(maxsize=4096)
def compile_selector(expression: str) -> Selector:
    """Compile ``expression``; :class:`CELError` with upstream's message when it does not."""
    if len(expression) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
        raise CELError(f"Too long: may not be more than {CEL_SELECTOR_EXPRESSION_MAX_LENGTH} bytes")
    if _estimated_cost(expression) > CEL_SELECTOR_EXPRESSION_MAX_COST:
        # API validation's words (pkg/apis/resource/validation validateCELSelector).
        raise CostError("too complex, exceeds cost limit")
    try:
        program = _cel().compile(expression)
    except ValueError as error:  # "Failed to parse expression '...': ERROR: <input>:1:1: ..."
        issues = str(error).split("': ", 1)[-1] if "Failed to parse" in str(error) else str(error)
        raise CELError(f"compilation failed: {issues}") from None
    for function in program.references().get("functions", ()):
        if not (function.startswith(("_", "@", "!")) or function in _FUNCTIONS or function in _BUILTINS):
            raise CELError(f"compilation failed: undeclared reference to '{function}' (in container '')")
    return Selector(expression, program)


def warm_up() -> None:
    """Load the interpreter and compile one selector now, not in a pod's cycle: DynamicResources
    calls it when a profile is built, so the first DRA pod of a process does not pay ~3 ms
    (measured on the dev cluster, bench/README.md "A pod's timeline"). Nothing is raised: a
    missing interpreter is reported where a selector is compiled."""
    with contextlib.suppress(Exception):  # a missing or broken interpreter, reported at compile
        compile_selector('device.driver == ""')


@lru_cache(maxsize=1)
def _cel() -> Any:
    """The library's Rust interpreter (its ``cel.cel`` extension), loaded on first use and on
    its own: the package's ``__init__`` also imports its command line (typer, prompt_toolkit),
    ~0.18 s of CPU that the first DRA cycle paid; the extension alone loads in ~0.01 s. We use
    none of the package's Python parts (its ``stdlib`` functions are not upstream's)."""
    package = importlib.util.find_spec("cel")
    if package is None or not package.submodule_search_locations:
        raise CELError("the CEL interpreter (common-expression-language) is not installed")
    for folder in package.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "cel" + suffix)
            if os.path.exists(path):
                spec = importlib.util.spec_from_file_location("cel.cel", path)
                assert spec is not None and spec.loader is not None
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                return module
    raise CELError("the CEL interpreter (common-expression-language) has no extension module")


@lru_cache(maxsize=1)
def _context() -> Any:
    context = _cel().Context()
    for name, function in _FUNCTIONS.items():
        context.add_function(name, function)
    return context


# -- the device variable ------------------------------------------------------------------------------
def _qualified(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def _attribute_value(value: Manifest) -> Any:
    for key in ("int", "bool", "string"):
        if key in value:
            return value[key]
    if "version" in value:
        return semver_value(str(value["version"]))
    raise CELError("unsupported attribute value")


def device_variables(device: Manifest) -> dict[str, Any]:
    """The ``device`` variable for one ResourceSlice device (``driver`` added by the caller)."""
    driver = str(device.get("driver") or "")
    attributes: dict[str, dict[str, Any]] = {}
    for name, value in (device.get("attributes") or {}).items():
        domain, ident = _qualified(name, driver)
        try:
            attributes.setdefault(domain, {})[ident] = _attribute_value(value)
        except CELError as error:
            raise CELError(f"attribute {name}: {error}") from None
    capacity: dict[str, dict[str, Any]] = {}
    for name, value in (device.get("capacity") or {}).items():
        domain, ident = _qualified(name, driver)
        capacity.setdefault(domain, {})[ident] = quantity_value(str((value or {}).get("value", "0")))
    return {
        "driver": driver,
        "allowMultipleAllocations": bool(device.get("allowMultipleAllocations") or False),
        "attributes": attributes,
        "capacity": capacity,
    }
