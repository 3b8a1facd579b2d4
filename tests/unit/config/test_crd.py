"""The CRD generator: fresh files, structural schemas, faithful translation of the models.

Structural-schema rules are those of the apiextensions docs ("Specifying a structural schema",
"Defaulting", "Validation"); tests/e2e/test_crds.py proves the result on a real API server.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pytest
import yaml
from pydantic import BaseModel, ConfigDict, Field

from scheduler_core.config import crd
from scheduler_core.config.crd import PLUGIN_CONFIG, SCHEDULER_PROFILE, UnsupportedSchema, structural_schema
from scheduler_operator.control import status

ROOT = Path(__file__).resolve().parents[3]
FORBIDDEN_KEYS = {"$ref", "$defs", "anyOf", "allOf", "oneOf", "not", "title", "const", "uniqueItems"}


def _schema(kind: crd.Kind) -> dict[str, Any]:
    root: dict[str, Any] = crd.custom_resource_definition(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return root


def _nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from _nodes(sub, f"{path}.{name}")
    if "items" in schema:
        yield from _nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _nodes(schema["additionalProperties"], f"{path}.*")


def _at(kind: crd.Kind, path: str) -> dict[str, Any]:
    return dict(_nodes(_schema(kind)))[path]


# The files.


@pytest.mark.parametrize("folder", ["crds", "manifests/crds", "charts/crd-scheduler/crds"])
def test_generated_files_are_current(folder: str) -> None:
    assert crd.stale_files(ROOT / folder) == [], "stale CRDs: run python -m scheduler_core.config.crd"


def test_cli_writes_the_files_and_check_finds_them_current(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b" / "c"

    written = crd.main(["--out", str(first), "--out", str(second)])

    assert written == 0
    for folder in (first, second):
        assert sorted(p.name for p in folder.iterdir()) == ["pluginconfigs.yaml", "schedulerprofiles.yaml"]
        assert {p.name: p.read_text() for p in folder.iterdir()} == crd.rendered()
    assert crd.main(["--check", "--out", str(first), "--out", str(second)]) == 0


@pytest.mark.parametrize(
    ("damage", "stale"),
    [
        pytest.param(lambda f: (f / "pluginconfigs.yaml").write_text("#\n"), ["pluginconfigs.yaml"], id="edited"),
        pytest.param(lambda f: (f / "schedulerprofiles.yaml").unlink(), ["schedulerprofiles.yaml"], id="missing"),
    ],
)
def test_check_names_the_stale_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Any, stale: list[str]
) -> None:
    crd.main(["--out", str(tmp_path)])
    damage(tmp_path)
    capsys.readouterr()

    code = crd.main(["--check", "--out", str(tmp_path)])

    assert code == 1
    assert crd.stale_files(tmp_path) == [tmp_path / name for name in stale]
    assert [line.split()[1] for line in capsys.readouterr().err.splitlines()] == [str(tmp_path / n) for n in stale]


def test_rendered_yaml_reads_back_as_the_manifest() -> None:
    for kind in crd.KINDS:
        text = crd.rendered()[kind.file_name]
        assert text.startswith(crd.HEADER)
        assert yaml.safe_load(text) == crd.custom_resource_definition(kind)


# Names, versions, columns.


@pytest.mark.parametrize(
    ("kind", "name", "plural", "singular", "short_names"),
    [
        pytest.param(SCHEDULER_PROFILE, "schedulerprofiles.scheduling.crd-scheduler.io", "schedulerprofiles",
                     "schedulerprofile", ["sp", "schedprof"], id="profile"),
        pytest.param(PLUGIN_CONFIG, "pluginconfigs.scheduling.crd-scheduler.io", "pluginconfigs",
                     "pluginconfig", ["pcfg", "plugincfg"], id="plugin-config"),
    ],
)  # fmt: skip
def test_names_and_version(kind: crd.Kind, name: str, plural: str, singular: str, short_names: list[str]) -> None:
    manifest = crd.custom_resource_definition(kind)
    spec = manifest["spec"]

    assert manifest["metadata"]["name"] == name
    assert spec["group"] == "scheduling.crd-scheduler.io"
    assert spec["scope"] == "Namespaced"
    assert spec["names"] == {
        "kind": kind.kind,
        "listKind": f"{kind.kind}List",
        "plural": plural,
        "singular": singular,
        "shortNames": short_names,
        "categories": ["crd-scheduler"],
    }
    [version] = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}


def test_short_names_avoid_built_in_ones() -> None:
    # kubectl resolves a short name to a built-in resource first: `pc` is PriorityClass.
    built_in = {"pc", "po", "pv", "pvc", "sa", "sc", "svc", "cm", "cs", "ds", "ep", "ev", "ns", "no", "rs", "sts"}
    assert not {name for kind in crd.KINDS for name in kind.short_names} & built_in


@pytest.mark.parametrize(
    ("kind", "columns"),
    [
        pytest.param(SCHEDULER_PROFILE, [
            ("SchedulerName", "string", ".spec.schedulerName", 0),
            ("Valid", "string", '.status.conditions[?(@.type=="Valid")].status', 0),
            ("Ready", "string", '.status.conditions[?(@.type=="Ready")].status', 0),
            ("Message", "string", ".status.message", 1),
            ("Age", "date", ".metadata.creationTimestamp", 0),
        ], id="profile"),
        pytest.param(PLUGIN_CONFIG, [
            ("Plugin", "string", ".spec.plugin", 0),
            ("Valid", "string", '.status.conditions[?(@.type=="Valid")].status', 0),
            ("Message", "string", ".status.message", 1),
            ("Age", "date", ".metadata.creationTimestamp", 0),
        ], id="plugin-config"),
    ],
)  # fmt: skip
def test_printer_columns(kind: crd.Kind, columns: list[tuple[str, str, str, int]]) -> None:
    [version] = crd.custom_resource_definition(kind)["spec"]["versions"]
    found = [(c["name"], c["type"], c["jsonPath"], c.get("priority", 0)) for c in version["additionalPrinterColumns"]]

    assert found == columns
    assert all(c["description"] for c in version["additionalPrinterColumns"])


# Structural-schema rules, checked over every node.


@pytest.mark.parametrize("kind", crd.KINDS, ids=lambda kind: kind.kind)
def test_schema_is_structural(kind: crd.Kind) -> None:
    for path, node in _nodes(_schema(kind)):
        assert not FORBIDDEN_KEYS & node.keys(), path
        assert "type" in node or node.get("x-kubernetes-preserve-unknown-fields"), f"{path}: no type"
        assert not ("properties" in node and "additionalProperties" in node), path
        assert node.get("additionalProperties") not in (True, False), path
        if node.get("type") == "object" and "properties" not in node and "additionalProperties" not in node:
            assert path == ".metadata" or node.get("x-kubernetes-preserve-unknown-fields"), f"{path}: prunes all"


@pytest.mark.parametrize("kind", crd.KINDS, ids=lambda kind: kind.kind)
def test_every_field_is_described(kind: crd.Kind) -> None:
    undescribed = [
        path
        for path, node in _nodes(_schema(kind))
        if not node.get("description") and path != ".metadata" and not path.endswith(".*")
    ]
    assert undescribed == []


@pytest.mark.parametrize("kind", crd.KINDS, ids=lambda kind: kind.kind)
def test_defaults_are_scalars_that_validate(kind: crd.Kind) -> None:
    defaults = {path: node for path, node in _nodes(_schema(kind)) if "default" in node}

    for path, node in defaults.items():
        value = node["default"]
        assert isinstance(value, str | int | float | bool), path
        assert len(value) >= node.get("minLength", 0) if isinstance(value, str) else True, path
    assert {path: node["default"] for path, node in defaults.items()} == (
        {".spec.schedulerName": "crd-scheduler", ".status.lastGood.spec.schedulerName": "crd-scheduler"}
        if kind is SCHEDULER_PROFILE
        else {}
    )


@pytest.mark.parametrize(
    ("kind", "path", "expected"),
    [
        pytest.param(SCHEDULER_PROFILE, ".spec.percentageOfNodesToScore",
                     {"type": "integer", "minimum": 0, "maximum": 100, "nullable": True}, id="optional-bounded-int"),
        pytest.param(SCHEDULER_PROFILE, ".spec.schedulerName",
                     {"type": "string", "minLength": 1, "default": "crd-scheduler"}, id="string-with-default"),
        pytest.param(SCHEDULER_PROFILE, ".spec.pluginConfig[].args",
                     {"type": "object", "x-kubernetes-preserve-unknown-fields": True}, id="free-form-args"),
        pytest.param(SCHEDULER_PROFILE, ".spec.pluginConfig[]",
                     {"type": "object", "required": ["name"]}, id="required-name"),
        pytest.param(SCHEDULER_PROFILE, ".spec.plugins.score.enabled[].weight",
                     {"type": "integer", "nullable": True}, id="optional-weight"),
        pytest.param(SCHEDULER_PROFILE, ".spec.plugins.multiPoint.disabled[].name",
                     {"type": "string", "minLength": 1}, id="plugin-name"),
        pytest.param(SCHEDULER_PROFILE, ".spec.plugins", {"type": "object"}, id="nested-model-without-default"),
        pytest.param(PLUGIN_CONFIG, ".spec.profileSelector", {"type": "object", "nullable": True},
                     id="optional-model"),
        pytest.param(PLUGIN_CONFIG, ".spec.profileSelector.matchLabels",
                     {"type": "object", "additionalProperties": {"type": "string"}}, id="string-map"),
        pytest.param(PLUGIN_CONFIG, ".spec", {"type": "object", "required": ["plugin"]}, id="required-plugin"),
        pytest.param(PLUGIN_CONFIG, "", {"type": "object", "required": ["spec"]}, id="required-spec"),
        pytest.param(SCHEDULER_PROFILE, ".status.conditions",
                     {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
                     id="conditions-map"),
        pytest.param(SCHEDULER_PROFILE, ".status.conditions[]", {"required": ["type", "status"]},
                     id="condition-keys"),
        pytest.param(SCHEDULER_PROFILE, ".status.conditions[].status",
                     {"type": "string", "enum": ["True", "False", "Unknown"]}, id="condition-status"),
        pytest.param(SCHEDULER_PROFILE, ".status.conditions[].lastTransitionTime",
                     {"type": "string", "format": "date-time", "nullable": True}, id="transition-time"),
        pytest.param(SCHEDULER_PROFILE, ".status.observedGeneration",
                     {"type": "integer", "minimum": 0, "nullable": True}, id="observed-generation"),
        pytest.param(SCHEDULER_PROFILE, ".status.plugins.*[].weight", {"type": "integer", "nullable": True},
                     id="status-plugins"),
        pytest.param(PLUGIN_CONFIG, ".status", {"type": "object"}, id="status-prunes-unknown-fields"),
    ],
)  # fmt: skip
def test_translated_node(kind: crd.Kind, path: str, expected: dict[str, Any]) -> None:
    node = _at(kind, path)

    assert {key: node.get(key) for key in expected} == expected
    if "default" not in expected:
        assert "default" not in node
    if "x-kubernetes-preserve-unknown-fields" not in expected:
        assert "x-kubernetes-preserve-unknown-fields" not in node


NOW = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
SERVED: dict[str, list[dict[str, object]]] = {
    "queueSort": [{"name": "PrioritySort"}],
    "score": [{"name": "NodeResourcesFit", "weight": 5}],
}


@pytest.mark.parametrize(
    ("kind", "written"),
    [
        pytest.param(SCHEDULER_PROFILE, status.profile_status(
            generation=3, problems=[], serving_generation=3, plugins=SERVED, previous=None, now=NOW), id="serving"),
        pytest.param(SCHEDULER_PROFILE, status.profile_status(
            generation=4, problems=["spec.plugins.score.enabled[0].name: unknown plugin"], serving_generation=3,
            plugins=SERVED, previous=None, now=NOW), id="invalid-last-good-serving"),
        pytest.param(SCHEDULER_PROFILE, status.profile_status(
            generation=1, problems=["bad"], serving_generation=None, plugins=None, previous=None, now=NOW),
            id="never-valid"),
        pytest.param(PLUGIN_CONFIG, status.plugin_config_status(
            generation=2, problems=["args.x: bad"], unknown_plugin=False, profiles=[], previous=None, now=NOW),
            id="invalid-args"),
    ],
)  # fmt: skip
def test_the_operators_status_fits_the_schema(kind: crd.Kind, written: dict[str, Any]) -> None:
    # The contract with scheduler_operator/control/status.py: what it writes, the status model (the
    # source of the status schema) accepts and reads back unchanged.
    parsed = kind.status.model_validate(written)

    assert parsed.model_dump(by_alias=True, mode="json", exclude_none=True) == _without_nones(written)


def _without_nones(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_nones(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nones(item) for item in value]
    return value


def test_plugin_config_status_has_no_plugins() -> None:
    assert set(_at(PLUGIN_CONFIG, ".status")["properties"]) == {"observedGeneration", "conditions", "message"}
    assert set(_at(SCHEDULER_PROFILE, ".status")["properties"]) == {
        "observedGeneration", "conditions", "plugins", "message", "lastGood",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "path", "description"),
    [
        pytest.param(SCHEDULER_PROFILE, ".spec.plugins.score",
                     "Score plugins, with weights.\n\nPlugins enabled and disabled at one extension point. A disabled "
                     "name `*` disables all default plugins of the point; enabled plugins run after the remaining "
                     "defaults, in order.", id="field-then-model-docstring"),
        pytest.param(SCHEDULER_PROFILE, ".spec",
                     "A scheduling profile: which plugins run at which extension points, with which args.",
                     id="spec-docstring"),
        pytest.param(SCHEDULER_PROFILE, ".spec.plugins.score.enabled[]",
                     "A plugin by name, with its score weight where it scores.", id="item-docstring"),
        pytest.param(PLUGIN_CONFIG, ".spec.profileSelector",
                     "Only profiles of this namespace whose labels match; all when unset.\n\n"
                     "A label selector (matchLabels only).", id="optional-model"),
    ],
)  # fmt: skip
def test_descriptions_come_from_the_models(kind: crd.Kind, path: str, description: str) -> None:
    assert _at(kind, path)["description"] == description


# The translator on small models: what maps, and what is refused rather than loosened.


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Inner(_Strict):
    """Inner."""

    x: int = 0


class _Mapped(_Strict):
    """Docstring of ``Mapped``,
    over two lines."""

    maybe: str | None = Field(default=None, description="An optional string.")
    mode: Literal["A", "B"] = "A"
    only: Literal["fixed"] = "fixed"
    positive: float = Field(default=1.5, gt=0, lt=10)
    flag: bool = True
    tags: set[str] = Field(default_factory=set)
    inner: _Inner = Field(default_factory=_Inner)
    listed: list[int] = [1, 2]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param("", {"description": "Docstring of `Mapped`, over two lines.", "type": "object"},
                     id="docstring-cleaned"),
        pytest.param(".maybe", {"description": "An optional string.", "type": "string", "nullable": True},
                     id="optional-to-nullable-null-default-dropped"),
        pytest.param(".mode", {"type": "string", "enum": ["A", "B"], "default": "A"}, id="literal-to-enum"),
        pytest.param(".only", {"type": "string", "enum": ["fixed"], "default": "fixed"}, id="const-to-enum"),
        pytest.param(".positive", {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 10,
                                   "exclusiveMaximum": True, "default": 1.5}, id="exclusive-bounds"),
        pytest.param(".flag", {"type": "boolean", "default": True}, id="boolean-default"),
        pytest.param(".tags", {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                     id="unique-items-to-set"),
        pytest.param(".inner", {"description": "Inner.", "type": "object"}, id="model-default-dropped"),
        pytest.param(".listed", {"type": "array", "items": {"type": "integer"}}, id="list-default-dropped"),
    ],
)  # fmt: skip
def test_translation(path: str, expected: dict[str, Any]) -> None:
    node = dict(_nodes(structural_schema(_Mapped)))[path]

    assert {key: value for key, value in node.items() if key != "properties"} == expected


def _model(annotation: Any, default: Any = None, *, extra: Literal["forbid", "allow"] = "forbid") -> type[BaseModel]:
    namespace = {"__annotations__": {"field": annotation}, "model_config": ConfigDict(extra=extra)}
    if default is not None:
        namespace["field"] = default
    return type("Model", (BaseModel,), namespace)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        pytest.param(_model(int | str), "Model.field: a union of 2 types has no structural form", id="union"),
        pytest.param(_model(Any), "Model.field: type None has no structural form", id="any"),
        pytest.param(_model(int, Field(default=0, ge=1)), "Model.field: default 0 does not satisfy", id="bad-default"),
        pytest.param(_model(int, extra="allow"), "Model: an object with both properties and extra fields",
                     id="open-model"),
        pytest.param(_model(list[_Inner], Field(default_factory=list, json_schema_extra={"uniqueItems": True})),
                     "Model.field: unique items that are not scalars", id="unique-objects"),
    ],
)  # fmt: skip
def test_untranslatable_models_are_refused(model: type[BaseModel], message: str) -> None:
    with pytest.raises(UnsupportedSchema) as refused:
        structural_schema(model)

    assert str(refused.value).startswith(message)


def test_args_are_typed_for_in_tree_plugins_bounded_and_never_defaulted() -> None:
    for kind, path in ((PLUGIN_CONFIG, ".spec.args"), (SCHEDULER_PROFILE, ".spec.pluginConfig[].args")):
        args = _at(kind, path)
        assert args["x-kubernetes-preserve-unknown-fields"] is True and args["maxProperties"] == crd.MAX_ARGS_FIELDS
        assert args["properties"]["addedAffinity"]["type"] == "object"
        assert args["properties"]["scoringStrategy"]["properties"]["type"]["type"] == "string"
        assert args["properties"]["bindTimeoutSeconds"]["type"] == "integer"
        # A default would be written into the args of every plugin, in-tree or not.
        assert not [p for p, node in _nodes(args) if "default" in node]


@pytest.mark.parametrize(
    "path",
    [".spec.plugins.filter.enabled", ".spec.plugins.filter.disabled", ".spec.pluginConfig",
     ".spec.tenantPolicy.allowDisabling", ".spec.tenantPolicy.allowedPlugins"],
)  # fmt: skip
def test_lists_are_bounded(path: str) -> None:
    assert _at(SCHEDULER_PROFILE, path)["maxItems"] == 64
