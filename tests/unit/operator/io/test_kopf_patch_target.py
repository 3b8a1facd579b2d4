"""The Kopf internals that ``scheduler_operator.io.decoding.install_in_kopf`` replaces, pinned.

The patch swaps two names of Kopf's private ``kopf._cogs.clients.api`` module: ``get`` (for a
tolerant ``response.json``) and its ``json`` (for a tolerant ``json.loads`` in the watch
stream). It is proven on the Kopf version the lock holds; this test reads that module's source
as installed (not the patched objects) and fails, naming what moved, when an upgrade changes
what the patch relies on. Then re-prove the patch (tests/unit/operator/io/test_decoding.py and the
e2e suite) and move the pin in ``pyproject.toml``.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import inspect
from collections.abc import Callable
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from scheduler_operator.io import decoding


def _kopf_api_module() -> ast.Module:
    spec = importlib.util.find_spec("kopf._cogs.clients.api")
    assert spec is not None and spec.origin, "kopf._cogs.clients.api is gone: scheduler_operator/io/decoding.py"
    return ast.parse(Path(spec.origin).read_text())


def _function(module: ast.Module, name: str) -> ast.AsyncFunctionDef:
    for node in module.body:
        if isinstance(node, ast.AsyncFunctionDef) and node.name == name:
            return node
    pytest.fail(f"kopf._cogs.clients.api.{name} is no longer an async function: scheduler_operator/io/decoding.py")


def _parameters(fn: ast.AsyncFunctionDef) -> list[str]:
    args = fn.args
    return [a.arg for a in args.posonlyargs + args.args] + ["*"] + [a.arg for a in args.kwonlyargs]


def test_the_installed_kopf_is_the_pinned_one() -> None:
    requirement = next(
        Requirement(r) for r in importlib.metadata.requires("crd-scheduler") or [] if r.startswith("kopf")
    )
    version = importlib.metadata.version("kopf")
    assert requirement.specifier.contains(version), f"kopf {version} is not {requirement}: re-prove decoding.py"


def test_get_has_the_signature_our_replacement_copies() -> None:
    ours = inspect.signature(_replacement_get()).parameters.values()
    keyword_only = inspect.Parameter.KEYWORD_ONLY
    expected = (
        [p.name for p in ours if p.kind is not keyword_only] + ["*"] + [p.name for p in ours if p.kind is keyword_only]
    )
    assert _parameters(_function(_kopf_api_module(), "get")) == expected, "kopf's get() changed its parameters"


def test_get_still_reads_the_answer_with_response_json_after_request() -> None:
    source = ast.unparse(_function(_kopf_api_module(), "get"))
    assert "await request(" in source and "method='get'" in source
    assert "response.json()" in source, "kopf's get() no longer decodes with response.json()"


def test_request_takes_what_our_get_passes() -> None:
    request = set(_parameters(_function(_kopf_api_module(), "request")))
    assert {"method", "url", "payload", "headers", "timeout", "settings", "logger"} <= request


def test_the_module_uses_only_what_the_json_stand_in_provides() -> None:
    module = _kopf_api_module()
    used = {
        node.attr
        for node in ast.walk(module)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "json"
    }
    assert "loads" in used, "kopf's watch stream no longer decodes with json.loads"
    assert used <= {"loads", "dumps", "JSONDecodeError"}, f"kopf's api module now uses json.{used}"
    imports = [n for n in module.body if isinstance(n, ast.Import) and any(a.name == "json" for a in n.names)]
    assert imports, "kopf's api module no longer imports json as a module"


def _replacement_get() -> Callable[..., object]:
    """Our ``get``, as :func:`decoding.install_in_kopf` installs it (on a private module copy)."""
    spec = importlib.util.find_spec("kopf._cogs.clients.api")
    assert spec is not None and spec.loader is not None
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)
    decoding.install_on(copy)
    get: Callable[..., object] = copy.get
    return get
