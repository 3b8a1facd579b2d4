"""Upstream's scheduler_perf workloads, read from the pinned v1.36.3 sources.

``scripts/dev-cluster build`` puts ``k8s.io/kubernetes@v1.36.3`` in the Go module cache; its
``test/integration/scheduler_perf/**/performance-config.yaml`` files are the workloads. Each
file is a list of test cases (``scheduler_perf.go`` ``testCase``): a ``workloadTemplate`` of
ops, ``workloads`` (variants) with ``params``, ``labels``, ``featureGates`` and ``threshold``,
and the case's own ``featureGates``, ``labels``, ``defaultPodTemplatePath`` and
``schedulerConfigPath``. Paths in a file are relative to its folder (the Go test runs there).

As upstream (``op.UnmarshalJSON``, ``patchParams``, ``unrollWorkloadTemplate``):

* an unknown opcode or an unknown field of an op is an error naming file, case and op;
* ``countParam: $x`` (and ``durationParam``, ``steadyStateParam``, ``maxClaimsPerNodeParam``)
  take the workload's param ``x``; a missing one is an error, and so is a param no op used;
* ``createPodSets`` unrolls into one ``createPods`` per namespace ``<prefix>-<i>``;
* a variant's feature gates are the case's, overridden by the workload's (``featureGatesMerge``);
* a variant runs under a label filter when it has every ``+``/bare label and none of the
  ``-`` ones (``label_selector.go`` ``enabled``), over the case's labels plus the workload's.
"""

from __future__ import annotations

import copy
import os
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

KUBERNETES_VERSION = "v1.36.3"
SCHEDULER_PERF = "test/integration/scheduler_perf"

# Fields each opcode accepts (the Go structs' JSON names; DisallowUnknownFields).
OP_FIELDS: Mapping[str, frozenset[str]] = {
    "createNodes": frozenset({"count", "countParam", "nodeTemplatePath", "nodeAllocatableStrategy",
                              "labelNodePrepareStrategy", "uniqueNodeLabelStrategy"}),
    "createNamespaces": frozenset({"prefix", "count", "countParam", "namespaceTemplatePath"}),
    "createPods": frozenset({"count", "countParam", "steadyState", "steadyStateParam", "duration",
                             "durationParam", "collectMetrics", "namespace", "podTemplatePath",
                             "skipWaitToCompletion", "persistentVolumeTemplatePath",
                             "persistentVolumeClaimTemplatePath"}),
    "createPodSets": frozenset({"count", "countParam", "namespacePrefix", "createPodsOp"}),
    "deletePods": frozenset({"namespace", "labelSelector", "skipWaitToCompletion", "deletePodsPerSecond"}),
    "churn": frozenset({"mode", "number", "intervalMilliseconds", "namespace", "templatePaths"}),
    "barrier": frozenset({"namespaces", "labelSelector", "stageRequirement"}),
    "sleep": frozenset({"duration", "durationParam"}),
    "startCollectingMetrics": frozenset({"name", "namespaces", "labelSelector"}),
    "stopCollectingMetrics": frozenset(),
    "createAny": frozenset({"namespace", "templatePath", "count", "countParam"}),
    "updateAny": frozenset({"namespace", "templatePath", "count", "countParam", "updatePerSecond", "subresources"}),
    "createResourceClaims": frozenset({"count", "countParam", "namespace", "templatePath"}),
    "createResourceDriver": frozenset({"driverName", "maxClaimsPerNode", "maxClaimsPerNodeParam", "nodes"}),
    "allocResourceClaims": frozenset({"namespace"}),
}  # fmt: skip
_PARAM_FIELDS = {"countParam": "count", "durationParam": "duration", "steadyStateParam": "steadyState",
                 "maxClaimsPerNodeParam": "maxClaimsPerNode"}  # fmt: skip
# Params the folder's Go test reads itself (its preRunFn / nodeUpdateFn), not an op.
HOOK_PARAMS: Mapping[str, frozenset[str]] = {"nodedeclaredfeatures": frozenset({"numNodeDeclaredFeatures"})}
_PATH_FIELDS = ("nodeTemplatePath", "podTemplatePath", "templatePath", "namespaceTemplatePath",
                "persistentVolumeTemplatePath", "persistentVolumeClaimTemplatePath")  # fmt: skip


class ConfigError(ValueError):
    """A performance-config file we cannot read as upstream would."""


@dataclass(frozen=True, slots=True)
class Variant:
    """One workload of a test case, e.g. ``SchedulingBasic/5000Nodes_10000Pods``."""

    folder: str  # relative to scheduler_perf, e.g. "misc" or "dra/extendedresource"
    case: str
    name: str
    params: Mapping[str, Any]
    labels: tuple[str, ...]  # the case's and the workload's
    feature_gates: Mapping[str, bool]  # merged
    threshold: float | Mapping[str, float] | None
    ops: tuple[Mapping[str, Any], ...]  # params patched, createPodSets unrolled, paths absolute
    default_pod_template: str | None
    scheduler_config: str | None
    directory: Path
    # The case as read (for :func:`with_params`).
    doc: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    workload: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def full_name(self) -> str:
        return f"{self.case}/{self.name}"

    @property
    def size(self) -> int:
        """How big the variant is: the sum of its integer params (to find the smallest)."""
        return sum(int(v) for v in self.params.values() if isinstance(v, (int, float)) and not isinstance(v, bool))

    def threshold_for(self, topic: str) -> float | None:
        if isinstance(self.threshold, Mapping):
            return self.threshold.get(topic)
        return self.threshold


@dataclass(slots=True)
class TestCase:
    folder: str
    name: str
    variants: list[Variant] = field(default_factory=list)


def scheduler_perf_root(explicit: str | None = None) -> Path:
    """The pinned ``test/integration/scheduler_perf`` folder in the Go module cache."""
    if explicit:
        root = Path(explicit)
    else:
        cache = os.environ.get("GOMODCACHE") or _go_env("GOMODCACHE")
        root = Path(cache) / f"k8s.io/kubernetes@{KUBERNETES_VERSION}" / SCHEDULER_PERF
    if not (root / "misc" / "performance-config.yaml").is_file():
        raise ConfigError(
            f"{root}: no scheduler_perf sources of k8s.io/kubernetes {KUBERNETES_VERSION} "
            "(run scripts/dev-cluster build, which downloads them, or pass --scheduler-perf DIR)"
        )
    return root


def _go_env(name: str) -> str:
    try:
        return subprocess.run(["go", "env", name], check=True, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        raise ConfigError(f"cannot find the Go module cache (go env {name}): {exc}") from exc


def config_files(root: Path) -> list[Path]:
    return sorted(root.rglob("performance-config.yaml"))


def load(root: Path) -> list[TestCase]:
    cases: list[TestCase] = []
    for path in config_files(root):
        cases.extend(load_file(path, root))
    return cases


def load_file(path: Path, root: Path) -> list[TestCase]:
    folder = str(path.parent.relative_to(root))
    try:
        documents = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not YAML: {exc}") from exc
    if not isinstance(documents, list) or not documents:
        raise ConfigError(f"{path}: no test cases defined")
    cases = []
    seen: set[str] = set()
    for doc in documents:
        name = doc.get("name", "")
        where = f"{path}: {name}"
        if name in seen:
            raise ConfigError(f"{where}: name is not unique")
        seen.add(name)
        template = doc.get("workloadTemplate") or []
        if not template:
            raise ConfigError(f"{where}: no ops defined")
        for index, op in enumerate(template):
            _check_op(op, f"{where}: op {index}")
        if not any(op.get("collectMetrics") or op["opcode"] == "stopCollectingMetrics" for op in template):
            raise ConfigError(f"{where}: no op in the workload template collects metrics")
        case = TestCase(folder, name)
        for workload in doc.get("workloads") or []:
            case.variants.append(_variant(path.parent, folder, doc, workload, template, where))
        if not case.variants:
            raise ConfigError(f"{where}: no workloads defined")
        cases.append(case)
    return cases


def _check_op(op: Mapping[str, Any], where: str) -> None:
    opcode = op.get("opcode")
    allowed = OP_FIELDS.get(str(opcode))
    if allowed is None:
        raise ConfigError(f"{where}: unknown opcode {opcode!r}")
    unknown = set(op) - allowed - {"opcode"}
    if unknown:
        raise ConfigError(f"{where} ({opcode}): unknown field(s) {sorted(unknown)}")
    if opcode == "createPods" and op.get("collectMetrics") and op.get("skipWaitToCompletion"):
        raise ConfigError(f"{where}: collectMetrics and skipWaitToCompletion cannot be true at the same time")
    if opcode == "createPodSets":
        _check_op({"opcode": "createPods", **(op.get("createPodsOp") or {})}, where + " createPodsOp")


def _variant(
    directory: Path, folder: str, doc: Mapping[str, Any], workload: Mapping[str, Any],
    template: list[Mapping[str, Any]], where: str,
) -> Variant:  # fmt: skip
    params = dict(workload.get("params") or {})
    used: set[str] = set()
    where = f"{where}/{workload.get('name')}"
    ops: list[Mapping[str, Any]] = []
    for index, raw in enumerate(template):
        op = _patch(raw, params, used, f"{where}: op {index}")
        if op["opcode"] == "createPodSets":
            inner = {"opcode": "createPods", **(op.get("createPodsOp") or {})}
            for i in range(int(op.get("count", 0))):
                ops.append(
                    _absolute(
                        directory, {**_patch(inner, params, used, where), "namespace": f"{op['namespacePrefix']}-{i}"}
                    )
                )
        else:
            ops.append(_absolute(directory, op))
    unused = sorted(set(params) - used - HOOK_PARAMS.get(folder, frozenset()))
    if unused:
        raise ConfigError(f"{where}: the parameters {unused} are defined but unused")
    gates = {**(doc.get("featureGates") or {}), **(workload.get("featureGates") or {})}
    default_pod = doc.get("defaultPodTemplatePath")
    config = doc.get("schedulerConfigPath")
    return Variant(
        folder=folder,
        case=str(doc["name"]),
        name=str(workload["name"]),
        params=params,
        labels=tuple(doc.get("labels") or ()) + tuple(workload.get("labels") or ()),
        feature_gates=gates,
        threshold=workload.get("threshold"),
        ops=tuple(ops),
        default_pod_template=str((directory / default_pod).resolve()) if default_pod else None,
        scheduler_config=str((directory / config).resolve()) if config else None,
        directory=directory,
        doc=doc,
        workload=workload,
    )


def _patch(op: Mapping[str, Any], params: Mapping[str, Any], used: set[str], where: str) -> dict[str, Any]:
    patched = copy.deepcopy(dict(op))
    for param_field, target in _PARAM_FIELDS.items():
        reference = patched.pop(param_field, None)
        if reference is None or reference == "":
            continue
        if not str(reference).startswith("$"):
            raise ConfigError(f"{where}: {param_field} {reference!r} must start with $")
        key = str(reference)[1:]
        used.add(key)
        if key not in params:
            raise ConfigError(f"{where}: parameter {key} is undefined")
        patched[target] = params[key]
    return patched


def _absolute(directory: Path, op: dict[str, Any]) -> dict[str, Any]:
    for name in _PATH_FIELDS:
        if op.get(name):
            op[name] = str((directory / op[name]).resolve())
    if op.get("templatePaths"):
        op["templatePaths"] = [str((directory / p).resolve()) for p in op["templatePaths"]]
    return op


def with_params(variant: Variant, overrides: Mapping[str, Any]) -> Variant:
    """The variant with some params changed (e.g. fewer measured pods for instruction counts)."""
    unknown = sorted(set(overrides) - set(variant.params))
    if unknown:
        raise ConfigError(f"{variant.full_name}: no params {unknown} (has {sorted(variant.params)})")
    workload = {**variant.workload, "params": {**variant.params, **overrides}}
    template = list(variant.doc.get("workloadTemplate") or [])
    where = f"{variant.directory / 'performance-config.yaml'}: {variant.case}"
    return _variant(variant.directory, variant.folder, variant.doc, workload, template, where)


def enabled(selectors: Iterable[str], labels: Iterable[str]) -> bool:
    """``label_selector.go`` ``enabled``: every required label present, no excluded one."""
    have = set(labels)
    for selector in selectors:
        selector = selector.strip()
        if not selector:
            continue
        if selector.startswith("-"):
            if selector[1:] in have:
                return False
        elif selector.lstrip("+") not in have:
            return False
    return True


def variants(cases: Iterable[TestCase]) -> Iterator[Variant]:
    for case in cases:
        yield from case.variants


def smallest(case: TestCase) -> Variant:
    """The case's smallest variant (sum of its integer params); among equals the one with
    queueing hints on, as our scheduler always runs them, then the first."""
    return min(
        case.variants,
        key=lambda v: (v.size, v.feature_gates.get("SchedulerQueueingHints") is False, case.variants.index(v)),
    )


def default_variant(case: TestCase) -> Variant:
    """For the dev-cluster mode: the smallest variant with at least 500 nodes where there is
    one (the issue's default), else the largest there is below it."""

    def nodes(v: Variant) -> int:
        return sum(int(v.params[k]) for k in v.params if "node" in k.lower() and isinstance(v.params[k], int))

    big = [v for v in case.variants if nodes(v) >= 500]
    if big:
        return min(big, key=lambda v: (nodes(v), v.size, v.feature_gates.get("SchedulerQueueingHints") is False))
    return max(case.variants, key=lambda v: (nodes(v), v.size))
