"""Which scenario features the generator may use: those whose plugins this build registers.

A feature is a family of API fields (taints and tolerations, topology spread constraints, ...)
that only makes sense to compare when every plugin reading it runs on both sides. The parity
profile is upstream's default plugin list restricted to our registry
(:func:`bench.parity_harness.profile.parity_plugins`), so a feature is available when all the plugins it
needs are in that list; when another engineer registers a plugin, its features turn on by
themselves at the next run.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from scheduler_core.plugins import names


@dataclass(frozen=True)
class Feature:
    name: str
    plugins: frozenset[str]
    description: str


def _feature(name: str, plugins: Iterable[str], description: str) -> Feature:
    return Feature(name, frozenset(plugins), description)


_FIT = (names.NODE_RESOURCES_FIT,)

FEATURES: tuple[Feature, ...] = (
    _feature("unschedulable", [names.NODE_UNSCHEDULABLE], "cordoned nodes; pods tolerating the cordon taint"),
    _feature("taints", [names.TAINT_TOLERATION], "node taints (all effects), pod tolerations"),
    _feature("node_affinity", [names.NODE_AFFINITY], "nodeSelector, required and preferred node affinity"),
    _feature("extended_resources", _FIT, "an extended resource on some nodes, requested by pods"),
    _feature("ephemeral_storage", _FIT, "ephemeral-storage allocatable and requests"),
    _feature("init_containers", _FIT, "init containers and restartable (sidecar) init containers"),
    _feature("pod_level_resources", _FIT, "pod-level spec.resources requests"),
    _feature("pod_count", _FIT, "nodes with room for only a few pods"),
    _feature("topology_spread", [names.POD_TOPOLOGY_SPREAD], "topologySpreadConstraints on the pending pod"),
    _feature("services", [names.POD_TOPOLOGY_SPREAD], "Services selecting the pods (system default spreading)"),
    _feature("pod_affinity", [names.INTER_POD_AFFINITY], "pod affinity and anti-affinity, incoming and existing"),
    _feature("images", [names.IMAGE_LOCALITY], "node status.images and container images"),
    _feature("host_ports", [names.NODE_PORTS], "container hostPorts"),
    _feature("disk_conflicts", [names.VOLUME_RESTRICTIONS], "inline GCE PD, EBS, iSCSI and RBD volumes shared by pods"),
    _feature(
        "extenders",
        [names.NODE_RESOURCES_FIT],
        "HTTP extenders: a names-only filter and prioritizer, a full-object prioritizer, an ignorable failing one",
    ),
    _feature(
        "volumes",
        [names.VOLUME_BINDING, names.VOLUME_RESTRICTIONS, names.VOLUME_ZONE, names.NODE_VOLUME_LIMITS],
        "StorageClasses (WaitForFirstConsumer, Immediate), static PVs with node affinity and zones, bound and "
        "unbound claims (ReadWriteOncePod too), CSINode attach limits; the PV/PVC bindings written",
    ),
    _feature("gates", [names.SCHEDULING_GATES], "schedulingGates on the pending pod: pending until removed"),
    _feature(
        "dra",
        [names.DYNAMIC_RESOURCES],
        "a DRA driver's DeviceClass and ResourceSlices; a claim template with counts, CEL selectors, "
        "firstAvailable, matchAttribute; the devices allocated",
    ),
    _feature(
        "dra_partitionable",
        [names.DYNAMIC_RESOURCES],
        "with dra: partitionable GPUs (a counter set per GPU in a slice of its own; whole, 3g and 1g "
        "devices consuming from it), requests selecting a profile",
    ),
    _feature(
        "dra_extended_resources",
        [names.DYNAMIC_RESOURCES, names.NODE_RESOURCES_FIT],
        "with dra: the DeviceClass's extended resource (named, or deviceclass.resource.kubernetes.io/<class>) "
        "requested by the pending pod's container; the devices of the claim the scheduler makes",
    ),
    _feature(
        "preemption",
        [names.DEFAULT_PREEMPTION],
        "a pending pod of the highest priority that may preempt; existing pods as large, with distinct start "
        "times; the nominated node, the victims and the final node",
    ),
)
BY_NAME = {feature.name: feature for feature in FEATURES}
# Used only when asked for (``--features``): adding a feature to the default set would change
# the scenario every existing seed generates.
OPT_IN = frozenset(
    {"extenders", "volumes", "gates", "preemption", "dra", "dra_partitionable", "dra_extended_resources"}
)


def available(plugins: Collection[str]) -> frozenset[str]:
    """Names of the features all of whose plugins are in ``plugins`` (opt-in ones excepted)."""
    return frozenset(f.name for f in FEATURES if f.plugins <= set(plugins) and f.name not in OPT_IN)


ALL = "all"  # ``--features all``: every feature the plugins allow, the opt-in ones too


def select(plugins: Collection[str], wanted: Iterable[str] | None = None) -> frozenset[str]:
    """The features to use: ``wanted`` (the available ones but the opt-in ones when None, every
    one the plugins allow for :data:`ALL`), refused when unavailable."""
    usable = available(plugins)
    if wanted is None:
        return usable
    usable |= frozenset(f.name for f in FEATURES if f.name in OPT_IN and f.plugins <= set(plugins))
    chosen = frozenset(wanted)
    if chosen == {ALL}:
        return usable
    unknown = sorted(chosen - set(BY_NAME))
    if unknown:
        raise ValueError(f"unknown feature(s) {', '.join(unknown)}; known: {', '.join(BY_NAME)}")
    missing = sorted(chosen - usable)
    if missing:
        needs = {name: sorted(BY_NAME[name].plugins - set(plugins)) for name in missing}
        raise ValueError(f"feature(s) need plugins this build lacks: {needs}")
    return chosen
