"""Every kind an in-tree plugin reads through ``Handle.objects`` is watched by the operator."""

from __future__ import annotations

from scheduler_core.eventhandlers import STORAGE_EVENT_RESOURCES
from scheduler_core.framework import storage
from scheduler_core.framework.events import EventResource
from scheduler_core.plugins.coscheduling import podgroup
from scheduler_core.plugins.defaultpreemption.evaluator import PDB_KIND
from scheduler_core.plugins.gangscheduling import gang_scheduling
from scheduler_operator.resources import OBJECT_KINDS

READ_BY_PLUGINS = {
    PDB_KIND,  # DefaultPreemption
    "Namespace",  # InterPodAffinity namespaceSelector
    "Service", "ReplicationController", "ReplicaSet", "StatefulSet",  # PodTopologySpread default selector
    storage.PERSISTENT_VOLUME_CLAIM, storage.PERSISTENT_VOLUME, storage.STORAGE_CLASS,
    storage.CSI_NODE, storage.CSI_DRIVER, storage.CSI_STORAGE_CAPACITY, storage.VOLUME_ATTACHMENT,
    podgroup.KIND, gang_scheduling.KIND,  # Coscheduling, GangScheduling
    "DeviceClass", "ResourceSlice", "ResourceClaim",  # DynamicResources
}  # fmt: skip


def test_every_kind_plugins_read_is_watched() -> None:
    assert {k.kind for k in OBJECT_KINDS} == READ_BY_PLUGINS


def test_every_storage_event_resource_is_a_watched_kind() -> None:
    """The scheduler turns changes of these kinds into cluster events; the operator must watch them."""
    assert set(STORAGE_EVENT_RESOURCES) <= {k.kind for k in OBJECT_KINDS}
    assert {r.value for r in STORAGE_EVENT_RESOURCES.values()} == {
        r.value for r in EventResource if "/" in r.value or r.value.startswith("Persistent")
    }
