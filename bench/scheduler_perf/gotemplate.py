"""The subset of Go's text/template that upstream's scheduler_perf templates use.

Upstream renders every node, pod and ``createAny``/``updateAny`` template with
``text/template``-like parsing (``operations.go`` ``getSpecFromTextTemplateFile``: the
``html/template`` package, the environment ``{"Index": i, "Count": n}`` and the functions of
``getTemplateFuncs``). The pinned v1.36.3 templates use only actions of the form
``{{ .Index }}``, ``{{ .Count }}`` and ``{{ Func arg arg }}`` with the arithmetic functions
below; any other action is refused with the file and the action named, never passed through.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

_ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


def _float(value: object) -> float:
    if isinstance(value, bool):
        raise TemplateError(f"cannot cast {value!r} to float64")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise TemplateError(f"cannot cast {value!r} to float64")


def _divide(i: object, j: object) -> float:
    if _float(j) == 0:
        raise TemplateError("division by zero")
    return _float(i) / _float(j)


# operations.go getTemplateFuncs; Go's int() truncates toward zero, as Python's int() does.
FUNCS: Mapping[str, Callable[..., object]] = {
    "AddFloat": lambda *n: sum(_float(x) for x in n),
    "AddInt": lambda *n: int(sum(_float(x) for x in n)),
    "SubtractFloat": lambda i, j: _float(i) - _float(j),
    "SubtractInt": lambda i, j: int(_float(i) - _float(j)),
    "MultiplyFloat": lambda *n: _product(n),
    "MultiplyInt": lambda *n: int(_product(n)),
    "DivideFloat": _divide,
    "DivideInt": lambda i, j: int(_divide(i, j)),
    "Mod": lambda a, b: _go_mod(int(_float(a)), int(_float(b))),
}


def _product(numbers: tuple[object, ...]) -> float:
    result = 1.0
    for n in numbers:
        result *= _float(n)
    return result


def _go_mod(a: int, b: int) -> int:
    """Go's ``%``: the sign follows the dividend."""
    if b == 0:
        raise TemplateError("integer divide by zero")
    r = abs(a) % abs(b)
    return -r if a < 0 else r


class TemplateError(ValueError):
    pass


def _argument(token: str, env: Mapping[str, object], where: str) -> object:
    if token.startswith("."):
        key = token[1:]
        if key not in env:
            raise TemplateError(f"{where}: {{{{{token}}}}}: no field {key!r} (have {sorted(env)})")
        return env[key]
    if _NUMBER.match(token):
        return float(token) if "." in token else int(token)
    if len(token) >= 2 and token[0] == token[-1] == '"':
        return token[1:-1]
    raise TemplateError(f"{where}: unsupported template argument {token!r}")


def _format(value: object) -> str:
    if isinstance(value, float):
        # Go's fmt of a float64 in a template: %v, i.e. strconv 'g'-like shortest form.
        return repr(value) if not value.is_integer() else str(int(value)) if abs(value) < 1e21 else repr(value)
    return str(value)


def render(text: str, env: Mapping[str, object], where: str = "template") -> str:
    """``text`` with every action replaced; ``where`` names the file in errors."""

    def action(match: re.Match[str]) -> str:
        tokens = match.group(1).split()
        if not tokens:
            raise TemplateError(f"{where}: empty action {match.group(0)!r}")
        head, args = tokens[0], tokens[1:]
        if head.startswith(".") and not args:
            return _format(_argument(head, env, where))
        function = FUNCS.get(head)
        if function is None:
            raise TemplateError(f"{where}: unsupported template action {match.group(0)!r}")
        return _format(function(*(_argument(a, env, where) for a in args)))

    return _ACTION.sub(action, text)
