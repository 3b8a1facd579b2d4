"""Shared pieces for the simulator tests: manifests as YAML text, and a one-call simulate."""

from __future__ import annotations

from typing import Any

import yaml

from scheduler_core.simulator import Cluster, Simulation, load_texts, simulate
from scheduler_core.simulator.report import PodReport

PROFILE_API = "scheduling.crd-scheduler.io/v1alpha1"


def dump(*objects: Any) -> str:
    return yaml.dump_all(objects, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False)


def load(*objects: Any, source: str = "in.yaml", home_namespace: str = "crd-scheduler") -> Cluster:
    return load_texts([(source, dump(*objects))], home_namespace=home_namespace)


def profile(name: str, namespace: str | None = "crd-scheduler", **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": PROFILE_API, "kind": "SchedulerProfile", "metadata": meta, "spec": spec}


def plugin_config(name: str, plugin: str, args: dict[str, Any], namespace: str = "crd-scheduler") -> dict[str, Any]:
    return {
        "apiVersion": PROFILE_API,
        "kind": "PluginConfig",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"plugin": plugin, "args": args},
    }


def most_allocated(name: str = "packing", namespace: str = "crd-scheduler") -> dict[str, Any]:
    return profile(
        name,
        namespace,
        schedulerName="crd-scheduler",
        plugins={"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}},
        pluginConfig=[{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}],
    )


def run(*objects: Any, seed: int = 0) -> Simulation:
    return simulate(load(*objects), seed=seed)


def by_name(result: Simulation) -> dict[str, PodReport]:
    return {r.name: r for r in result.pods}
