"""Storage objects as the volume plugins read them: claims, volumes, classes, CSI nodes.

Shared by VolumeBinding, VolumeRestrictions, VolumeZone and NodeVolumeLimits. Objects reach
plugins only through ``handle.objects(kind)`` as plain manifests; :class:`StorageView` indexes
the kinds a cycle needs, lazily and once per cycle, so a pod without claims never touches them.

Helpers follow upstream ``k8s.io/component-helpers/storage/volume`` (``pv_helpers.go``,
``helpers.go``), ``storage/ephemeral`` and ``pkg/apis/core/v1/helper``
(``MatchTopologySelectorTerms``); lookups fail with the messages of the client-go listers
(``persistentvolumeclaim "x" not found``).

Two readings of hand-written manifests, documented because ``simulate`` takes them as input:

* API-server defaulting (``SetDefaults_StorageClass``): a StorageClass without
  ``volumeBindingMode`` binds Immediate;
* a PersistentVolume without ``status.phase`` is read in the PV controller's steady state:
  Available when it has no ``claimRef``, Bound when it has one. An explicit phase is kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any, Protocol

from scheduler_core.framework.cycle_state import CycleState
from scheduler_core.framework.interface import Handle

# The object fields every kind shares, re-exported for the volume plugins that import them here.
from scheduler_core.framework.manifest import DEFAULT_NAMESPACE as DEFAULT_NAMESPACE
from scheduler_core.framework.manifest import Manifest as Manifest
from scheduler_core.framework.manifest import annotations_of as annotations_of
from scheduler_core.framework.manifest import labels_of as labels_of
from scheduler_core.framework.manifest import meta as meta
from scheduler_core.framework.manifest import name_of as name_of
from scheduler_core.framework.manifest import namespace_of as namespace_of
from scheduler_core.framework.manifest import spec as spec
from scheduler_core.framework.manifest import status as status
from scheduler_core.framework.node_selector import NodeSelector, parse_node_selector
from scheduler_core.framework.quantity import QuantityError, parse_quantity
from scheduler_core.framework.types import PodInfo

PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
PERSISTENT_VOLUME = "PersistentVolume"
STORAGE_CLASS = "StorageClass"
CSI_NODE = "CSINode"
CSI_DRIVER = "CSIDriver"
CSI_STORAGE_CAPACITY = "CSIStorageCapacity"
VOLUME_ATTACHMENT = "VolumeAttachment"

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"

BINDING_IMMEDIATE = "Immediate"
BINDING_WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
VOLUME_AVAILABLE = "Available"
VOLUME_BOUND = "Bound"
CLAIM_LOST = "Lost"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"


def manifest_of(obj: object, kind: str) -> Manifest:
    """A queueing hint's storage event object: the manifest as is; anything else raises
    TypeError, which the queue counts as QUEUE (as upstream)."""
    if isinstance(obj, Mapping):
        return obj
    raise TypeError(f"expected a {kind}, got {type(obj).__name__}")


class NotFound(LookupError):
    """An object a lister did not find; ``str`` is the lister's message."""


def not_found(resource: str, name: str) -> NotFound:
    """``apierrors.NewNotFound(<group>.Resource(resource), name)`` as client-go listers raise it."""
    return NotFound(f'{resource} "{name}" not found')


def claim_request(pvc: Manifest) -> Fraction:
    """``spec.resources.requests.storage`` of a claim (zero when unset, as Go's zero Quantity)."""
    return quantity_or_zero(((spec(pvc).get("resources") or {}).get("requests") or {}).get("storage"))


def volume_capacity(pv: Manifest) -> Fraction:
    """``spec.capacity.storage`` of a volume (zero when unset)."""
    return quantity_or_zero((spec(pv).get("capacity") or {}).get("storage"))


def quantity_or_zero(text: object) -> Fraction:
    if not isinstance(text, str | int | float):
        return Fraction(0)
    try:
        return parse_quantity(text)
    except QuantityError:
        return Fraction(0)


def claim_class(pvc: Manifest) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation first, then ``storageClassName``."""
    ann = annotations_of(pvc)
    if BETA_STORAGE_CLASS_ANNOTATION in ann:
        return str(ann[BETA_STORAGE_CLASS_ANNOTATION])
    return str(spec(pvc).get("storageClassName") or "")


def volume_class(pv: Manifest) -> str:
    """``GetPersistentVolumeClass``."""
    ann = annotations_of(pv)
    if BETA_STORAGE_CLASS_ANNOTATION in ann:
        return str(ann[BETA_STORAGE_CLASS_ANNOTATION])
    return str(spec(pv).get("storageClassName") or "")


def volume_phase(pv: Manifest) -> str:
    phase = status(pv).get("phase")
    if phase:
        return str(phase)
    return VOLUME_BOUND if spec(pv).get("claimRef") else VOLUME_AVAILABLE


def binding_mode(sc: Manifest) -> str:
    return str(sc.get("volumeBindingMode") or BINDING_IMMEDIATE)


def is_pvc_fully_bound(pvc: Manifest) -> bool:
    """``isPVCFullyBound``: a volume name and the bind-completed annotation."""
    return bool(spec(pvc).get("volumeName")) and ANN_BIND_COMPLETED in annotations_of(pvc)


def is_volume_bound_to_claim(pv: Manifest, pvc: Manifest) -> bool:
    """``IsVolumeBoundToClaim``: the claimRef names the claim (and its uid, when set)."""
    ref = spec(pv).get("claimRef")
    if not ref:
        return False
    if name_of(pvc) != (ref.get("name") or "") or namespace_of(pvc) != (ref.get("namespace") or DEFAULT_NAMESPACE):
        return False
    uid = ref.get("uid") or ""
    return not uid or uid == (meta(pvc).get("uid") or "")


def access_modes(obj: Manifest) -> list[str]:
    return list(spec(obj).get("accessModes") or ())


# -- pod volumes ----------------------------------------------------------------------------
def pod_volumes(pod: PodInfo) -> Sequence[Manifest]:
    result: Sequence[Manifest] = spec(pod.pod).get("volumes") or ()
    return result


def claim_name(pod: PodInfo, volume: Manifest) -> tuple[str | None, bool]:
    """The claim a volume uses and whether it is a generic ephemeral volume
    (``ephemeral.VolumeClaimName``: ``<pod>-<volume>``); ``None`` for other volumes."""
    source = volume.get("persistentVolumeClaim")
    if source is not None:
        return str(source.get("claimName") or ""), False
    if volume.get("ephemeral") is not None:
        return f"{pod.name}-{volume.get('name') or ''}", True
    return None, False


def claim_names(pod: PodInfo) -> set[str]:
    """Every claim the pod's volumes use, generic ephemeral volumes' included."""
    return {name for volume in pod_volumes(pod) if (name := claim_name(pod, volume)[0]) is not None}


def pvc_claim_names(pod: PodInfo) -> list[str]:
    """``getPersistentVolumeClaimNameFromPod``: the claims of ``persistentVolumeClaim`` volumes
    only (a generic ephemeral volume's claim left out)."""
    return [
        str(source.get("claimName") or "")
        for volume in pod_volumes(pod)
        if (source := volume.get("persistentVolumeClaim")) is not None
    ]


def has_claims(pod: PodInfo) -> bool:
    return any(v.get("persistentVolumeClaim") is not None or v.get("ephemeral") is not None for v in pod_volumes(pod))


def volume_is_for_pod(pod: PodInfo, pvc: Manifest) -> str | None:
    """``ephemeral.VolumeIsForPod``: the error message, or None when the pod controls the claim."""
    controlled = any(
        ref.get("controller") and ref.get("uid") == pod.uid for ref in meta(pvc).get("ownerReferences") or ()
    )
    if namespace_of(pvc) != pod.namespace or not controlled:
        return (
            f"PVC {namespace_of(pvc)}/{name_of(pvc)} was not created for pod "
            f"{pod.namespace}/{pod.name} (pod is not owner)"
        )
    return None


# -- selectors --------------------------------------------------------------------------------
def match_topology_selector_terms(terms: Sequence[Manifest] | None, labels: Mapping[str, str]) -> bool:
    """``v1helper.MatchTopologySelectorTerms``: no terms match everything; terms are ORed, a
    term's ``matchLabelExpressions`` (key In values) ANDed; an empty term, or one with an empty
    value list (an invalid requirement), matches nothing."""
    if not terms:
        return True
    return any(_topology_term_matches(term.get("matchLabelExpressions") or (), labels) for term in terms)


def _topology_term_matches(expressions: Sequence[Manifest], labels: Mapping[str, str]) -> bool:
    if not expressions:
        return False
    for expression in expressions:
        values = expression.get("values") or ()
        key = expression.get("key") or ""
        if not values or key not in labels or labels[key] not in values:
            return False
    return True


# -- the per-cycle view -------------------------------------------------------------------------
VIEW_STATE_KEY = "VolumeStorageObjects"  # shared by the volume plugins within a cycle


class ObjectLister(Protocol):
    """Where a view reads objects: the plugin's :class:`Handle` (a lister's ``List`` and ``Get``)."""

    def objects(self, kind: str) -> Iterable[Any]: ...

    def lookup(self, kind: str, namespace: str, name: str) -> Any | None: ...

    def objects_version(self, kind: str) -> int | None: ...


# The kinds whose change counters a view reads when it is made (:meth:`StorageView.version`).
VERSIONED_KINDS = (PERSISTENT_VOLUME_CLAIM, PERSISTENT_VOLUME, STORAGE_CLASS)


def scan(objects: Iterable[Manifest], namespace: str, name: str) -> Manifest | None:
    """:meth:`ObjectLister.lookup` by listing, for a lister without an index: the object named
    ``name`` in ``namespace`` (in any namespace when ``namespace`` is "": a cluster-scoped kind)."""
    for obj in objects:
        if name_of(obj) == name and (not namespace or namespace_of(obj) == namespace):
            return obj
    return None


class StorageView:
    """The storage objects of one cycle: each kind listed on first use of :meth:`all`, single
    objects looked up through the backend's index (and remembered for the cycle)."""

    __slots__ = ("_found", "_listed", "_lister", "_node_affinity", "_versions")

    def __init__(self, lister: ObjectLister) -> None:
        self._lister = lister
        # Read before any object: what the view reads is at least as new as these numbers.
        self._versions = {kind: lister.objects_version(kind) for kind in VERSIONED_KINDS}
        self._listed: dict[str, list[Manifest]] = {}
        self._found: dict[tuple[str, str, str], Manifest | None] = {}
        self._node_affinity: dict[int, tuple[Manifest, NodeSelector | None]] = {}

    def clone(self) -> StorageView:
        # Objects do not change within a cycle; what-if evaluations may share the view.
        return self

    def version(self, *kinds: str) -> tuple[int, ...] | None:
        """The backend's change counters of ``kinds`` (of :data:`VERSIONED_KINDS`) when the view
        was made, or None when one is not counted: the key under which a plugin may keep, across
        cycles, what it derived from these kinds' objects."""
        numbers = []
        for kind in kinds:
            number = self._versions[kind]
            if number is None:
                return None
            numbers.append(number)
        return tuple(numbers)

    def all(self, kind: str) -> Iterable[Manifest]:
        listed = self._listed.get(kind)
        if listed is None:
            listed = self._listed[kind] = list(self._lister.objects(kind) or ())
        return listed

    def find(self, kind: str, name: str, namespace: str = "") -> Manifest | None:
        key = (kind, namespace, name)
        try:
            return self._found[key]
        except KeyError:
            found = self._found[key] = self._lister.lookup(kind, namespace, name)
            return found

    def pvc(self, namespace: str, name: str) -> Manifest:
        found = self.find(PERSISTENT_VOLUME_CLAIM, name, namespace)
        if found is None:
            raise not_found("persistentvolumeclaim", name)
        return found

    def pv(self, name: str) -> Manifest:
        found = self.find(PERSISTENT_VOLUME, name)
        if found is None:
            raise not_found("persistentvolume", name)
        return found

    def storage_class(self, name: str) -> Manifest:
        found = self.find(STORAGE_CLASS, name)
        if found is None:
            raise not_found("storageclass.storage.k8s.io", name)
        return found

    def csi_node(self, name: str) -> Manifest | None:
        return self.find(CSI_NODE, name)

    def check_node_affinity(self, pv: Manifest, node_labels: Mapping[str, str]) -> bool:
        """``CheckNodeAffinity``: the PV's required node affinity matches the node's labels (the
        node is matched by labels alone, so ``matchFields`` terms are not checked); a term that
        does not parse matches nothing. Parsed selectors are kept for the cycle."""
        memo = self._node_affinity.get(id(pv))
        if memo is not None and memo[0] is pv:  # the object itself is kept, so ids are not reused
            selector = memo[1]
        else:
            required = (spec(pv).get("nodeAffinity") or {}).get("required")
            selector = None if required is None else parse_node_selector(required)
            self._node_affinity[id(pv)] = (pv, selector)
        return selector is None or selector.match(node_labels, "")


def storage_view(state: CycleState, handle: Handle) -> StorageView:
    """The cycle's view, created by the first volume plugin that needs one."""
    try:
        return state.read_as(VIEW_STATE_KEY, StorageView)
    except KeyError:
        view = StorageView(handle)
        state.write(VIEW_STATE_KEY, view)
        return view
