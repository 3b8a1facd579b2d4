"""Tolerant JSON decoding: one object too deep to read never blocks the others.

A custom resource may carry free-form args (``x-kubernetes-preserve-unknown-fields``) that the
API server stores however deep they nest. CPython's ``json.loads`` raises ``RecursionError``
past about 1,000 levels, and a LIST decodes every object of a kind as one document: a single
7 KB PluginConfig nested 1,100 deep made every LIST of PluginConfigs fail, so the cache never
synced and the leader scheduled nothing, restart after restart.

:func:`loads` decodes as ``json.loads`` does; only when that raises ``RecursionError`` does it
rewrite the text, replacing every value nested deeper than :data:`MAX_DECODE_DEPTH` with the
string :data:`TOO_DEEP`, and decode again. The object keeps its metadata (so it is known, and
its status can say what is wrong) and its too-deep part becomes a value the args bounds
(``scheduler_core.tenancy.limits``) refuse: the object is ``Valid=False``, the rest of the
list is untouched.

:func:`loads_api` is the operator's own hot path (``scheduler_operator.io.transport``: watch
events, list pages and answers of the API server's typed kinds): ``orjson`` first, 2-3 times
faster than ``json`` on a watch event, and :func:`loads` for a document it refuses (past its
depth limit of 1,024, a lone surrogate, ``NaN``). One difference remains: ``orjson`` reads an
integer beyond 64 bits as a float. The typed kinds have no such integer (their fields are at most
int64); the custom resources, whose free-form args may, are decoded by :func:`loads` (Kopf).
:func:`dumps` encodes request bodies with ``orjson`` (``json`` for non-string keys).

Where decoding happens: Kopf lists (``kopf._cogs.clients.api.get``, through aiohttp's
``response.json``) and watches (``json.loads`` per line in the same module), and the
operator's own LISTs for the cache-sync check (``scheduler_operator.io.transport``).
:func:`install_in_kopf` swaps Kopf's two for tolerant ones; it checks that the functions it
replaces are there, so a Kopf upgrade that moves them fails at start, loudly, rather than
silently losing the protection (decision record in docs/architecture.md).
"""

from __future__ import annotations

import json
import re
import types
from typing import Any

import orjson

MAX_DECODE_DEPTH = 200  # far beyond any real Kubernetes object, far below the recursion limit
TOO_DEEP = f"<nested deeper than {MAX_DECODE_DEPTH} levels: not decoded>"

# A whole JSON string (escapes included) or one bracket: strings are skipped atomically, so
# brackets inside them are not counted.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def loads_api(text: str | bytes | bytearray) -> Any:
    """A typed kind's JSON (see the module docstring): ``orjson``, else :func:`loads`."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return loads(text)


def loads(text: str | bytes | bytearray) -> Any:
    """``json.loads``, except that values nested too deep become :data:`TOO_DEEP`."""
    try:
        return json.loads(text)
    except RecursionError:
        if isinstance(text, bytes | bytearray):
            text = text.decode("utf-8")
        return json.loads(flatten_too_deep(text))


def dumps(value: Any) -> bytes:
    """JSON bytes of a request body (``orjson``; ``json`` for what it refuses: non-string keys)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value).encode()


def flatten_too_deep(text: str, max_depth: int = MAX_DECODE_DEPTH) -> str:
    """``text`` with each value opened at depth ``max_depth + 1`` replaced by :data:`TOO_DEEP`."""
    out: list[str] = []
    depth = 0
    copied = 0  # text[:copied] is in ``out`` or skipped
    skipping = False
    marker = json.dumps(TOO_DEEP)
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token[0] == '"':
            continue
        if token in "[{":
            depth += 1
            if depth == max_depth + 1:
                out.append(text[copied : match.start()])
                out.append(marker)
                skipping = True
        else:
            if depth == max_depth + 1 and skipping:
                copied = match.end()
                skipping = False
            depth -= 1
    out.append(text[copied:])
    return "".join(out)


def install_in_kopf() -> None:
    """Make Kopf's LIST and WATCH decoding tolerant (see the module docstring)."""
    from kopf._cogs.clients import api

    install_on(api)


def install_on(api: types.ModuleType) -> None:
    """Replace ``get`` and ``json`` of ``api`` (Kopf's ``kopf._cogs.clients.api``; the test of
    the patch's target, ``tests/unit/operator/io/test_kopf_patch_target.py``, passes a copy)."""
    original = getattr(api, "get", None)
    if not callable(original) or (getattr(api, "json", None) is not json and not _installed(api)):
        raise RuntimeError(
            "kopf._cogs.clients.api no longer has get() and json: tolerant decoding cannot be installed "
            "for this Kopf version (see scheduler_operator/io/decoding.py)"
        )
    if _installed(api):
        return

    async def get(
        url: str,
        *,
        settings: Any,
        payload: object | None = None,
        headers: dict[str, str] | None = None,
        timeout: Any = None,
        logger: Any,
    ) -> Any:
        response = await api.request(
            method="get",
            url=url,
            payload=payload,
            headers=headers,
            timeout=timeout,
            settings=settings,
            logger=logger,
        )
        async with response:
            return await response.json(loads=loads)

    setattr(api, "get", get)  # noqa: B010 (a module attribute of Kopf's, replaced on purpose)
    setattr(api, "json", _TolerantJson)  # noqa: B010


def _installed(api: types.ModuleType) -> bool:
    return getattr(api, "json", None) is _TolerantJson


class _TolerantJson:
    """Stands in for the ``json`` module inside Kopf's API client (it uses ``json.loads``)."""

    loads = staticmethod(loads)
    dumps = staticmethod(json.dumps)
    JSONDecodeError = json.JSONDecodeError
