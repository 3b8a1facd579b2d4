"""The JSON an extender and a scheduler exchange, as kube-scheduler's Go code reads and writes it.

Upstream types: ``k8s.io/kube-scheduler@v0.36.3/extender/v1/types.go``. Those structs carry
**no json tags**, so ``encoding/json`` writes the Go field names (``Pod``, ``Nodes``,
``NodeNames``, ``FailedNodes``, ``FailedAndUnresolvableNodes``, ``Error``, ``Host``, ``Score``,
``NodeNameToVictims``, ``NodeNameToMetaVictims``, ``NumPDBViolations``, ``UID``, ``PodName``,
``PodNamespace``, ``PodUID``, ``Node``) and nil pointers as ``null``. When it reads, Go matches
keys case-insensitively (an exact match first) and ignores unknown keys, and
``json.Decoder.Decode`` reads the first JSON value only (trailing bytes are not an error).
:func:`field` and :func:`decode` do the same, so an extender written against the Go types or
with lower-case keys is understood as kube-scheduler would understand it.

Decoding errors use Go's wording for the common cases (``EOF``, ``invalid character 'x'
looking for beginning of value``, ``json: cannot unmarshal string into Go struct field
ExtenderFilterResult.NodeNames of type []string``) because they end up in FailedScheduling.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler_core.framework import Manifest, manifest

Json = dict[str, Any]

MAX_EXTENDER_PRIORITY = 10  # extender/v1 MaxExtenderPriority

_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\n\r"


class DecodeError(ValueError):
    """A body kube-scheduler's decoder would refuse; ``str()`` is Go's message."""


def decode(body: bytes) -> Any:
    """The first JSON value of ``body`` (Go ``json.NewDecoder(r).Decode``)."""
    text = body.decode("utf-8", errors="replace")
    start = len(text) - len(text.lstrip(_WHITESPACE))
    if start == len(text):
        raise DecodeError("EOF")
    first = text[start]
    if first not in '{["-0123456789tfn':
        raise DecodeError(f"invalid character {first!r} looking for beginning of value")
    try:
        value, _ = _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text):
            raise DecodeError("unexpected EOF") from None
        raise DecodeError(f"invalid character {text[exc.pos]!r} {_go_context(exc.msg)}") from None
    return value


def _go_context(msg: str) -> str:
    if "delimiter" in msg:
        return "after object key:value pair" if "','" in msg else "after object key"
    if "property name" in msg:
        return "looking for beginning of object key string"
    return "looking for beginning of value"


def field(obj: Manifest, name: str) -> Any:
    """``obj[name]`` as Go's decoder finds it: exact key, else the first case-insensitive match."""
    if name in obj:
        return obj[name]
    folded = name.casefold()
    for key, value in obj.items():
        if isinstance(key, str) and key.casefold() == folded:
            return value
    return None


def _go_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_error(value: Any, struct: str, name: str, go_type: str) -> DecodeError:
    return DecodeError(
        f"json: cannot unmarshal {_go_type(value)} into Go struct field {struct}.{name} of type {go_type}"
    )


def _object(value: Any, what: str) -> Manifest:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise DecodeError(f"json: cannot unmarshal {_go_type(value)} into Go value of type {what}")
    return value


def _string_map(obj: Manifest, struct: str, name: str) -> dict[str, str]:
    value = field(obj, name)
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise _type_error(value, struct, name, "v1.FailedNodesMap")
    return dict(value)


def _int(value: Any, struct: str, name: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise _type_error(value, struct, name, "int64")
    return value


# -- requests (what kube-scheduler sends) ------------------------------------------------------------
def extender_args(pod: Manifest, nodes: Sequence[Manifest], *, names_only: bool) -> Json:
    """``ExtenderArgs``: node names when the extender caches nodes, else a NodeList."""
    if names_only:
        names = [str(manifest.meta(n).get("name", "")) for n in nodes]
        return {"Pod": pod, "Nodes": None, "NodeNames": names}
    return {"Pod": pod, "Nodes": {"metadata": {}, "items": list(nodes)}, "NodeNames": None}


def binding_args(*, name: str, namespace: str, uid: str, node: str) -> Json:
    """``ExtenderBindingArgs``."""
    return {"PodName": name, "PodNamespace": namespace, "PodUID": uid, "Node": node}


def preemption_args(pod: Manifest, victims: Mapping[str, tuple[Sequence[Manifest], int]], *, meta: bool) -> Json:
    """``ExtenderPreemptionArgs``: victims by node as UIDs (``meta``, node-cache-capable
    extenders) or as whole pods."""
    if meta:
        meta_victims = {
            node: {
                "Pods": [{"UID": str(manifest.meta(p).get("uid", ""))} for p in pods],
                "NumPDBViolations": n,
            }
            for node, (pods, n) in victims.items()
        }
        return {"Pod": pod, "NodeNameToVictims": None, "NodeNameToMetaVictims": meta_victims}
    full = {node: {"Pods": list(pods), "NumPDBViolations": n} for node, (pods, n) in victims.items()}
    return {"Pod": pod, "NodeNameToVictims": full, "NodeNameToMetaVictims": None}


# -- responses (what an extender answers) ------------------------------------------------------------
class FilterResult:
    """``ExtenderFilterResult``; ``node_names``/``nodes`` are None when absent (Go nil)."""

    __slots__ = ("error", "failed", "failed_unresolvable", "node_names", "nodes")

    def __init__(self, value: Any) -> None:
        obj = _object(value, "v1.ExtenderFilterResult")
        struct = "ExtenderFilterResult"
        names = field(obj, "NodeNames")
        if names is not None and (not isinstance(names, list) or not all(isinstance(n, str) for n in names)):
            raise _type_error(names, struct, "NodeNames", "[]string")
        self.node_names: list[str] | None = names
        nodes = field(obj, "Nodes")
        self.nodes: list[str] | None = None
        if nodes is not None:
            items = field(_object(nodes, "v1.NodeList"), "items")
            if items is not None and not isinstance(items, list):
                raise _type_error(items, struct, "Nodes.items", "[]v1.Node")
            self.nodes = [
                str(field(field(n, "metadata") or {}, "name") or "") for n in items or [] if isinstance(n, dict)
            ]
        self.failed = _string_map(obj, struct, "FailedNodes")
        self.failed_unresolvable = _string_map(obj, struct, "FailedAndUnresolvableNodes")
        error = field(obj, "Error")
        if error is not None and not isinstance(error, str):
            raise _type_error(error, struct, "Error", "string")
        self.error: str = error or ""


def host_priorities(value: Any) -> list[tuple[str, int]]:
    """``HostPriorityList``: (host, score) pairs, in the extender's order."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise DecodeError(f"json: cannot unmarshal {_go_type(value)} into Go value of type v1.HostPriorityList")
    pairs = []
    for item in value:
        obj = _object(item, "v1.HostPriority")
        host = field(obj, "Host")
        if host is not None and not isinstance(host, str):
            raise _type_error(host, "HostPriority", "Host", "string")
        pairs.append((host or "", _int(field(obj, "Score"), "HostPriority", "Score")))
    return pairs


def binding_error(value: Any) -> str:
    """``ExtenderBindingResult.Error``."""
    error = field(_object(value, "v1.ExtenderBindingResult"), "Error")
    if error is not None and not isinstance(error, str):
        raise _type_error(error, "ExtenderBindingResult", "Error", "string")
    return error or ""


def meta_victims(value: Any) -> dict[str, tuple[list[str], int]]:
    """``ExtenderPreemptionResult.NodeNameToMetaVictims``: victim UIDs and PDB violations by node."""
    obj = _object(value, "v1.ExtenderPreemptionResult")
    by_node = field(obj, "NodeNameToMetaVictims")
    if by_node is None:
        return {}
    if not isinstance(by_node, dict):
        raise _type_error(by_node, "ExtenderPreemptionResult", "NodeNameToMetaVictims", "map[string]*v1.MetaVictims")
    result: dict[str, tuple[list[str], int]] = {}
    for node, victims in by_node.items():
        if victims is None:
            result[node] = ([], 0)
            continue
        v = _object(victims, "v1.MetaVictims")
        pods = field(v, "Pods") or []
        if not isinstance(pods, list):
            raise _type_error(pods, "MetaVictims", "Pods", "[]*v1.MetaPod")
        uids = [str(field(_object(p, "v1.MetaPod"), "UID") or "") for p in pods if p is not None]
        result[node] = (uids, _int(field(v, "NumPDBViolations"), "MetaVictims", "NumPDBViolations"))
    return result
