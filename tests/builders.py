"""Small builders for pods and nodes in tests: plain manifests, as the API would hold them."""

from __future__ import annotations

import itertools
from typing import Any

from scheduler_core.framework import NodeInfo, PodInfo

_uid = itertools.count(1)


def pod(
    name: str = "p",
    namespace: str = "default",
    *,
    cpu: str | None = None,
    memory: str | None = None,
    requests: dict[str, Any] | None = None,
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    node_name: str | None = None,
    node_selector: dict[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    priority: int | None = None,
    scheduler_name: str = "crd-scheduler",
    overhead: dict[str, str] | None = None,
    host_ports: list[int] | None = None,
    uid: str | None = None,
    **spec_extra: Any,
) -> dict[str, Any]:
    """A pod manifest. ``cpu``/``memory``/``requests`` go to one container."""
    reqs = dict(requests or {})
    if cpu is not None:
        reqs["cpu"] = cpu
    if memory is not None:
        reqs["memory"] = memory
    if containers is None:
        container: dict[str, Any] = {"name": "c", "image": "pause"}
        if reqs:
            container["resources"] = {"requests": reqs}
        if host_ports:
            container["ports"] = [{"containerPort": p, "hostPort": p} for p in host_ports]
        containers = [container]
    spec: dict[str, Any] = {"containers": containers, "schedulerName": scheduler_name}
    if init_containers:
        spec["initContainers"] = init_containers
    if node_name:
        spec["nodeName"] = node_name
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity:
        spec["affinity"] = affinity
    if tolerations:
        spec["tolerations"] = tolerations
    if priority is not None:
        spec["priority"] = priority
    if overhead:
        spec["overhead"] = overhead
    spec.update(spec_extra)
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"uid-{next(_uid)}"}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def pod_info(name: str = "p", **kwargs: Any) -> PodInfo:
    return PodInfo(pod(name, **kwargs))


def node(
    name: str = "n",
    *,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: str | int = "110",
    extra: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
    images: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A node manifest with ``status.allocatable``."""
    alloc: dict[str, Any] = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    alloc.update(extra or {})
    meta: dict[str, Any] = {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    status: dict[str, Any] = {"allocatable": alloc, "capacity": dict(alloc)}
    if images:
        status["images"] = images
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": status}


def node_info(name: str = "n", *, pods_on_node: list[dict[str, Any]] | None = None, **kwargs: Any) -> NodeInfo:
    info = NodeInfo(node(name, **kwargs))
    for p in pods_on_node or ():
        info.add_pod(PodInfo(p))
    return info
