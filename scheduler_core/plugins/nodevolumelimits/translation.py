"""In-tree volume plugins seen as the CSI drivers they migrated to, for volume counting.

Upstream: ``k8s.io/csi-translation-lib`` (``translate.go`` and ``plugins/*.go``) and
``nodevolumelimits/utils.go`` (``isCSIMigrationOn``). Seven in-tree plugins are migratable;
counting against a CSI driver's limit happens only for the five whose migration is on
(AWS EBS, GCE PD, Azure Disk, Cinder, Portworx) and only on nodes with a CSINode object. The
volume handles are the ones the translator produces, so an in-tree volume and its CSI twin
count once.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

from scheduler_core.framework import Manifest
from scheduler_core.framework.storage import labels_of

LABEL_FAILURE_DOMAIN_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
UNSPECIFIED = "UNSPECIFIED"

Source = Manifest


class TranslationError(ValueError):
    pass


def _ebs_volume_id(kubernetes_id: str) -> str:
    """``KubernetesVolumeIDToEBSVolumeID``: ``aws://<zone>/vol-...`` or a bare volume id."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    aws_id = kubernetes_id.removeprefix("aws://").partition("/")[2].strip("/")
    if not aws_id.startswith("vol-") or "/" in aws_id:
        raise TranslationError(f"Invalid format for AWS volume ({kubernetes_id})")
    return aws_id


def _gce_pv_handle(source: Source, pv: Manifest | None) -> str:
    pd_name = source.get("pdName") or ""
    if pv is None:
        return f"projects/{UNSPECIFIED}/zones/{UNSPECIFIED}/disks/{pd_name}"
    labels = labels_of(pv)
    zones_label = labels.get(LABEL_FAILURE_DOMAIN_BETA_ZONE) or labels.get(LABEL_TOPOLOGY_ZONE) or ""
    zones = zones_label.split("__")
    if len(zones) == 1 and zones[0]:
        return f"projects/{UNSPECIFIED}/zones/{zones[0]}/disks/{pd_name}"
    if len(zones) > 1:
        regions = set()
        for zone in zones:
            parts = zone.split("-")
            if len(parts) != 3:
                raise TranslationError(
                    f"zone in unexpected format, expected: {{locale}}-{{region}}-{{zone}}, got: {zone}"
                )
            regions.add("-".join(parts[:2]))
        if len(regions) != 1:
            raise TranslationError("multiple or no regions gotten from zones")
        return f"projects/{UNSPECIFIED}/regions/{regions.pop()}/disks/{pd_name}"
    return f"projects/{UNSPECIFIED}/zones/{UNSPECIFIED}/disks/{pd_name}"


def _azure_disk_handle(source: Source, pv: Manifest | None) -> str:
    # The API defaults kind to Shared; only managed disks migrate.
    kind = source.get("kind") or "Shared"
    if str(kind).lower() != "managed":
        raise TranslationError(f"kind({kind}) is not supported in csi migration")
    return str(source.get("diskURI") or "")


@dataclass(frozen=True, slots=True)
class InTreePlugin:
    source: str  # the volume source field (pod volume or PV spec)
    plugin_name: str
    driver_name: str
    migration_on: bool
    handle: Callable[[Source, Manifest | None], str] | None = None


IN_TREE_PLUGINS = (
    InTreePlugin("gcePersistentDisk", "kubernetes.io/gce-pd", "pd.csi.storage.gke.io", True, _gce_pv_handle),
    InTreePlugin(
        "awsElasticBlockStore",
        "kubernetes.io/aws-ebs",
        "ebs.csi.aws.com",
        True,
        lambda s, _pv: _ebs_volume_id(str(s.get("volumeID") or "")),
    ),
    InTreePlugin(
        "cinder", "kubernetes.io/cinder", "cinder.csi.openstack.org", True, lambda s, _pv: str(s.get("volumeID") or "")
    ),
    InTreePlugin("azureDisk", "kubernetes.io/azure-disk", "disk.csi.azure.com", True, _azure_disk_handle),
    InTreePlugin("azureFile", "kubernetes.io/azure-file", "file.csi.azure.com", False),
    InTreePlugin("vsphereVolume", "kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com", False),
    InTreePlugin(
        "portworxVolume",
        "kubernetes.io/portworx-volume",
        "pxd.portworx.com",
        True,
        lambda s, _pv: str(s.get("volumeID") or ""),
    ),
)
_BY_PLUGIN_NAME = {p.plugin_name: p for p in IN_TREE_PLUGINS}


def plugin_for(source_holder: Manifest) -> InTreePlugin | None:
    """The in-tree plugin of a pod volume or PV spec (``CanSupport``/``CanSupportInline``)."""
    for plugin in IN_TREE_PLUGINS:
        if source_holder.get(plugin.source) is not None:
            return plugin
    return None


def is_inline_migratable(volume: Manifest) -> bool:
    return plugin_for(volume) is not None


def plugin_by_name(name: str) -> InTreePlugin | None:
    """``IsMigratableIntreePluginByName`` / ``GetCSINameFromInTreeName``."""
    return _BY_PLUGIN_NAME.get(name)


def is_csi_migration_on(csi_node: Manifest | None, plugin: InTreePlugin) -> bool:
    """Upstream ``isCSIMigrationOn`` (``nodevolumelimits/utils.go``). Reads of ``csi_node`` must
    show in :func:`migration_key`."""
    return csi_node is not None and plugin.migration_on


def migration_key(csi_node: Manifest | None) -> Hashable:
    """What :func:`is_csi_migration_on` reads of a node's CSINode: two nodes with the same key
    count a pod's volumes the same (CSILimits counts the new pod's once per key)."""
    return csi_node is not None


def translate(plugin: InTreePlugin, holder: Manifest, pv: Manifest | None) -> str:
    """The CSI volume handle of an in-tree volume (``holder`` is the pod volume or PV spec)."""
    if plugin.handle is None:
        raise TranslationError(f"no translation for {plugin.plugin_name}")
    return plugin.handle(holder[plugin.source], pv)
