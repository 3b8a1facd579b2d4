"""The CustomResourceDefinitions of SchedulerProfile and PluginConfig, generated from the models.

The spec schemas come from the pydantic models in ``models.py`` (their field descriptions and
docstrings become ``kubectl explain`` text); the status schemas from the status models below,
which are the contract between the operator's status writer and the API server. A pydantic JSON
schema is not a structural CRD schema as is, so ``structural_schema`` translates it: ``$ref``s
are inlined, ``Optional[X]`` becomes ``X`` with ``nullable: true``, ``dict[str, Any]`` becomes an
object that preserves unknown fields, titles and ``additionalProperties: false`` go (the API
server prunes unknown fields instead), and only scalar, non-null defaults are kept. Anything it
cannot translate faithfully raises ``UnsupportedSchema`` rather than publishing a looser schema.

``python -m scheduler_core.config.crd [--out DIR]... [--check]`` writes (or checks) the YAML
files; ``crds/``, ``manifests/crds/`` and the Helm chart's ``charts/crd-scheduler/crds/`` are its
output and a unit test fails when they are stale.
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from scheduler_core.config.models import PluginConfigSpec, SchedulerProfileSpec
from scheduler_core.names import GROUP, PLUGIN_CONFIG_KIND, PLUGIN_CONFIG_PLURAL, PROFILE_KIND, PROFILE_PLURAL, VERSION

CATEGORY = "crd-scheduler"
DEFAULT_OUT_DIRS = (Path("crds"), Path("manifests/crds"), Path("charts/crd-scheduler/crds"))
HEADER = "# Generated from scheduler_core/config by `python -m scheduler_core.config.crd`; do not edit.\n"

# Keys of a pydantic JSON schema node that carry over to OpenAPI v3 unchanged.
_PASSTHROUGH = frozenset(
    {"type", "format", "enum", "minimum", "maximum", "minLength", "maxLength", "pattern"}
    | {"minItems", "maxItems", "minProperties", "maxProperties"}
)
_DROPPED = frozenset({"title"})
_SCALAR_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
}


class UnsupportedSchema(ValueError):
    """A model uses a construct that has no faithful structural-schema form."""


# The status the operator writes (scheduler_operator/control/status.py). Optional fields are nullable so
# that a writer may clear them. No room for Kopf's own bookkeeping: the operator's handlers are
# event handlers only, which store no progress, so unknown status fields are pruned like others.


class _Status(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class Condition(_Status):
    """One aspect of the object's state, as in metav1.Condition."""

    type: str = Field(
        min_length=1,
        description="Valid: the spec passed validation (for a profile: its framework could be built). "
        "Ready: the profile is serving pods.",
    )
    status: Literal["True", "False", "Unknown"] = Field(description="True, False or Unknown.")
    reason: str | None = Field(default=None, description="Why the condition last changed, in one CamelCase word.")
    message: str | None = Field(default=None, description="Details for humans.")
    last_transition_time: datetime | None = Field(default=None, description="When the status last changed.")
    observed_generation: int | None = Field(
        default=None, ge=0, description="The metadata.generation the condition was computed for."
    )


class ScheduledPlugin(_Status):
    """A plugin that runs at an extension point."""

    name: str = Field(description="Name of the plugin.")
    weight: int | None = Field(default=None, description="Score weight (score only).")


def _conditions() -> Any:
    return Field(
        default_factory=list,
        description="Latest observations of the object's state; one per type.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


class PluginConfigStatus(_Status):
    """What the operator observed of this PluginConfig."""

    observed_generation: int | None = Field(
        default=None, ge=0, description="The metadata.generation the operator last acted on."
    )
    conditions: list[Condition] = _conditions()
    message: str | None = Field(default=None, description="Why the args are invalid, or where they apply.")


class LastGood(_Status):
    """The last generation that served, kept so a restart or failover serves it again."""

    generation: int | None = Field(default=None, ge=0, description="Its metadata.generation.")
    spec: SchedulerProfileSpec = Field(
        description="Its spec with the namespace's PluginConfigs merged in, as it was built."
    )


class SchedulerProfileStatus(_Status):
    """What the operator observed of this SchedulerProfile."""

    observed_generation: int | None = Field(
        default=None, ge=0, description="The metadata.generation the operator last acted on."
    )
    conditions: list[Condition] = _conditions()
    plugins: dict[str, list[ScheduledPlugin]] | None = Field(
        default=None,
        description="The plugins in service per extension point (keys as in spec.plugins), in order, "
        "after merging with the defaults; unset while no valid generation serves.",
    )
    message: str | None = Field(
        default=None, description="Why the spec is invalid (the last valid one keeps serving), or a summary."
    )
    last_good: LastGood | None = Field(
        default=None, description="The last generation that served; built from at start when the current one fails."
    )


# Translation of pydantic JSON schemas into structural OpenAPI v3 schemas.


def structural_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The structural OpenAPI v3 schema of ``model`` (its camelCase, by-alias form)."""
    schema = model.model_json_schema(by_alias=True, mode="validation")
    defs: dict[str, Any] = schema.pop("$defs", {})
    return _translate(schema, defs, model.__name__)


def _translate(node: Mapping[str, Any], defs: Mapping[str, Any], path: str) -> dict[str, Any]:
    node = dict(node)
    description = node.pop("description", None)
    default = node.pop("default", None)
    for key in _DROPPED:
        node.pop(key, None)
    if "$ref" in node or "allOf" in node:
        out = _translate(_referenced(node, defs, path), defs, path)
    elif "anyOf" in node:
        out = _nullable(node, defs, path)
    else:
        out = _translate_type(node, defs, path)
    # A field's own description first, then its model's docstring.
    description = _join(description, out.pop("description", None))
    if default is not None and _keep_default(out, default, path):
        out["default"] = default
    head = {"description": _clean(description)} if description else {}
    if "type" in out:
        head["type"] = out.pop("type")
    return head | out


def _referenced(node: dict[str, Any], defs: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    ref = node.pop("$ref", None)
    if ref is None:  # allOf: [{$ref}] is how older pydantic attaches a description to a reference
        parts = node.pop("allOf")
        if len(parts) != 1:
            raise UnsupportedSchema(f"{path}: allOf with {len(parts)} parts")
        ref = parts[0]["$ref"]
    if node:
        raise UnsupportedSchema(f"{path}: keys beside $ref: {sorted(node)}")
    target: Mapping[str, Any] = defs[ref.removeprefix("#/$defs/")]
    return target


def _nullable(node: dict[str, Any], defs: Mapping[str, Any], path: str) -> dict[str, Any]:
    branches = node.pop("anyOf")
    if node:
        raise UnsupportedSchema(f"{path}: keys beside anyOf: {sorted(node)}")
    others = [branch for branch in branches if branch != {"type": "null"}]
    if len(others) != 1:
        raise UnsupportedSchema(f"{path}: a union of {len(others)} types has no structural form")
    out = _translate(others[0], defs, path)
    if len(others) < len(branches):
        out["nullable"] = True
    return out


def _translate_type(node: dict[str, Any], defs: Mapping[str, Any], path: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    kind = node.get("type")
    if "const" in node:
        node["enum"] = [node.pop("const")]
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if bound in node:  # JSON Schema 2020-12 numbers; OpenAPI v3.0 flags on minimum/maximum
            out[bound] = True
            node[limit] = node.pop(bound)
    if kind == "object":
        out.update(_translate_object(node, defs, path))
    elif kind == "array":
        out.update(_translate_array(node, defs, path))
    elif kind not in _SCALAR_TYPES:
        raise UnsupportedSchema(f"{path}: type {kind!r} has no structural form")
    for key, value in node.items():
        if key in _PASSTHROUGH or key.startswith("x-kubernetes-"):
            out[key] = value
        elif key not in ("properties", "required", "additionalProperties", "items", "uniqueItems"):
            raise UnsupportedSchema(f"{path}: JSON schema keyword {key!r}")
    return out


def _translate_object(node: dict[str, Any], defs: Mapping[str, Any], path: str) -> dict[str, Any]:
    properties: dict[str, Any] = node.get("properties", {})
    extra = node.get("additionalProperties", not properties)
    if extra == {}:  # values of any type, as `True`
        extra = True
    out: dict[str, Any] = {}
    if properties:
        out["properties"] = {name: _translate(sub, defs, f"{path}.{name}") for name, sub in properties.items()}
        if node.get("required"):
            out["required"] = list(node["required"])
    if properties and extra not in (False, None):
        raise UnsupportedSchema(f"{path}: an object with both properties and extra fields")
    if extra is True:
        out["x-kubernetes-preserve-unknown-fields"] = True
    elif isinstance(extra, dict):
        out["additionalProperties"] = _translate(extra, defs, f"{path}.*")
    return out


def _translate_array(node: dict[str, Any], defs: Mapping[str, Any], path: str) -> dict[str, Any]:
    items = _translate(node.get("items", {}), defs, f"{path}[]")
    out: dict[str, Any] = {"items": items}
    if node.get("uniqueItems"):  # forbidden in CRDs (quadratic); a set list of scalars means the same
        if items.get("type") not in _SCALAR_TYPES:
            raise UnsupportedSchema(f"{path}: unique items that are not scalars")
        out["x-kubernetes-list-type"] = "set"
    return out


def _keep_default(schema: Mapping[str, Any], default: object, path: str) -> bool:
    """Scalar defaults only: object and array defaults would be pruned and re-defaulted in ways
    the model does not mean. The API server rejects a CRD whose defaults do not validate, so a
    model whose default breaks its own constraints fails here, naming the field."""
    kind = schema.get("type", "")
    if kind not in _SCALAR_TYPES:
        return False
    if isinstance(default, bool) != (kind == "boolean") or not isinstance(default, _SCALAR_TYPES[kind]):
        raise UnsupportedSchema(f"{path}: default {default!r} is not of type {kind}")
    broken = (
        ("enum" in schema and default not in schema["enum"])
        or (isinstance(default, int | float) and not _within(default, schema))
        or (isinstance(default, str) and not _fits(len(default), schema.get("minLength"), schema.get("maxLength")))
    )
    if broken:
        raise UnsupportedSchema(f"{path}: default {default!r} does not satisfy the field's own constraints")
    return True


def _fits(length: int, low: int | None, high: int | None) -> bool:
    return (low is None or length >= low) and (high is None or length <= high)


def _within(value: float, schema: Mapping[str, Any]) -> bool:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and (value < low or (value == low and schema.get("exclusiveMinimum"))):
        return False
    return high is None or not (value > high or (value == high and schema.get("exclusiveMaximum")))


def _join(first: str | None, second: str | None) -> str | None:
    parts = [part for part in (first, second) if part]
    return "\n\n".join(parts) or None


def _clean(text: str) -> str:
    """Docstring text as kubectl explain shows it: paragraphs of single lines, `code` in single
    backticks (the reST double backticks of our docstrings read as noise there)."""
    paragraphs = [" ".join(line.strip() for line in block.splitlines()) for block in re.split(r"\n\s*\n", text)]
    return "\n\n".join(paragraph.replace("``", "`") for paragraph in paragraphs if paragraph)


# The two custom resource definitions.


@dataclass(frozen=True)
class Kind:
    """One custom resource kind and how kubectl presents it."""

    kind: str
    plural: str
    short_names: tuple[str, ...]
    description: str
    spec: type[BaseModel]
    status: type[BaseModel]
    columns: tuple[tuple[str, str, str, str], ...]  # name, type, JSONPath, description

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{GROUP}"

    @property
    def file_name(self) -> str:
        return f"{self.plural}.yaml"


def _condition_column(type_: str) -> tuple[str, str, str, str]:
    return (type_, "string", f'.status.conditions[?(@.type=="{type_}")].status', f"Status of the {type_} condition.")


_MESSAGE_COLUMN = ("Message", "string", ".status.message", "The operator's message.")
_AGE_COLUMN = ("Age", "date", ".metadata.creationTimestamp", "Time since creation.")

SCHEDULER_PROFILE = Kind(
    kind=PROFILE_KIND,
    plural=PROFILE_PLURAL,
    short_names=("sp", "schedprof"),
    description="A scheduling profile of crd-scheduler, as a KubeSchedulerProfile of kube-scheduler: pods whose "
    "spec.schedulerName equals spec.schedulerName are scheduled with these plugins. A profile in the operator's "
    "home namespace serves the whole cluster; one in another namespace serves only that namespace's pods and "
    "takes precedence there. Changes apply live, after validation.",
    spec=SchedulerProfileSpec,
    status=SchedulerProfileStatus,
    columns=(
        ("SchedulerName", "string", ".spec.schedulerName", "Pods with this spec.schedulerName use the profile."),
        _condition_column("Valid"),
        _condition_column("Ready"),
        _MESSAGE_COLUMN,
        _AGE_COLUMN,
    ),
)

PLUGIN_CONFIG = Kind(
    kind=PLUGIN_CONFIG_KIND,
    plural=PLUGIN_CONFIG_PLURAL,
    # Not `pc`: that is the short name of the built-in PriorityClass, which kubectl would pick.
    short_names=("pcfg", "plugincfg"),
    description="Arguments for one scheduler plugin, applied to the SchedulerProfiles of this namespace (those "
    "matching spec.profileSelector when set).",
    spec=PluginConfigSpec,
    status=PluginConfigStatus,
    columns=(
        ("Plugin", "string", ".spec.plugin", "The plugin the args are for."),
        _condition_column("Valid"),
        _MESSAGE_COLUMN,
        _AGE_COLUMN,
    ),
)

KINDS = (SCHEDULER_PROFILE, PLUGIN_CONFIG)
_WIDE_ONLY = frozenset({"Message"})  # shown by `kubectl get -o wide`


# The API server publishes these texts for every kind whatever the CRD says; say the same.
_API_VERSION = (
    "APIVersion defines the versioned schema of this representation of an object. Servers should convert "
    "recognized schemas to the latest internal value, and may reject unrecognized values. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
)
_KIND = (
    "Kind is a string value representing the REST resource this object represents. Servers may infer this from "
    "the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)


# Out-of-tree plugins' args stay free-form (no schema to check them against); the API server
# bounds their field count, the operator their depth and size (scheduler_core.tenancy.limits).
MAX_ARGS_FIELDS = 64


@functools.cache
def typed_args_schema() -> dict[str, Any]:
    """The schema of every ``args``: the fields of each in-tree plugin's args model, typed as
    upstream's typed KubeSchedulerConfiguration types them, plus unknown fields for out-of-tree
    plugins, at most :data:`MAX_ARGS_FIELDS`."""
    from scheduler_core.plugins.registry import in_tree_registry

    properties: dict[str, Any] = {}
    owners: dict[str, str] = {}
    for plugin, factory in sorted(in_tree_registry().items()):
        model = getattr(factory, "args_model", None)
        if model is None:
            continue
        for field, sub in structural_schema(model).get("properties", {}).items():
            sub = _args_field(sub, plugin, field)
            if field in properties:
                raise UnsupportedSchema(f"args field {field!r} of {plugin} is also one of {owners[field]}")
            properties[field] = sub
            owners[field] = plugin
    return {
        "description": "The plugin's arguments. Fields of in-tree plugins are typed (the description names the "
        f"plugin); an out-of-tree plugin's are free-form, at most {MAX_ARGS_FIELDS} top-level fields, and are "
        "bounded in depth and size by the operator.",
        "type": "object",
        "properties": properties,
        "maxProperties": MAX_ARGS_FIELDS,
        "x-kubernetes-preserve-unknown-fields": True,
    }


def _args_field(node: Mapping[str, Any], plugin: str, path: str) -> dict[str, Any]:
    """An in-tree args field for the shared ``args`` schema: described (naming the plugin) and
    without defaults, which the API server would otherwise write into every plugin's args."""
    out: dict[str, Any] = {
        "description": f"{plugin} args: {path}." + (f" {node['description']}" if "description" in node else "")
    }
    for key, value in node.items():
        if key in ("description", "default"):
            continue
        if key == "properties":
            out[key] = {name: _args_field(sub, plugin, f"{path}.{name}") for name, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _args_field(value, plugin, f"{path}[]" if key == "items" else f"{path}.*")
        else:
            out[key] = value
    return out


def _with_typed_args(node: Any) -> Any:
    """``node`` with every free-form ``args`` property replaced by :func:`typed_args_schema`."""
    if isinstance(node, list):
        return [_with_typed_args(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {
                name: typed_args_schema() if name == "args" else _with_typed_args(sub) for name, sub in value.items()
            }
        else:
            out[key] = _with_typed_args(value)
    return out


def custom_resource_definition(kind: Kind) -> dict[str, Any]:
    """The apiextensions.k8s.io/v1 CustomResourceDefinition manifest of ``kind``."""
    schema = {
        "description": kind.description,
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"description": _API_VERSION, "type": "string"},
            "kind": {"description": _KIND, "type": "string"},
            "metadata": {"type": "object"},
            "spec": _with_typed_args(structural_schema(kind.spec)),
            "status": _with_typed_args(structural_schema(kind.status)),
        },
    }
    columns = [
        {"name": name, "type": type_, "jsonPath": path, "description": text}
        | ({"priority": 1} if name in _WIDE_ONLY else {})
        for name, type_, path, text in kind.columns
    ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": kind.crd_name, "labels": {"app.kubernetes.io/part-of": "crd-scheduler"}},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": kind.kind,
                "listKind": f"{kind.kind}List",
                "plural": kind.plural,
                "singular": kind.kind.lower(),
                "shortNames": list(kind.short_names),
                "categories": [CATEGORY],
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


class _Dumper(yaml.SafeDumper):
    """Multi-paragraph descriptions as literal blocks, so the files read like the docstrings."""


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)


_Dumper.add_representer(str, _represent_str)


def render(manifest: Mapping[str, Any]) -> str:
    """The YAML text of a generated manifest, byte-for-byte stable."""
    return HEADER + yaml.dump(dict(manifest), Dumper=_Dumper, sort_keys=False, width=120, allow_unicode=True)


def rendered() -> dict[str, str]:
    """File name -> YAML text of every CRD."""
    return dict(_rendered())


@functools.cache
def _rendered() -> dict[str, str]:  # the pure-Python YAML emitter takes a while; the models never change
    return {kind.file_name: render(custom_resource_definition(kind)) for kind in KINDS}


def stale_files(out: Path) -> list[Path]:
    """The generated files under ``out`` that are missing or differ from the models."""
    return [
        out / name
        for name, text in rendered().items()
        if not (out / name).is_file() or (out / name).read_text(encoding="utf-8") != text
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scheduler_core.config.crd",
        description="Generate the CRDs of SchedulerProfile and PluginConfig from the pydantic models.",
    )
    parser.add_argument(
        "--out", action="append", type=Path, metavar="DIR",
        help="folder to write into; repeatable (default: crds/, manifests/crds/, charts/crd-scheduler/crds/)",
    )  # fmt: skip
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file is stale")
    args = parser.parse_args(argv)
    folders: list[Path] = args.out or list(DEFAULT_OUT_DIRS)
    if args.check:
        stale = [path for folder in folders for path in stale_files(folder)]
        for path in stale:
            print(f"stale: {path} (run python -m scheduler_core.config.crd)", file=sys.stderr)
        return 1 if stale else 0
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in rendered().items():
            (folder / name).write_text(text, encoding="utf-8")
            print(folder / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
