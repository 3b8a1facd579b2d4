"""Pod validation: the rules of ``pkg/apis/core/validation/validation.go`` (v1.36.3) for the
fields the scheduler reads: containers' names, resources and ports, overhead, node selector,
affinity, tolerations, topology spread, scheduling gates, nodeName, schedulerName, volumes.

Fields the API server defaults before it validates (a port's protocol) are taken as defaulted.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler_core.apivalidation import meta, resources
from scheduler_core.framework import content, field, manifest
from scheduler_core.framework.manifest import Manifest

Errors = list[field.Error]
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")  # validateTaintEffect order
PROTOCOLS = ("SCTP", "TCP", "UDP")
SCHEDULE_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")
INCLUSION_POLICIES = ("Honor", "Ignore")
PORT_RANGE = "must be between 1 and 65535, inclusive"


def validate(pod: Manifest) -> Errors:
    errs = meta.object_meta(pod.get("metadata"), content.dns1123_subdomain, namespaced=True)
    spec: Manifest = manifest.spec(pod)
    path = "spec"
    containers = spec.get("containers") or []
    if not containers:
        errs.append(field.required(field.child(path, "containers"), ""))
    names: set[str] = set()
    for group in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(group) or ()):
            errs += _container(container or {}, field.index(field.child(path, group), i), names)
    overhead_errs, _ = resources.resource_list(spec.get("overhead"), field.child(path, "overhead"), container=False)
    errs += overhead_errs
    errs += meta.labels(spec.get("nodeSelector"), field.child(path, "nodeSelector"))
    errs += _affinity(spec.get("affinity"), field.child(path, "affinity"))
    errs += tolerations(spec.get("tolerations") or (), field.child(path, "tolerations"))
    errs += _spread(spec.get("topologySpreadConstraints") or (), field.child(path, "topologySpreadConstraints"))
    errs += _gates(spec, path)
    for key in ("nodeName", "schedulerName"):
        value = spec.get(key) or ""
        errs += [field.invalid(field.child(path, key), value, m) for m in content.dns1123_subdomain(value) if value]
    errs += _volumes(spec.get("volumes") or (), field.child(path, "volumes"))
    return errs


def _unique_name(item: Manifest, path: str, seen: set[str]) -> Errors:
    """A container's or volume's name: required, a DNS-1123 label, unique in the pod."""
    name, npath = item.get("name") or "", field.child(path, "name")
    if not name:
        return [field.required(npath, "")]
    errs = [field.invalid(npath, name, m) for m in content.dns1123_label(name)]
    if name in seen:
        errs.append(field.duplicate(npath, name))
    seen.add(name)
    return errs


def _container(container: Manifest, path: str, names: set[str]) -> Errors:
    errs = _unique_name(container, path, names)
    errs += resources.requirements(container.get("resources"), field.child(path, "resources"))
    for i, port in enumerate(container.get("ports") or ()):
        port = port or {}
        ppath = field.index(field.child(path, "ports"), i)
        container_port, host_port = port.get("containerPort") or 0, port.get("hostPort") or 0
        if not container_port:
            errs.append(field.required(field.child(ppath, "containerPort"), ""))
        elif not 1 <= container_port <= 65535:
            errs.append(field.invalid(field.child(ppath, "containerPort"), container_port, PORT_RANGE))
        if host_port and not 1 <= host_port <= 65535:
            errs.append(field.invalid(field.child(ppath, "hostPort"), host_port, PORT_RANGE))
        protocol = port.get("protocol") or "TCP"  # SetDefaults_ContainerPort
        if protocol not in PROTOCOLS:
            errs.append(field.not_supported(field.child(ppath, "protocol"), protocol, PROTOCOLS))
    return errs


def node_selector_term(term: Manifest, path: str, *, allow_invalid_values: bool) -> Errors:
    """``ValidateNodeSelectorTerm``."""
    errs: Errors = []
    for j, req in enumerate(term.get("matchExpressions") or ()):
        req = req or {}
        rpath = field.index(field.child(path, "matchExpressions"), j)
        operator, values = req.get("operator") or "", req.get("values") or []
        errs += meta.requirement_operator(operator, values, rpath, numeric=True)
        errs += meta.label_name(req.get("key") or "", field.child(rpath, "key"))
        if not allow_invalid_values:
            for k, value in enumerate(values):
                vpath = field.index(field.child(rpath, "values"), k)
                errs += [field.invalid(vpath, value, m) for m in content.label_value(value or "")]
    for j, req in enumerate(term.get("matchFields") or ()):
        req = req or {}
        rpath = field.index(field.child(path, "matchFields"), j)
        operator, values = req.get("operator") or "", req.get("values") or []
        if operator in ("In", "NotIn"):
            if len(values) != 1:
                detail = "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
                errs.append(field.required(field.child(rpath, "values"), detail))
        else:
            errs.append(field.invalid(field.child(rpath, "operator"), operator, "not a valid selector operator"))
        if req.get("key") != "metadata.name":
            errs.append(
                field.invalid(field.child(rpath, "key"), req.get("key") or "", "not a valid field selector key")
            )
        else:
            for k, value in enumerate(values):
                vpath = field.index(field.child(rpath, "values"), k)
                errs += [field.invalid(vpath, value, m) for m in content.dns1123_subdomain(value or "")]
    return errs


def _affinity(affinity: Manifest | None, path: str) -> Errors:
    if not affinity:
        return []
    errs: Errors = []
    node = affinity.get("nodeAffinity") or {}
    npath = field.child(path, "nodeAffinity")
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        rpath = field.child(npath, "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
        terms = required.get("nodeSelectorTerms") or []
        if not terms:
            errs.append(field.required(rpath, "must have at least one node selector term"))
        for i, term in enumerate(terms):
            errs += node_selector_term(term or {}, field.index(rpath, i), allow_invalid_values=False)
    ppath = field.child(npath, "preferredDuringSchedulingIgnoredDuringExecution")
    for i, pref in enumerate(node.get("preferredDuringSchedulingIgnoredDuringExecution") or ()):
        pref = pref or {}
        weight = pref.get("weight") or 0
        if not 1 <= weight <= 100:
            errs.append(
                field.invalid(field.child(field.index(ppath, i), "weight"), weight, "must be in the range 1-100")
            )
        errs += node_selector_term(
            pref.get("preference") or {}, field.child(field.index(ppath, i), "preference"), allow_invalid_values=True
        )
    for kind in ("podAffinity", "podAntiAffinity"):
        pod_aff = affinity.get(kind) or {}
        kpath = field.child(path, kind)
        rpath = field.child(kpath, "requiredDuringSchedulingIgnoredDuringExecution")
        for i, term in enumerate(pod_aff.get("requiredDuringSchedulingIgnoredDuringExecution") or ()):
            errs += _pod_affinity_term(term or {}, field.index(rpath, i))
        ppath = field.child(kpath, "preferredDuringSchedulingIgnoredDuringExecution")
        for i, weighted in enumerate(pod_aff.get("preferredDuringSchedulingIgnoredDuringExecution") or ()):
            weighted = weighted or {}
            weight = weighted.get("weight") or 0
            wpath = field.index(ppath, i)
            if not 1 <= weight <= 100:
                errs.append(field.invalid(field.child(wpath, "weight"), weight, "must be in the range 1-100"))
            errs += _pod_affinity_term(weighted.get("podAffinityTerm") or {}, field.child(wpath, "podAffinityTerm"))
    return errs


def _pod_affinity_term(term: Manifest, path: str) -> Errors:
    """``validatePodAffinityTerm``."""
    errs = meta.label_selector(term.get("labelSelector"), field.child(path, "labelSelector"))
    errs += meta.label_selector(term.get("namespaceSelector"), field.child(path, "namespaceSelector"))
    for name in term.get("namespaces") or ():
        errs += [field.invalid(field.child(path, "namespace"), name, m) for m in content.dns1123_label(name or "")]
    topology_key = term.get("topologyKey") or ""
    if not topology_key:
        errs.append(field.required(field.child(path, "topologyKey"), "can not be empty"))
    return errs + meta.label_name(topology_key, field.child(path, "topologyKey"))


def tolerations(items: Sequence[Manifest | None], path: str) -> Errors:
    """``ValidateTolerations``."""
    errs: Errors = []
    for i, toleration in enumerate(items):
        toleration = toleration or {}
        tpath = field.index(path, i)
        key, operator = toleration.get("key") or "", toleration.get("operator") or ""
        value, effect = toleration.get("value") or "", toleration.get("effect") or ""
        if key:
            errs += meta.label_name(key, field.child(tpath, "key"))
        if not key and operator != "Exists":
            detail = 'operator must be Exists when `key` is empty, which means "match all values and all keys"'
            errs.append(field.invalid(field.child(tpath, "operator"), operator, detail))
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            detail = "effect must be 'NoExecute' when `tolerationSeconds` is set"
            errs.append(field.invalid(field.child(tpath, "effect"), effect, detail))
        if operator in ("", "Equal"):
            errs += [field.invalid(field.child(tpath, "operator"), value, m) for m in content.label_value(value)]
        elif operator == "Exists":
            if value:
                detail = "value must be empty when `operator` is 'Exists'"
                errs.append(field.invalid(field.child(tpath, "operator"), value, detail))
        else:
            errs.append(field.not_supported(field.child(tpath, "operator"), operator, ("Equal", "Exists")))
        if effect and effect not in TAINT_EFFECTS:
            errs.append(field.not_supported(field.child(tpath, "effect"), effect, TAINT_EFFECTS))
    return errs


def _spread(constraints: Sequence[Manifest | None], path: str) -> Errors:
    """``validateTopologySpreadConstraints``."""
    errs: Errors = []
    items = [c or {} for c in constraints]
    for i, constraint in enumerate(items):
        cpath = field.index(path, i)
        max_skew = constraint.get("maxSkew") or 0
        if max_skew <= 0:
            errs.append(field.invalid(field.child(cpath, "maxSkew"), max_skew, "must be greater than zero"))
        topology_key = constraint.get("topologyKey") or ""
        if not topology_key:
            errs.append(field.required(field.child(cpath, "topologyKey"), "can not be empty"))
        action = constraint.get("whenUnsatisfiable") or ""
        if action not in SCHEDULE_ACTIONS:
            errs.append(field.not_supported(field.child(cpath, "whenUnsatisfiable"), action, SCHEDULE_ACTIONS))
        for other in items[i + 1 :]:
            if other.get("topologyKey") == topology_key and other.get("whenUnsatisfiable") == action:
                pair = f"{{{topology_key}, {action}}}"
                errs.append(field.duplicate(field.child(cpath, "{topologyKey, whenUnsatisfiable}"), pair))
                break
        min_domains = constraint.get("minDomains")
        if min_domains is not None:
            mpath = field.child(cpath, "minDomains")
            if min_domains <= 0:
                errs.append(field.invalid(mpath, min_domains, "must be greater than zero"))
            if action != "DoNotSchedule":
                detail = f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
                errs.append(field.invalid(mpath, min_domains, detail))
        for key in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            policy = constraint.get(key)
            if policy is not None and policy not in INCLUSION_POLICIES:
                errs.append(field.not_supported(field.child(cpath, key), policy, INCLUSION_POLICIES))
        errs += meta.label_selector(constraint.get("labelSelector"), field.child(cpath, "labelSelector"))
    return errs


def _gates(spec: Manifest, path: str) -> Errors:
    errs: Errors = []
    gates = spec.get("schedulingGates") or []
    seen: set[str] = set()
    gpath = field.child(path, "schedulingGates")
    for i, gate in enumerate(gates):
        name = (gate or {}).get("name") or ""
        errs += [field.invalid(field.index(gpath, i), name, m) for m in content.qualified_name(name)]
        if name in seen:
            errs.append(field.duplicate(field.index(gpath, i), name))
        seen.add(name)
    if spec.get("nodeName") and gates:
        errs.append(
            field.forbidden(field.child(path, "nodeName"), "cannot be set until all schedulingGates have been cleared")
        )
    return errs


def _volumes(volumes: Sequence[Manifest | None], path: str) -> Errors:
    errs: Errors = []
    seen: set[str] = set()
    for i, volume in enumerate(volumes):
        volume = volume or {}
        vpath = field.index(path, i)
        errs += _unique_name(volume, vpath, seen)
        claim = volume.get("persistentVolumeClaim")
        if claim is not None and not claim.get("claimName"):
            errs.append(field.required(field.child(vpath, "persistentVolumeClaim", "claimName"), ""))
    return errs


_NOT_REQUESTED = (
    "must match the extended resource name of an entry in spec.initContainers.resources.requests or "
    "spec.containers.resources.requests"
)
_NO_SUCH_CONTAINER = "must match the name of an entry in spec.initContainers.name or spec.containers.name"


def extended_resource_claim_status(status: Manifest | None, spec: Manifest) -> Errors:
    """``validatePodExtendedResourceClaimStatus``, as a status update of the pod is checked: every
    mapping names one of the pod's containers and a resource it requests."""
    if status is None:
        return []
    path = field.child("status", "extendedResourceClaimStatus")
    containers = {c.get("name"): c for group in ("initContainers", "containers") for c in spec.get(group) or () if c}
    errs: Errors = []
    mappings_path = field.child(path, "requestMappings")
    mappings = status.get("requestMappings") or []
    if not mappings:
        errs.append(field.required(mappings_path, "at least one request mapping is required"))
    seen: set[tuple[str, str, str]] = set()
    for i, mapping in enumerate(mappings):
        mpath = field.index(mappings_path, i)
        container, resource = str(mapping.get("containerName") or ""), str(mapping.get("resourceName") or "")
        request = str(mapping.get("requestName") or "")
        if container in containers:
            if resource not in ((containers[container].get("resources") or {}).get("requests") or {}):
                errs.append(field.invalid(field.child(mpath, "resourceName"), resource, _NOT_REQUESTED))
        else:
            errs.append(field.invalid(field.child(mpath, "containerName"), container, _NO_SUCH_CONTAINER))
        # upstream's path for the request name is the status's, not the mapping's
        errs += [field.invalid(field.child(path, "requestName"), request, m) for m in content.dns1123_label(request)]
        if (container, resource, request) in seen:
            errs += [field.duplicate(field.child(mpath, "containerName"), container),
                     field.duplicate(field.child(mpath, "resourceName"), resource),
                     field.duplicate(field.child(mpath, "requestName"), request)]  # fmt: skip
        seen.add((container, resource, request))
    name = str(status.get("resourceClaimName") or "")
    name_path = field.child(path, "resourceClaimName")
    if not name:
        errs.append(field.required(name_path, ""))
    else:
        errs += [field.invalid(name_path, name, m) for m in content.dns1123_subdomain(name)]
    return errs
