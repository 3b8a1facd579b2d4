"""Reading manifests for ``simulate``: files, documents, kinds, defaulting and validation.

Multi-document YAML or JSON (``kubectl get -o yaml`` output included: ``kind: List`` and
typed lists such as ``PodList`` are flattened; a document that is a bare list of objects is
refused, as kubectl refuses it), read within the hostile-input limits. Every
object is validated as the API server would (:mod:`scheduler_core.apivalidation`: kind and
apiVersion, strict decoding, the kind's rules; SchedulerProfiles and PluginConfigs against
their CRD schema, :mod:`scheduler_core.config.schema_check`) before any is used; then Nodes
and Pods are defaulted (:mod:`~scheduler_core.simulator.defaulting`), profiles parsed with the
config models, and the other kinds the scheduler reads carried as plain objects for plugins
(``Handle.objects(kind)``). A known Kubernetes kind the scheduler does not read (a Deployment
makes no pods here) is skipped with a warning; an unknown kind is an error.

A profile or plugin config without a namespace is placed in the home namespace, as an
administrator applies it with ``kubectl apply -n <home>``: there it applies cluster-wide.
All problems of all files are collected and raised together as one :class:`InputError`.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from scheduler_core import apivalidation
from scheduler_core.apivalidation.limits import MAX_DOCUMENT_BYTES, MAX_TOTAL_BYTES, Budget
from scheduler_core.config import PluginConfigSpec, SchedulerProfileSpec, schema_check
from scheduler_core.framework import NodeInfo, PodInfo, manifest
from scheduler_core.names import PLUGIN_CONFIG_KIND, PROFILE_KIND
from scheduler_core.profiles import ProfileKey
from scheduler_core.runtime.build import short_repr
from scheduler_core.simulator import podgroups
from scheduler_core.simulator.defaulting import DEFAULT_NAMESPACE, PriorityClasses, default_node, default_pod
from scheduler_core.simulator.errors import InputError, Problem

DEFAULT_HOME_NAMESPACE = "crd-scheduler"
CLUSTER_SCOPED_KINDS = frozenset(k for k, v in apivalidation.KINDS.items() if not v.namespaced) | frozenset({
    "Node", "Namespace", "PriorityClass", "PersistentVolume", "StorageClass", "CSINode", "CSIDriver",
    "VolumeAttachment", "DeviceClass", "ResourceSlice", "RuntimeClass", "ClusterRole", "ClusterRoleBinding",
    "CustomResourceDefinition",
})  # fmt: skip
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True, slots=True)
class ProfileObject:
    key: ProfileKey
    labels: Mapping[str, str]
    spec: SchedulerProfileSpec
    source: str


@dataclass(frozen=True, slots=True)
class PluginConfigObject:
    namespace: str
    name: str
    spec: PluginConfigSpec
    source: str

    @property
    def what(self) -> str:
        return f"{PLUGIN_CONFIG_KIND} {self.namespace}/{self.name}"


@dataclass(slots=True)
class Cluster:
    """Everything read from the input, defaulted, in input order."""

    nodes: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    profiles: list[ProfileObject] = field(default_factory=list)
    plugin_configs: list[PluginConfigObject] = field(default_factory=list)
    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # SchedulerProfile "namespace/name" -> status.conditions, on a live snapshot (``explain``
    # shows a held pod's profile's own words); empty for files.
    profile_conditions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


@dataclass(slots=True)
class _Raw:
    """One object as read, before its kind is handled."""

    kind: str
    obj: Mapping[str, Any]
    source: str
    where: str  # "document 2" or "document 2, item 3": for objects too broken to name

    @property
    def named(self) -> bool:
        meta = self.obj.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
        return isinstance(name, str) and bool(name)

    def what(self, home_namespace: str) -> str:
        if not self.named:
            return f"{self.kind} ({self.where})"
        meta = self.obj["metadata"]
        name = meta["name"]
        if self.kind in CLUSTER_SCOPED_KINDS:
            return f"{self.kind} {name}"
        namespace = meta.get("namespace")
        if not isinstance(namespace, str) or not namespace:
            namespace = home_namespace if self.kind in (PROFILE_KIND, PLUGIN_CONFIG_KIND) else DEFAULT_NAMESPACE
        return f"{self.kind} {namespace}/{name}"


# -- reading --------------------------------------------------------------------------------


def read_sources(paths: Sequence[str], problems: list[Problem] | None = None) -> list[tuple[str, str]]:
    """(source name, text) for each file; a directory gives its manifest files (recursively),
    "-" stdin. Unreadable files raise :class:`InputError`, or go to ``problems`` if given."""
    texts: list[tuple[str, str]] = []
    collect = problems is not None
    problems = problems if problems is not None else []
    total = 0
    for name in paths:
        if name == "-":
            texts.append(("-", sys.stdin.read(MAX_TOTAL_BYTES + 1)))
            continue
        path = Path(name)
        files = sorted(p for p in path.rglob("*") if p.suffix in MANIFEST_SUFFIXES) if path.is_dir() else [path]
        for file in files:
            try:
                size = file.stat().st_size
                total += size
                if size > MAX_DOCUMENT_BYTES or total > MAX_TOTAL_BYTES:
                    limit = (
                        f"file is larger than {MAX_DOCUMENT_BYTES} bytes"
                        if size > MAX_DOCUMENT_BYTES
                        else (f"the files together are larger than {MAX_TOTAL_BYTES} bytes")
                    )
                    problems.append(Problem(str(file), "", "", limit))
                    continue
                texts.append((str(file), file.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                problems.append(Problem(str(file), "", "", reason))
    if problems and not collect:
        raise InputError(problems)
    return texts


def _documents(source: str, text: str, budget: Budget) -> Iterator[tuple[int, object]]:
    """Documents within the hostile-input limits (:mod:`scheduler_core.apivalidation.limits`)."""
    try:
        documents = apivalidation.load_documents(text, json_only=source.endswith(".json"), budget=budget)
        yield from enumerate(documents, start=1)
    except apivalidation.LimitError as exc:
        raise InputError([Problem(source, "", "", str(exc))]) from None


TOP_LEVEL_LIST = (
    "a document may not be a list of objects (kubectl refuses it too): put each object in a "
    "document of its own, separated by ---, or in the items of a kind: List"
)


def _flatten(
    source: str, where: str, doc: object, problems: list[Problem], in_list: tuple[str, str] | None = None
) -> Iterator[_Raw]:
    """The objects of one document; a List's items (``in_list``: the List's kind and apiVersion).

    As kubectl reads a file (``k8s.io/cli-runtime/pkg/resource/visitor.go``, ``StreamVisitor``;
    ``k8s.io/apimachinery/pkg/apis/meta/v1/unstructured/helpers.go``): a document that is an
    array is refused ("json: cannot unmarshal array into Go value of type
    unstructured.detector"); an item of a typed List (``PodList``, as the API returns it) with
    neither kind nor apiVersion takes the List's apiVersion and its kind without "List"
    (``decodeToList``)."""
    if doc is None:
        return
    if isinstance(doc, list) and in_list is None:
        problems.append(Problem(source, where, "", TOP_LEVEL_LIST))
        return
    if not isinstance(doc, Mapping):
        problems.append(Problem(source, where, "", "must be an object"))
        return
    if in_list is not None and not doc.get("kind") and not doc.get("apiVersion"):
        list_kind, list_version = in_list
        doc = {**doc, "kind": list_kind.removesuffix("List"), "apiVersion": list_version}
    kind = doc.get("kind")
    if not isinstance(kind, str) or not kind:
        problems.append(Problem(source, where, "kind", "Required value"))
        return
    if kind.endswith("List") and "items" in doc:
        items = doc.get("items") or []
        if not isinstance(items, list):
            problems.append(Problem(source, where, "items", "Invalid value: must be an array"))
            return
        version = doc.get("apiVersion")
        if not version:
            problems.append(Problem(source, f"{kind} ({where})", "apiVersion", "Required value"))
        for j, item in enumerate(items, start=1):
            yield from _flatten(source, f"{where}, item {j}", item, problems, (kind, str(version or "")))
        return
    yield _Raw(kind, doc, source, where)


# -- loading --------------------------------------------------------------------------------


def load_files(paths: Sequence[str], *, home_namespace: str = DEFAULT_HOME_NAMESPACE) -> Cluster:
    return load_texts(read_sources(paths), home_namespace=home_namespace)


def load_texts(texts: Sequence[tuple[str, str]], *, home_namespace: str = DEFAULT_HOME_NAMESPACE) -> Cluster:
    """Parse, validate and default; raise :class:`InputError` listing every problem."""
    problems: list[Problem] = []
    cluster = load_valid(parse_texts(texts, problems), home_namespace=home_namespace, problems=problems)
    if problems:
        raise InputError(problems)
    return cluster


def parse_texts(texts: Sequence[tuple[str, str]], problems: list[Problem]) -> list[tuple[str, str, object]]:
    """``(source, where, document)`` for every document; unreadable files go to ``problems``."""
    documents: list[tuple[str, str, object]] = []
    budget = Budget()
    for source, text in texts:
        try:
            documents.extend((source, f"document {i}", doc) for i, doc in _documents(source, text, budget))
        except InputError as exc:
            problems.extend(exc.problems)
    return documents


def load_valid(
    documents: Sequence[tuple[str, str, object]],
    *,
    home_namespace: str = DEFAULT_HOME_NAMESPACE,
    kinds: Collection[str] | None = None,
    problems: list[Problem],
) -> Cluster:
    """The objects that passed; the problems of the others are appended to ``problems``.

    ``kinds`` keeps only objects of those kinds (``validate`` reads SchedulerProfiles and
    PluginConfigs from a GitOps folder and passes over everything else without a word)."""
    raws: list[_Raw] = []
    for source, where, doc in documents:
        raws.extend(_flatten(source, where, doc, problems))
    if kinds is not None:
        raws = [raw for raw in raws if raw.kind in kinds]
    loader = _Loading(home_namespace, problems)
    loader.run(raws)
    return loader.cluster


def load_lists(
    source: str,
    lists: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    home_namespace: str = DEFAULT_HOME_NAMESPACE,
    stored: bool = False,
) -> Cluster:
    """The same as :func:`load_texts` for objects already parsed, by kind (the items of a list
    call, which carry no ``kind``). ``stored``: the Nodes and Pods come from an API server,
    which validated and defaulted them already; they are taken as they are (a 5,000-node
    snapshot would spend seconds on checks the server made). Profiles are checked either way;
    from a live cluster, one that does not pass is a warning and is left out, as the operator
    leaves it out, instead of failing the whole snapshot."""
    problems: list[Problem] = []
    raws = [
        _Raw(kind, obj, source, f"{kind} item {i}")
        for kind, items in lists.items()
        for i, obj in enumerate(items, start=1)
    ]
    loader = _Loading(home_namespace, problems, stored=stored)
    loader.run(raws)
    if problems and stored:  # a live object the operator refuses serves nothing; the rest does
        loader.cluster.warnings.extend(f"{p}: not served" for p in problems)
    elif problems:
        raise InputError(problems)
    return loader.cluster


class _Loading:
    def __init__(self, home_namespace: str, problems: list[Problem], *, stored: bool = False) -> None:
        self.home = home_namespace
        self.problems = problems
        self.stored = stored
        self.cluster = Cluster()
        self._seen: dict[tuple[str, str], str] = {}  # (kind, "ns/name") -> source
        self._pod_uids: set[str] = set()

    def run(self, raws: list[_Raw]) -> None:
        raws = [raw for raw in raws if self._known(raw)]
        for raw in raws:
            _clear_cluster_scoped_namespace(raw)
        # Every object is validated as the API server would before any is used (a live
        # snapshot's objects come from the API server, which validated them already).
        # PriorityClasses resolve pod priorities wherever they appear in the input.
        valid = raws if self.stored else [raw for raw in raws if self._validates(raw)]
        classes = PriorityClasses(
            raw.obj for raw in valid if raw.kind == "PriorityClass" and isinstance(raw.obj.get("metadata"), Mapping)
        )
        for raw in valid:
            if self.stored and raw.kind in ("Node", "Pod"):  # unique by the server's own keys
                (self.cluster.nodes if raw.kind == "Node" else self.cluster.pods).append(dict(raw.obj))
                continue
            what = raw.what(self.home)
            if not self._unique(raw, what):
                continue
            if raw.kind == "Node":
                self._node(raw, what)
            elif raw.kind == "Pod":
                self._pod(raw, what, classes)
            elif raw.kind == PROFILE_KIND:
                self._profile(raw, what)
            elif raw.kind == PLUGIN_CONFIG_KIND:
                self._plugin_config(raw, what)
            else:
                self._other(raw, what)

    def _report(self, raw: _Raw, what: str, found: Sequence[tuple[str, str]]) -> bool:
        self.problems.extend(Problem(raw.source, what, path, reason) for path, reason in found)
        return not found

    def _known(self, raw: _Raw) -> bool:
        """A kind the scheduler reads; a known one it does not read is noted and skipped."""
        if raw.kind in apivalidation.KINDS or raw.kind in (PROFILE_KIND, PLUGIN_CONFIG_KIND):
            return True
        what = raw.what(self.home)
        if raw.kind in apivalidation.IGNORED_KINDS:
            self.cluster.warnings.append(f"{raw.source}: {what}: kind {raw.kind} is ignored by the scheduler")
            return False
        version = raw.obj.get("apiVersion")
        reason = f'no matches for kind "{raw.kind}" in version "{version}"' if version else "kind is not known"
        self.problems.append(Problem(raw.source, what, "kind", reason))
        return False

    def _validates(self, raw: _Raw) -> bool:
        if raw.kind in (PROFILE_KIND, PLUGIN_CONFIG_KIND):
            found = schema_check.check(raw.kind, raw.obj)
        else:
            found = apivalidation.validate(raw.kind, raw.obj)
            if not found:
                raw.obj = apivalidation.normalize(raw.kind, raw.obj)
        return self._report(raw, raw.what(self.home), [(p.field, p.body()) for p in found])

    def _unique(self, raw: _Raw, what: str) -> bool:
        if not raw.named:  # reported by the kind's checks
            return True
        earlier = self._seen.get((raw.kind, what))
        if earlier is not None:
            reason = f"Duplicate value: also defined in {earlier}"
            self.problems.append(Problem(raw.source, what, "metadata.name", reason))
            return False
        self._seen[(raw.kind, what)] = raw.source
        return True

    def _node(self, raw: _Raw, what: str) -> None:
        node = default_node(raw.obj)
        if not self._constructs(raw, what, lambda: NodeInfo(node)):
            return
        allocatable = manifest.status(node).get("allocatable") or {}
        if "pods" not in allocatable:
            self.cluster.warnings.append(
                f"{raw.source}: {what}: status.allocatable.pods is not set: no pod fits it "
                "(the kubelet reports 110 by default)"
            )
        self.cluster.nodes.append(node)

    def _pod(self, raw: _Raw, what: str, classes: PriorityClasses) -> None:
        pod, admission = default_pod(raw.obj, classes)
        if not self._report(raw, what, admission):
            return
        uid = pod["metadata"]["uid"]
        if uid in self._pod_uids:
            self.problems.append(Problem(raw.source, what, "metadata.uid", f"Duplicate value: {uid!r}"))
            return
        if self._constructs(raw, what, lambda: PodInfo(pod)):
            self._pod_uids.add(uid)
            self.cluster.pods.append(pod)

    def _constructs(self, raw: _Raw, what: str, build: Any) -> bool:
        """The scheduler's own parse must succeed too: a last guard against odd shapes."""
        try:
            build()
        except Exception as exc:
            self.problems.append(Problem(raw.source, what, "", f"cannot be read: {exc}"))
            return False
        return True

    def _namespaced_meta(self, raw: _Raw) -> tuple[str, str, Mapping[str, str]]:
        meta = raw.obj["metadata"]
        return meta.get("namespace") or self.home, meta["name"], meta.get("labels") or {}

    def _profile(self, raw: _Raw, what: str) -> None:
        spec = _model(self, raw, what, SchedulerProfileSpec, "spec")
        if spec is None:
            return
        namespace, name, labels = self._namespaced_meta(raw)
        self.cluster.profiles.append(ProfileObject(ProfileKey(namespace, name), labels, spec, raw.source))

    def _plugin_config(self, raw: _Raw, what: str) -> None:
        spec = _model(self, raw, what, PluginConfigSpec, "spec")
        if spec is None:
            return
        namespace, name, _ = self._namespaced_meta(raw)
        self.cluster.plugin_configs.append(PluginConfigObject(namespace, name, spec, raw.source))

    def _other(self, raw: _Raw, what: str) -> None:
        obj = dict(raw.obj)
        meta = obj.get("metadata")
        if raw.kind not in CLUSTER_SCOPED_KINDS and isinstance(meta, Mapping) and not meta.get("namespace"):
            obj["metadata"] = {**meta, "namespace": DEFAULT_NAMESPACE}
        kind = raw.kind
        if kind == podgroups.KIND and (group_key := podgroups.key(obj)) is not None:
            found = podgroups.problems(obj)
            self.problems.extend(Problem(raw.source, what, path, reason) for path, reason in found)
            if found:
                return
            kind = group_key  # the two PodGroup APIs apart, as the gang plugins read them
        self.cluster.objects.setdefault(kind, []).append(obj)


def _clear_cluster_scoped_namespace(raw: _Raw) -> None:
    """The API server clears the namespace of a cluster-scoped object before validating it
    (``k8s.io/apiserver/pkg/registry/rest/create.go``, ``BeforeCreate``:
    ``EnsureObjectNamespaceMatchesRequestNamespace`` in ``rest/meta.go``), so a Node written
    with ``metadata.namespace`` is created, without one."""
    meta = raw.obj.get("metadata")
    if raw.kind in CLUSTER_SCOPED_KINDS and isinstance(meta, Mapping) and "namespace" in meta:
        raw.obj = {**raw.obj, "metadata": {k: v for k, v in meta.items() if k != "namespace"}}


def _model(loading: _Loading, raw: _Raw, what: str, model: type[Any], prefix: str) -> Any:
    """Validate ``spec`` with a config model; paths are reported relative to ``prefix``."""
    spec = raw.obj.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        loading.problems.append(Problem(raw.source, what, "spec", "must be an object"))
        return None
    try:
        return model.model_validate(spec)
    except ValidationError as exc:
        for error in exc.errors():
            path = field_path(prefix, error["loc"])
            reason = "unknown field" if error["type"] == "extra_forbidden" else error["msg"]
            if error["type"] not in ("missing", "extra_forbidden") and not isinstance(error.get("input"), Mapping):
                reason = f"{reason} (got {short_repr(error.get('input'))})"
            loading.problems.append(Problem(raw.source, what, path, reason))
        return None


def field_path(prefix: str, loc: Sequence[int | str]) -> str:
    """``("plugins", "score", "enabled", 0, "name")`` -> ``plugins.score.enabled[0].name``."""
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path = f"{path}.{part}" if path else str(part)
    return path
