"""Random pod specs: containers and requests, tolerations, node and pod affinity, spreading.

Every builder takes the scenario's ``random.Random`` and the set of enabled features, and only
writes fields of enabled features; what it writes is valid for the API server (requests equal
limits for extended resources, pod-level requests covering the containers', one spread
constraint per topology key and policy, ...), so that a scenario is never refused at creation.
"""

from __future__ import annotations

import random
from collections.abc import Set
from typing import Any

from bench.parity_harness import vocabulary as v

Json = dict[str, Any]

# (value, weight): mostly requests that fit somewhere, sometimes ones that fit nowhere.
CPU_MILLIS = (
    (0, 2),
    (50, 2),
    (100, 4),
    (250, 4),
    (500, 4),
    (750, 2),
    (1000, 3),
    (1500, 2),
    (2000, 1),
    (3000, 1),
    (6000, 1),
)
MEMORY_MIB = ((0, 2), (64, 2), (128, 4), (256, 4), (512, 4), (1024, 3), (2048, 2), (4096, 1), (12288, 1))


def _weighted(rng: random.Random, table: tuple[tuple[int, int], ...]) -> int:
    return rng.choices([value for value, _ in table], [weight for _, weight in table])[0]


def _requests(rng: random.Random, features: Set[str], scale: float) -> Json:
    requests: Json = {}
    cpu = _weighted(rng, CPU_MILLIS)
    memory = _weighted(rng, MEMORY_MIB)
    if cpu and rng.random() < 0.9:
        requests["cpu"] = f"{max(1, int(cpu * scale))}m"
    if memory and rng.random() < 0.9:
        requests["memory"] = f"{max(1, int(memory * scale))}Mi"
    if "ephemeral_storage" in features and rng.random() < 0.25:
        requests["ephemeral-storage"] = f"{rng.choice((1, 5, 20, 60))}Gi"
    return requests


def _image(rng: random.Random, features: Set[str]) -> str:
    if "images" in features and rng.random() < 0.85:
        return rng.choice(v.IMAGES)[0]
    return "registry.k8s.io/pause:3.10"


def container(rng: random.Random, features: Set[str], name: str, *, scale: float = 1.0) -> Json:
    spec: Json = {"name": name, "image": _image(rng, features)}
    requests = _requests(rng, features, scale)
    resources: Json = {}
    if requests:
        resources["requests"] = requests
    if "extended_resources" in features and rng.random() < 0.15:
        count = str(rng.choice((1, 1, 2, 3)))
        resources.setdefault("requests", {})[v.EXTENDED_RESOURCE] = count
        resources["limits"] = {v.EXTENDED_RESOURCE: count}  # extended resources: limits == requests
    if resources:
        spec["resources"] = resources
    if "host_ports" in features and rng.random() < 0.35:
        spec["ports"] = _ports(rng)
    return spec


def _ports(rng: random.Random) -> list[Json]:
    ports: list[Json] = []
    seen: set[tuple[int, str, str]] = set()
    for _ in range(rng.choice((1, 1, 2))):
        port, protocol, host_ip = rng.choice(v.HOST_PORTS), rng.choice(v.PROTOCOLS), rng.choice(v.HOST_IPS)
        if (port, protocol, host_ip) in seen:
            continue
        seen.add((port, protocol, host_ip))
        entry: Json = {"containerPort": port, "hostPort": port, "protocol": protocol}
        if host_ip:
            entry["hostIP"] = host_ip
        ports.append(entry)
    return ports


def containers(rng: random.Random, features: Set[str], *, scale: float = 1.0) -> Json:
    """``containers`` (and, with the feature, ``initContainers``) of a pod spec."""
    spec: Json = {
        "containers": [container(rng, features, f"c{i}", scale=scale) for i in range(rng.choice((1, 1, 2, 3)))]
    }
    if "host_ports" in features:
        _drop_duplicate_host_ports(spec["containers"])
    if "init_containers" in features and rng.random() < 0.4:
        inits = []
        for i in range(rng.choice((1, 2))):
            init = container(rng, features - {"host_ports"}, f"init{i}", scale=scale * rng.choice((0.5, 1.0, 2.0)))
            if rng.random() < 0.4:
                init["restartPolicy"] = "Always"  # a sidecar: runs beside the app containers
            inits.append(init)
        spec["initContainers"] = inits
    return spec


def _drop_duplicate_host_ports(specs: list[Json]) -> None:
    """The API refuses a pod naming the same hostPort/protocol/hostIP twice."""
    seen: set[tuple[int, str, str]] = set()
    for spec in specs:
        kept = []
        for port in spec.get("ports", ()):
            key = (port["hostPort"], port["protocol"], port.get("hostIP", ""))
            if key not in seen:
                seen.add(key)
                kept.append(port)
        if kept:
            spec["ports"] = kept
        else:
            spec.pop("ports", None)


def inline_disks(rng: random.Random, spec: Json) -> None:
    """One or two inline volumes of the kinds VolumeRestrictions checks, into ``spec.volumes``."""
    volumes: list[Json] = []
    for i in range(rng.choice((1, 1, 2))):
        read_only = rng.random() < 0.4
        kind = rng.choice(("gce", "ebs", "iscsi", "rbd"))
        if kind == "gce":
            source: Json = {"gcePersistentDisk": {"pdName": rng.choice(v.GCE_DISKS), "readOnly": read_only}}
        elif kind == "ebs":
            source = {"awsElasticBlockStore": {"volumeID": rng.choice(v.EBS_VOLUMES), "readOnly": read_only}}
        elif kind == "iscsi":
            iqn = rng.choice(v.ISCSI_IQNS)
            source = {"iscsi": {"targetPortal": "10.0.0.9:3260", "iqn": iqn, "lun": 0, "readOnly": read_only}}
        else:
            monitors = rng.sample(v.RBD_MONITORS, rng.choice((1, 2)))
            source = {"rbd": {"monitors": monitors, "image": rng.choice(v.RBD_IMAGES), "readOnly": read_only}}
        volumes.append({"name": f"disk{i}", **source})
    spec["volumes"] = volumes


def pod_level_resources(rng: random.Random, spec: Json) -> None:
    """``spec.resources.requests`` (cpu, memory) at or above the containers' sum, as validation wants
    (init containers are added in full: an upper bound of what they need)."""
    totals = {"cpu": 0, "memory": 0}
    for item in [*spec["containers"], *spec.get("initContainers", ())]:
        own = (item.get("resources") or {}).get("requests") or {}
        totals["cpu"] += int(own.get("cpu", "0m").rstrip("m"))
        totals["memory"] += int(own.get("memory", "0Mi").removesuffix("Mi"))
    requests: Json = {}
    if rng.random() < 0.8:
        requests["cpu"] = f"{totals['cpu'] + rng.choice((0, 100, 500, 2000))}m"
    if rng.random() < 0.8:
        requests["memory"] = f"{totals['memory'] + rng.choice((0, 256, 1024))}Mi"
    if any(value not in ("0m", "0Mi") for value in requests.values()):
        spec["resources"] = {"requests": {k: val for k, val in requests.items() if val not in ("0m", "0Mi")}}


def labels(rng: random.Random) -> dict[str, str]:
    result: dict[str, str] = {}
    if rng.random() < 0.85:
        result[v.APP] = rng.choice(v.APPS)
    if rng.random() < 0.5:
        result[v.TRACK] = rng.choice(v.TRACKS)
    return result


def tolerations(rng: random.Random, features: Set[str]) -> list[Json]:
    result: list[Json] = []
    if "taints" in features:
        for _ in range(rng.choice((0, 1, 2, 2, 3))):
            result.append(_toleration(rng))
        if rng.random() < 0.03:
            result.append({"operator": "Exists"})  # tolerates every taint
    if "unschedulable" in features and rng.random() < 0.25:
        result.append({"key": v.UNSCHEDULABLE_TAINT, "operator": "Exists", "effect": "NoSchedule"})
    return result


def _toleration(rng: random.Random) -> Json:
    key = rng.choice(v.TAINT_KEYS)
    effect = rng.choice((*v.TAINT_EFFECTS, ""))
    toleration: Json = {"key": key}
    if rng.random() < 0.35:
        toleration["operator"] = "Exists"
    else:
        toleration["operator"] = "Equal"
        toleration["value"] = rng.choice(v.TAINT_VALUES)
    if effect:
        toleration["effect"] = effect
    if effect == "NoExecute" and rng.random() < 0.3:
        toleration["tolerationSeconds"] = 60
    return toleration


def _node_requirement(rng: random.Random) -> Json:
    kind = rng.random()
    if kind < 0.3:
        return {
            "key": v.ZONE,
            "operator": rng.choice(("In", "NotIn")),
            "values": rng.sample(v.ZONES, rng.choice((1, 2))),
        }
    if kind < 0.5:
        return {"key": v.DISK, "operator": rng.choice(("In", "NotIn")), "values": [rng.choice(v.DISKS)]}
    if kind < 0.7:
        return {"key": v.TIER, "operator": rng.choice(("Gt", "Lt")), "values": [rng.choice(v.TIERS)]}
    if kind < 0.85:
        return {"key": rng.choice((v.ACCEL, v.DISK)), "operator": rng.choice(("Exists", "DoesNotExist"))}
    return {"key": v.ACCEL, "operator": "In", "values": rng.sample(v.ACCELS, rng.choice((1, 2)))}


def _node_term(rng: random.Random) -> Json:
    return {"matchExpressions": [_node_requirement(rng) for _ in range(rng.choice((1, 1, 2)))]}


def node_affinity(rng: random.Random, spec: Json) -> None:
    """``nodeSelector`` and/or required/preferred node affinity into ``spec``."""
    if rng.random() < 0.3:
        key = rng.choice((v.ZONE, v.DISK, v.ACCEL))
        values = {v.ZONE: v.ZONES, v.DISK: v.DISKS, v.ACCEL: v.ACCELS}[key]
        spec["nodeSelector"] = {key: rng.choice(values)}
    affinity: Json = {}
    if rng.random() < 0.3:
        terms = [_node_term(rng) for _ in range(rng.choice((1, 1, 2)))]
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
    if rng.random() < 0.55:
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.randint(1, 100), "preference": _node_term(rng)} for _ in range(rng.choice((1, 2, 3)))
        ]
    if affinity:
        spec.setdefault("affinity", {})["nodeAffinity"] = affinity


def _selector(rng: random.Random, own: dict[str, str]) -> Json:
    app = own.get(v.APP) if own.get(v.APP) and rng.random() < 0.6 else rng.choice(v.APPS)
    if rng.random() < 0.6:
        return {"matchLabels": {v.APP: app}}
    expression: Json = {"key": v.APP, "operator": "In", "values": sorted({app, rng.choice(v.APPS)})}
    if rng.random() < 0.3:
        return {"matchExpressions": [expression, {"key": v.TRACK, "operator": rng.choice(("Exists", "DoesNotExist"))}]}
    return {"matchExpressions": [expression]}


def _pod_term(rng: random.Random, own: dict[str, str], namespace: str) -> Json:
    term: Json = {"labelSelector": _selector(rng, own), "topologyKey": rng.choice((v.ZONE, v.HOSTNAME, v.HOSTNAME))}
    if rng.random() < 0.15:
        term["namespaces"] = [namespace]
    return term


def pod_affinity(rng: random.Random, spec: Json, own: dict[str, str], namespace: str, *, incoming: bool) -> None:
    """Pod affinity/anti-affinity, required and preferred, into ``spec``; rarer on existing pods."""
    odds = 1.0 if incoming else 0.35
    result: Json = {}
    for kind, p_required, p_preferred in (("podAffinity", 0.25, 0.35), ("podAntiAffinity", 0.3, 0.35)):
        terms: Json = {}
        if rng.random() < p_required * odds:
            terms["requiredDuringSchedulingIgnoredDuringExecution"] = [_pod_term(rng, own, namespace)]
        if rng.random() < p_preferred * odds:
            terms["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": _pod_term(rng, own, namespace)}
                for _ in range(rng.choice((1, 2)))
            ]
        if terms:
            result[kind] = terms
    if result:
        spec.setdefault("affinity", {}).update(result)


def spread_constraints(rng: random.Random, own: dict[str, str]) -> list[Json]:
    constraints: list[Json] = []
    used: set[tuple[str, str]] = set()
    for _ in range(rng.choice((1, 1, 2))):
        key = rng.choice((v.ZONE, v.HOSTNAME))
        when = rng.choice(("DoNotSchedule", "DoNotSchedule", "ScheduleAnyway"))
        if (key, when) in used:  # the API refuses two constraints with the same key and policy
            continue
        used.add((key, when))
        constraint: Json = {
            "maxSkew": rng.choice((1, 1, 2, 3)),
            "topologyKey": key,
            "whenUnsatisfiable": when,
            "labelSelector": _selector(rng, own),
        }
        if when == "DoNotSchedule" and rng.random() < 0.2:
            constraint["minDomains"] = rng.choice((2, 3, 4))
        if rng.random() < 0.25:
            constraint["nodeAffinityPolicy"] = rng.choice(("Honor", "Ignore"))
        if rng.random() < 0.25:
            constraint["nodeTaintsPolicy"] = rng.choice(("Honor", "Ignore"))
        if own.get(v.TRACK) and rng.random() < 0.15 and "matchLabels" in constraint["labelSelector"]:
            constraint["matchLabelKeys"] = [v.TRACK]
        constraints.append(constraint)
    return constraints
