"""NodeVolumeLimits, as upstream ``nodevolumelimits/csi_test.go`` (TestCSILimits with its
fixtures: getFakeCSIPVLister, getFakeCSIPVCLister, getNodeWithPodAndVolumeLimits,
buildFakeClientWithVALister; TestCSILimitsQHint, TestCSILimitsAddedPVCQHint,
TestCSILimitsAfterCSINodeUpdatedQHint)."""

from __future__ import annotations

from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_core.framework import (
    ActionType,
    Code,
    CycleState,
    EventResource,
    Handle,
    NodeInfo,
    PodInfo,
    QueueingHint,
    Status,
)
from scheduler_core.plugins.nodevolumelimits import NodeVolumeLimits, translation
from scheduler_core.plugins.nodevolumelimits.csi import (
    ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,
    is_schedulable_after_csi_node_updated,
    is_schedulable_after_pod_deleted,
    is_schedulable_after_pvc_added,
)
from tests.unit.plugins.volumebinding.support import StorageHandle, claim_volume, csi_node, pv, pvc, storage_class
from tests.wrappers import node, pod_info

EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
AWS_IN_TREE = "kubernetes.io/aws-ebs"
HOSTPATH_IN_TREE = "kubernetes.io/hostpath"
SC_NAME = "csi-sc"
NODE = "node-for-max-pd-test-1"
EXCEEDED = Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)


RUNNING = pod_info(volumes=[claim_volume(f"csi-{EBS}-3", "v0")])
PENDING = pod_info(volumes=[claim_volume("csi-4", "v0")])
UNBOUND_2 = pod_info(volumes=[claim_volume("csi-4", "v0")])
MISSING_PV = pod_info(volumes=[claim_volume("csi-6", "v0")])
NO_SC = pod_info(volumes=[claim_volume("csi-5", "v0")])
GCE_TWO = pod_info(volumes=[claim_volume(f"csi-{GCE}-1", "v0"), claim_volume(f"csi-{GCE}-2", "v1")])
IN_TREE_ONE = pod_info(volumes=[claim_volume(f"csi-{AWS_IN_TREE}-0", "v0")])
IN_TREE_TWO = pod_info(volumes=[claim_volume(f"csi-{AWS_IN_TREE}-1", "v0"), claim_volume(f"csi-{AWS_IN_TREE}-2", "v1")])
EBS_ONE = pod_info(volumes=[claim_volume(f"csi-{EBS}-0", "v0")])
EBS_TWO = pod_info(volumes=[claim_volume(f"csi-{EBS}-1", "v0"), claim_volume(f"csi-{EBS}-2", "v1")])
NON_MIGRATABLE = pod_info(volumes=[claim_volume(f"csi-{HOSTPATH_IN_TREE}-0", "v0")])
INLINE = pod_info(volumes=[{"name": "i", "awsElasticBlockStore": {"volumeID": "aws-inline1"}}])
INLINE_SAME_ID = pod_info(volumes=[{"name": "i", "awsElasticBlockStore": {"volumeID": f"csi-{EBS}-1"}}])
EPHEMERAL = pod_info("abc", namespace="test", volumes=[{"name": "xyz", "ephemeral": {}}], uid="12345")
EPHEMERAL_TWO = pod_info(
    "abc", namespace="test", volumes=[{"name": "x", "ephemeral": {}}, {"name": "y", "ephemeral": {}}], uid="12345II"
)
CONFIGMAP_SECRET = pod_info(
    volumes=[{"name": "c", "configMap": {"name": "c"}}, {"name": "s", "secret": {"secretName": "s"}}]
)


def ephemeral_claim(name: str, owner: str | None) -> dict[str, Any]:
    return pvc(name, SC_NAME, namespace="test", owner_uid=owner)


def fake_pvs(driver_names: list[str]) -> list[dict[str, Any]]:
    """getFakeCSIPVLister("csi", drivers...): four PVs per driver (in-tree EBS, hostPath or CSI)."""
    pvs = []
    for driver in driver_names:
        for j in range(4):
            handle = f"csi-{driver}-{j}"
            if driver == AWS_IN_TREE:
                source: dict[str, Any] = {"awsElasticBlockStore": {"volumeID": handle}}
            elif driver == HOSTPATH_IN_TREE:
                source = {"hostPath": {"path": "/tmp"}}
            else:
                source = {"csi": {"driver": driver, "volumeHandle": handle}}
            pvs.append(pv(handle, source=source))
    return pvs


def fake_pvcs(driver_names: list[str]) -> list[dict[str, Any]]:
    """getFakeCSIPVCLister("csi", "csi-sc", drivers...)."""
    claims = [pvc(f"csi-{d}-{j}", None, volume_name=f"csi-{d}-{j}") for d in driver_names for j in range(4)]
    claims.append(pvc("csi-4", SC_NAME))
    claims.append(pvc("csi-5", None))
    claims.append(pvc("csi-6", SC_NAME, volume_name="missing-in-action"))
    return claims


def fake_vas(count: int, driver_names: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "VolumeAttachment",
            "metadata": {"name": f"va-{d}-{j}"},
            "spec": {"nodeName": NODE, "attacher": d, "source": {"persistentVolumeName": f"csi-{d}-{j}"}},
        }
        for d in driver_names
        for j in range(count)
    ]


def run(
    new_pod: PodInfo,
    existing: list[PodInfo],
    driver_names: list[str],
    max_vols: int = 0,
    limit_source: str = "",
    va_count: int = 0,
    extra_claims: list[dict[str, Any]] | None = None,
) -> tuple[Status | None, Status | None]:
    info = NodeInfo(node(NODE))
    for p in existing:
        info.add_pod(p)
    objects = [*fake_pvs(driver_names), *fake_pvcs(driver_names), *(extra_claims or [])]
    objects += [storage_class(SC_NAME, None, provisioner=driver_names[0]), *fake_vas(va_count, driver_names)]
    if limit_source in ("csinode", "csinode-with-no-limit"):
        limit = max_vols if limit_source == "csinode" else None
        objects.append(csi_node(NODE, dict.fromkeys(driver_names, limit), migrated=AWS_IN_TREE))
    plugin = NodeVolumeLimits(None, cast(Handle, StorageHandle(objects, [info])))
    state = CycleState()
    _, pre_filter = plugin.pre_filter(state, new_pod, [info])
    if pre_filter is not None and pre_filter.code is Code.SKIP:
        return pre_filter, None
    return pre_filter, plugin.filter(state, new_pod, info)


CASES = [
    ("should count VolumeAttachments towards volume limit when no pods exist", EBS_ONE, [], [EBS], 2, "csinode", 2, EXCEEDED),  # noqa: E501
    ("should schedule pod when VolumeAttachments count does not exceed limit", EBS_ONE, [], [EBS], 2, "csinode", 1, None),  # noqa: E501
    ("fits when node volume limit >= new pods CSI volume", EBS_ONE, [RUNNING, EBS_TWO], [EBS], 4, "csinode", 0, None),
    ("doesn't when node volume limit <= pods CSI volume", EBS_ONE, [RUNNING, EBS_TWO], [EBS], 2, "csinode", 0, EXCEEDED),  # noqa: E501
    ("should when driver does not support volume limits", EBS_ONE, [RUNNING, EBS_TWO], [EBS], 2, "csinode-with-no-limit", 0, None),  # noqa: E501
    ("count pending PVCs towards volume limit <= pods CSI volume", EBS_ONE, [PENDING, EBS_TWO], [EBS], 2, "csinode", 0, EXCEEDED),  # noqa: E501
    ("count multiple pending pvcs towards volume limit >= pods CSI volume", EBS_ONE, [PENDING, UNBOUND_2, EBS_TWO], [EBS], 4, "csinode", 0, None),  # noqa: E501
    ("should count PVCs with invalid PV name but valid SC", EBS_ONE, [MISSING_PV, EBS_TWO], [EBS], 2, "csinode", 0, EXCEEDED),  # noqa: E501
    ("don't count pvcs with missing SC towards volume limit", EBS_ONE, [RUNNING, NO_SC], [EBS], 2, "csinode", 0, None),
    ("count pvcs with the same type towards volume limit", EBS_ONE, [GCE_TWO, EBS_TWO], [EBS, GCE], 2, "csinode", 0, EXCEEDED),  # noqa: E501
    ("don't count pvcs with different type towards volume limit", GCE_TWO, [EBS_TWO, RUNNING], [EBS, GCE], 2, "csinode", 0, None),  # noqa: E501
    ("should count in-tree volumes if migration is enabled", IN_TREE_ONE, [IN_TREE_TWO], [AWS_IN_TREE, EBS], 2, "csinode", 0, EXCEEDED),  # noqa: E501
    ("nil csi node", INLINE, [IN_TREE_TWO], [AWS_IN_TREE, EBS], 0, "", 0, None),
    ("should count unbound in-tree volumes if migration is enabled", PENDING, [IN_TREE_TWO], [AWS_IN_TREE, EBS], 2, "csinode", 0, EXCEEDED),  # noqa: E501
    ("should not limit pod if volume used does not report limits", IN_TREE_ONE, [IN_TREE_TWO], [AWS_IN_TREE, EBS], 2, "csinode-with-no-limit", 0, None),  # noqa: E501
    ("should not count non-migratable in-tree volumes", NON_MIGRATABLE, [EBS_TWO], [HOSTPATH_IN_TREE, EBS], 2, "csinode", 0, None),  # noqa: E501
    ("should count in-tree inline volumes if migration is enabled", INLINE, [IN_TREE_TWO], [AWS_IN_TREE, EBS], 2, "csinode", 0, EXCEEDED),  # noqa: E501
    ("should count in-tree and csi volumes if migration is enabled (when scheduling in-tree volumes)", IN_TREE_ONE, [EBS_TWO], [AWS_IN_TREE, EBS], 2, "csinode", 0, EXCEEDED),  # noqa: E501
    ("should count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)", INLINE, [EBS_TWO, IN_TREE_ONE], [AWS_IN_TREE, EBS], 3, "csinode", 0, EXCEEDED),  # noqa: E501
    ("should not count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)", INLINE_SAME_ID, [EBS_TWO, IN_TREE_ONE], [AWS_IN_TREE, EBS], 3, "csinode", 0, None),  # noqa: E501
    ("should count in-tree and csi volumes if migration is enabled (when scheduling csi volumes)", EBS_ONE, [IN_TREE_TWO], [AWS_IN_TREE, EBS], 2, "csinode", 0, EXCEEDED),  # noqa: E501
]  # fmt: skip


@pytest.mark.parametrize(
    ("new_pod", "existing", "drivers", "max_vols", "limit_source", "va_count", "want"),
    [pytest.param(*case[1:], id=f"TestCSILimits/{case[0]}") for case in CASES],
)
def test_csi_limits(
    new_pod: PodInfo,
    existing: list[PodInfo],
    drivers: list[str],
    max_vols: int,
    limit_source: str,
    va_count: int,
    want: Status | None,
) -> None:
    assert run(new_pod, existing, drivers, max_vols, limit_source, va_count) == (None, want)


@pytest.mark.parametrize(
    ("new_pod", "existing", "max_vols", "limit_source", "claims", "want"),
    [
        pytest.param(
            EPHEMERAL,
            [],
            0,
            "csinode-with-no-limit",
            [],
            # The informer lister's wording (upstream's fake lister says "persistentvolumeclaims").
            Status.unresolvable('looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found'),
            id="TestCSILimits/ephemeral volume missing",
        ),
        pytest.param(
            EPHEMERAL,
            [],
            0,
            "csinode-with-no-limit",
            [ephemeral_claim("abc-xyz", None)],
            Status.as_error("PVC test/abc-xyz was not created for pod test/abc (pod is not owner)"),
            id="TestCSILimits/ephemeral volume not owned",
        ),
        pytest.param(
            EPHEMERAL,
            [],
            0,
            "csinode-with-no-limit",
            [ephemeral_claim("abc-xyz", "12345")],
            None,
            id="TestCSILimits/ephemeral volume unbound",
        ),
        pytest.param(
            EPHEMERAL,
            [RUNNING, EBS_TWO],
            2,
            "csinode",
            [ephemeral_claim("abc-xyz", "12345")],
            EXCEEDED,
            id="TestCSILimits/ephemeral doesn't when node volume limit <= pods CSI volume",
        ),
        pytest.param(
            EBS_ONE,
            [RUNNING, EPHEMERAL_TWO],
            2,
            "csinode",
            [ephemeral_claim("abc-x", "12345II"), ephemeral_claim("abc-y", "12345II")],
            EXCEEDED,
            id="TestCSILimits/ephemeral doesn't when node volume limit <= pods ephemeral CSI volume",
        ),
        pytest.param(
            EBS_ONE,
            [RUNNING, EPHEMERAL, EBS_TWO],
            3,
            "csinode",
            [ephemeral_claim("abc-xyz", "12345")],
            EXCEEDED,
            id="TestCSILimits/persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent volume",  # noqa: E501
        ),
        pytest.param(
            EBS_ONE,
            [RUNNING, EPHEMERAL, EBS_TWO],
            5,
            "csinode",
            [ephemeral_claim("abc-xyz", "12345")],
            None,
            id="TestCSILimits/persistent okay when node volume limit > pods ephemeral CSI volume + persistent volume",
        ),
    ],
)
def test_ephemeral_volumes(
    new_pod: PodInfo,
    existing: list[PodInfo],
    max_vols: int,
    limit_source: str,
    claims: list[dict[str, Any]],
    want: Status | None,
) -> None:
    assert run(new_pod, existing, [EBS], max_vols, limit_source, extra_claims=claims) == (None, want)


@pytest.mark.parametrize(
    ("new_pod", "skipped"),
    [
        pytest.param(
            CONFIGMAP_SECRET, True, id="TestCSILimits/skip Filter when the pod only uses secrets and configmaps"
        ),
        pytest.param(pod_info(volumes=[]), True, id="a pod without volumes"),
        pytest.param(EBS_ONE, False, id="TestCSILimits/don't skip Filter when the pod has pvcs"),
        pytest.param(EPHEMERAL, False, id="TestCSILimits/don't skip Filter when the pod has ephemeral volumes"),
        pytest.param(INLINE, False, id="TestCSILimits/don't skip Filter when the pod has inline migratable volumes"),
    ],
)
def test_pre_filter_skip(new_pod: PodInfo, skipped: bool) -> None:
    handle = StorageHandle()
    status = NodeVolumeLimits(None, cast(Handle, handle)).pre_filter(CycleState(), new_pod, [])[1]
    assert (status is not None and status.code is Code.SKIP) is skipped
    assert handle.calls == []  # PreFilter never lists objects (it may look its claims up)


def test_events() -> None:
    plugin = NodeVolumeLimits(None, cast(Handle, StorageHandle()))
    assert {(e.event.resource, e.event.action, e.hint is not None) for e in plugin.events_to_register()} == {
        (EventResource.CSI_NODE, ActionType.ADD, False),
        (EventResource.CSI_NODE, ActionType.UPDATE, True),
        (EventResource.ASSIGNED_POD, ActionType.DELETE, True),
        (EventResource.POD, ActionType.DELETE, True),
        (EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD, True),
    }


@pytest.mark.parametrize(
    ("deleted", "expected"),
    [
        pytest.param(
            pod_info(volumes=[claim_volume(f"csi-{EBS}-2", "v0")], node_name="n"),
            QueueingHint.QUEUE,
            id="a deleted pod has a PVC",
        ),
        pytest.param(
            pod_info("d", node_name="n", volumes=[{"name": "i", "awsElasticBlockStore": {"volumeID": "x"}}]),
            QueueingHint.QUEUE,
            id="a deleted pod has a inline migratable volume",
        ),
        pytest.param(pod_info("d", node_name="n"), QueueingHint.SKIP, id="a deleted pod doesn't have any volume"),
        pytest.param(
            pod_info(volumes=[claim_volume(f"csi-{EBS}-2", "v0")]),
            QueueingHint.SKIP,
            id="a deleted pod is not scheduled.",
        ),
    ],
)
def test_pod_deleted_hint(deleted: PodInfo, expected: QueueingHint) -> None:
    # TestCSILimitsQHint
    assert (
        is_schedulable_after_pod_deleted(pod_info(volumes=[claim_volume(f"csi-{EBS}-2", "v0")]), deleted, None)
        is expected
    )


@pytest.mark.parametrize(
    ("the_pod", "added", "expected"),
    [
        pytest.param(
            pod_info(volumes=[claim_volume("pvc-a", "v0")]),
            pvc("pvc-a", namespace="other"),
            QueueingHint.SKIP,
            id="a pod isn't in the same namespace",
        ),
        pytest.param(
            pod_info(volumes=[claim_volume("pvc-a", "v0")]),
            pvc("pvc-a"),
            QueueingHint.QUEUE,
            id="a pod is in the same namespace",
        ),
        pytest.param(
            pod_info("abc", volumes=[{"name": "eph", "ephemeral": {}}]),
            pvc("abc-eph"),
            QueueingHint.QUEUE,
            id="a pod has an ephemeral volume related to an added PVC",
        ),
        pytest.param(
            pod_info(volumes=[claim_volume("pvc-b", "v0")]),
            pvc("pvc-a"),
            QueueingHint.SKIP,
            id="a pod doesn't have the same PVC",
        ),
        pytest.param(pod_info(volumes=[]), pvc("pvc-a"), QueueingHint.SKIP, id="a pod doesn't have any PVC attached"),
    ],
)
def test_pvc_added_hint(the_pod: PodInfo, added: dict[str, Any], expected: QueueingHint) -> None:
    # TestCSILimitsAddedPVCQHint
    assert is_schedulable_after_pvc_added(the_pod, None, added) is expected


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param({"d": 1}, {"d": 2}, QueueingHint.QUEUE, id="limit raised, queue"),
        pytest.param({"d": 2}, {"d": 1}, QueueingHint.SKIP, id="limit decreased, skip queueing"),
        pytest.param({"d": 2}, {"d": 2}, QueueingHint.SKIP, id="limit unchanged, skip queueing"),
        pytest.param({}, {"d": 1}, QueueingHint.QUEUE, id="a driver with a limit appears"),
    ],
)
def test_csi_node_updated_hint(old: dict[str, int], new: dict[str, int], expected: QueueingHint) -> None:
    # TestCSILimitsAfterCSINodeUpdatedQHint
    hint = is_schedulable_after_csi_node_updated(
        pod_info(volumes=[claim_volume("x", "v0")]), csi_node("test-node", old), csi_node("test-node", new)
    )
    assert hint is expected


def test_hints_raise_on_unexpected_objects() -> None:
    for hint in (
        is_schedulable_after_pod_deleted,
        is_schedulable_after_pvc_added,
        is_schedulable_after_csi_node_updated,
    ):
        with pytest.raises(TypeError):
            hint(pod_info(volumes=[claim_volume("x", "v0")]), "bad", "bad")


# -- the bound that spares the exact count -------------------------------------------------------
POOL = [RUNNING, PENDING, MISSING_PV, NO_SC, GCE_TWO, IN_TREE_ONE, IN_TREE_TWO, EBS_ONE, EBS_TWO, NON_MIGRATABLE,
        INLINE, INLINE_SAME_ID, EPHEMERAL_TWO, CONFIGMAP_SECRET]  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    case=st.tuples(
        st.sampled_from([p for p in POOL if p is not CONFIGMAP_SECRET]),  # the new pod
        st.lists(st.sampled_from(POOL), max_size=4, unique_by=id),  # the pods on the node
        st.sampled_from([[EBS], [EBS, GCE], [AWS_IN_TREE, EBS], [HOSTPATH_IN_TREE, EBS]]),
        st.integers(0, 7),  # the limit
        st.sampled_from(["csinode", "csinode-with-no-limit", ""]),
        st.integers(0, 3),  # VolumeAttachments per driver
    )
)
def test_the_bound_never_changes_the_outcome(
    monkeypatch: pytest.MonkeyPatch, case: tuple[PodInfo, list[PodInfo], list[str], int, str, int]
) -> None:
    """Filter with the volume bound (a node that passes however its pods' volumes resolve is
    passed without resolving them) and with the pod's own volumes counted once per kind of
    node answers as the exact count per node alone."""
    claims = [ephemeral_claim("abc-x", "12345II"), ephemeral_claim("abc-y", "12345II")]
    with_shortcuts = run(*case, extra_claims=claims)
    with monkeypatch.context() as patched:
        patched.setattr(NodeVolumeLimits, "_within_limits_at_most", lambda *_: False)
        patched.setattr(translation, "migration_key", lambda _: object())  # never the same key twice
        exact = run(*case, extra_claims=claims)
    assert with_shortcuts == exact


def test_the_new_pods_volumes_are_counted_once_per_kind_of_node(monkeypatch: pytest.MonkeyPatch) -> None:
    counted: list[object] = []
    counting = NodeVolumeLimits._attachable_volumes

    def recording(self: NodeVolumeLimits, view: Any, pod: PodInfo, csi_node: Any, new_pod: bool, result: Any) -> None:
        if new_pod:
            counted.append(translation.migration_key(csi_node))
        counting(self, view, pod, csi_node, new_pod, result)

    monkeypatch.setattr(NodeVolumeLimits, "_attachable_volumes", recording)
    nodes = [NodeInfo(node(f"n{i}")) for i in range(4)]
    with_csi_node = [csi_node(f"n{i}", {EBS: 0}, migrated=AWS_IN_TREE) for i in (1, 3)]
    plugin = NodeVolumeLimits(
        None, cast(Handle, StorageHandle([*fake_pvs([AWS_IN_TREE]), *fake_pvcs([AWS_IN_TREE]), *with_csi_node], nodes))
    )
    state = CycleState()
    plugin.pre_filter(state, IN_TREE_ONE, nodes)
    # Without a CSINode the in-tree volume is not migrated and does not count; with one it does.
    assert [plugin.filter(state, IN_TREE_ONE, n) for n in nodes] == [None, EXCEEDED, None, EXCEEDED]
    assert counted == [False, True]  # once for the nodes without a CSINode, once for those with one


def test_the_bound_follows_the_nodes_pods() -> None:
    """The bound is kept per node until its pods change: a pod added to the node counts."""
    info = NodeInfo(node(NODE))
    info.add_pod(EBS_ONE)
    objects = [*fake_pvs([EBS]), *fake_pvcs([EBS]), csi_node(NODE, {EBS: 2})]
    plugin = NodeVolumeLimits(None, cast(Handle, StorageHandle(objects, [info])))
    new_pod = pod_info(volumes=[claim_volume(f"csi-{EBS}-3", "v0")])
    assert plugin.filter(CycleState(), new_pod, info) is None
    info.add_pod(pod_info(volumes=[claim_volume(f"csi-{EBS}-1", "v0")]))
    assert plugin.filter(CycleState(), new_pod, info) == EXCEEDED
