"""The in-tree registry: one flat map of plugin name to factory, and the default profile.

Upstream: ``pkg/scheduler/framework/plugins/registry.go`` and
``pkg/scheduler/apis/config/v1/default_plugins.go``.
"""

from __future__ import annotations

from scheduler_core.framework import PluginFactory
from scheduler_core.plugins import names
from scheduler_core.plugins.coscheduling import Coscheduling
from scheduler_core.plugins.defaultbinder import DefaultBinder
from scheduler_core.plugins.defaultpreemption import DefaultPreemption
from scheduler_core.plugins.dynamicresources import DynamicResources
from scheduler_core.plugins.gangscheduling import GangScheduling
from scheduler_core.plugins.imagelocality import ImageLocality
from scheduler_core.plugins.interpodaffinity import InterPodAffinity
from scheduler_core.plugins.nodeaffinity import NodeAffinity
from scheduler_core.plugins.nodedeclaredfeatures import NodeDeclaredFeatures
from scheduler_core.plugins.nodename import NodeName
from scheduler_core.plugins.nodeports import NodePorts
from scheduler_core.plugins.noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit
from scheduler_core.plugins.nodeunschedulable import NodeUnschedulable
from scheduler_core.plugins.nodevolumelimits import NodeVolumeLimits
from scheduler_core.plugins.podtopologyspread import PodTopologySpread
from scheduler_core.plugins.queuesort import PrioritySort
from scheduler_core.plugins.schedulinggates import SchedulingGates
from scheduler_core.plugins.tainttoleration import TaintToleration
from scheduler_core.plugins.volumebinding import VolumeBinding
from scheduler_core.plugins.volumerestrictions import VolumeRestrictions
from scheduler_core.plugins.volumezone import VolumeZone


def in_tree_registry() -> dict[str, PluginFactory]:
    factories: list[PluginFactory] = [
        PrioritySort,
        NodeUnschedulable,
        NodeName,
        TaintToleration,
        NodeAffinity,
        NodeResourcesFit,
        NodeResourcesBalancedAllocation,
        DefaultBinder,
        ImageLocality,
        NodePorts,
        SchedulingGates,
        VolumeBinding,
        VolumeRestrictions,
        VolumeZone,
        NodeVolumeLimits,
        DefaultPreemption,
        InterPodAffinity,
        PodTopologySpread,
        NodeDeclaredFeatures,
        DynamicResources,
        # Gang scheduling, off in the default profile; a profile enables one of them.
        Coscheduling,
        GangScheduling,
    ]
    return {factory.name: factory for factory in factories}


# Upstream's default multiPoint list and weights with v1.36.3's default feature gates
# (pkg/scheduler/apis/config/v1/default_plugins.go), in upstream order. Plugins not (yet)
# in the registry are left out of the default profile by ``default_plugins``.
UPSTREAM_DEFAULT_PLUGINS: tuple[tuple[str, int | None], ...] = (
    (names.SCHEDULING_GATES, None),
    (names.PRIORITY_SORT, None),
    (names.NODE_UNSCHEDULABLE, None),
    (names.NODE_NAME, None),
    (names.TAINT_TOLERATION, 3),
    (names.NODE_AFFINITY, 2),
    (names.NODE_PORTS, None),
    (names.NODE_RESOURCES_FIT, 1),
    (names.VOLUME_RESTRICTIONS, None),
    (names.NODE_VOLUME_LIMITS, None),
    (names.VOLUME_BINDING, None),
    (names.VOLUME_ZONE, None),
    (names.POD_TOPOLOGY_SPREAD, 2),
    (names.INTER_POD_AFFINITY, 2),
    # applyDynamicResources (DRA is GA): DynamicResources goes before DefaultPreemption.
    (names.DYNAMIC_RESOURCES, 2),
    (names.DEFAULT_PREEMPTION, None),
    (names.NODE_RESOURCES_BALANCED_ALLOCATION, 1),
    (names.IMAGE_LOCALITY, 1),
    (names.DEFAULT_BINDER, None),
    # applyFeatureGates (default gates): NodeDeclaredFeatures (beta, on) is appended.
    (names.NODE_DECLARED_FEATURES, None),
)
