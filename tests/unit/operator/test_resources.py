"""Every kind an in-tree plugin reads through ``Handle.objects`` is watched by the operator."""

from __future__ import annotations

import pytest

from scheduler_core.framework.events import EventResource
from scheduler_core.plugins.coscheduling import podgroup
from scheduler_core.plugins.defaultpreemption.evaluator import PDB_KIND
from scheduler_core.plugins.gangscheduling import gang_scheduling
from scheduler_core.plugins.volumebinding import storage
from scheduler_operator.resources import OBJECT_KINDS, ObjectKind

READ_BY_PLUGINS = {
    PDB_KIND,  # DefaultPreemption
    "Namespace",  # InterPodAffinity namespaceSelector
    "Service", "ReplicationController", "ReplicaSet", "StatefulSet",  # PodTopologySpread default selector
    storage.PERSISTENT_VOLUME_CLAIM, storage.PERSISTENT_VOLUME, storage.STORAGE_CLASS,
    storage.CSI_NODE, storage.CSI_DRIVER, storage.CSI_STORAGE_CAPACITY, storage.VOLUME_ATTACHMENT,
    podgroup.KIND, gang_scheduling.KIND,  # Coscheduling, GangScheduling
}  # fmt: skip


def test_every_kind_plugins_read_is_watched() -> None:
    assert {k.kind for k in OBJECT_KINDS} == READ_BY_PLUGINS


@pytest.mark.parametrize("kind", [pytest.param(k, id=k.kind) for k in OBJECT_KINDS if k.event_resource])
def test_changes_of_storage_kinds_are_cluster_events(kind: ObjectKind) -> None:
    resource = EventResource(kind.event_resource or "")

    assert resource.value.rsplit("/", 1)[-1] == kind.kind.rsplit("/", 1)[-1]
