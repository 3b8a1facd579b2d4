"""The small vocabularies scenarios draw from, kept small so that selectors often match.

Label values, taints, images and priority classes are shared by nodes, existing pods and the
pending pod; with a handful of values per key a random selector matches something often
enough to exercise both outcomes of every predicate.
"""

from __future__ import annotations

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
DISK = "parity.example/disk"
TIER = "parity.example/tier"  # numeric values, for Gt/Lt
ACCEL = "parity.example/accelerator"
APP = "app"
TRACK = "track"
SCENARIO = "parity.example/scenario"

ZONES = ("zone-a", "zone-b", "zone-c")
DISKS = ("ssd", "hdd")
TIERS = ("1", "2", "3", "4", "5")
ACCELS = ("gpu", "tpu")
APPS = ("web", "db", "cache", "batch")
TRACKS = ("stable", "canary")

EXTENDED_RESOURCE = "example.com/gpu"
# The extenders feature: one extended resource per scenario extender (managedResources, ignored by
# the scheduler), requested by the pods the extenders are to see; the full-object extender's score.
EXTENDER_RESOURCES = {
    "names": "parity.example/ext-names",
    "full": "parity.example/ext-full",
    "failing": "parity.example/ext-failing",
}
EXTENDER_SCORE = "parity.example/extender-score"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"

TAINT_KEYS = ("dedicated", "parity.example/spot", "gpu")
TAINT_VALUES = ("team-a", "team-b", "")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

MIB = 1024 * 1024
# (name as a pod names it, names a node reports for it, size in bytes). ImageLocality matches a
# pod's image (":latest" added when untagged) against the node's names verbatim, so some images
# are reported under the short name too and some only under the runtime's full name.
IMAGES: tuple[tuple[str, tuple[str, ...], int], ...] = (
    ("nginx:1.25", ("docker.io/library/nginx:1.25", "nginx:1.25"), 187 * MIB),
    ("redis", ("docker.io/library/redis:latest", "redis:latest"), 117 * MIB),
    ("registry.k8s.io/pause:3.10", ("registry.k8s.io/pause:3.10",), 320 * 1024),
    ("ghcr.io/example/trainer:2.1", ("ghcr.io/example/trainer:2.1",), 1900 * MIB),
    ("quay.io/example/postgres:16", ("quay.io/example/postgres:16",), 410 * MIB),
    ("busybox:1.36", ("docker.io/library/busybox:1.36",), 4 * MIB),
    ("python:3.12", ("docker.io/library/python:3.12", "python:3.12"), 1020 * MIB),
)

# Inline volumes VolumeRestrictions compares (kubernetes v1.36.3 volumerestrictions/volume_restrictions.go
# isVolumeConflict): two names each, so that pods often share one.
GCE_DISKS = ("disk-a", "disk-b")
EBS_VOLUMES = ("vol-0a", "vol-0b")
ISCSI_IQNS = ("iqn.2024-01.example.parity:a", "iqn.2024-01.example.parity:b")
RBD_MONITORS = ("10.0.0.1:6789", "10.0.0.2:6789", "10.0.0.3:6789")
RBD_IMAGES = ("image-a", "image-b")

HOST_PORTS = (8080, 8081, 9090)
HOST_IPS = ("", "", "127.0.0.1", "0.0.0.0")
PROTOCOLS = ("TCP", "TCP", "UDP")

# These classes say preemptionPolicy Never (the Priority admission plugin takes the policy from
# the class only): a pending pod of theirs never preempts. Only the ``preemption`` feature gives
# the pending pod PREEMPTOR_CLASS, above all others, which preempts lower-priority pods.
PRIORITY_CLASSES: tuple[tuple[str, int], ...] = (
    ("parity-low", 10),
    ("parity-mid", 1000),
    ("parity-high", 100000),
)
PREEMPTOR_CLASS = ("parity-preemptor", 1000000)
# The preemptor's probes: the same priority (filters see the same pod) but they never preempt.
PROBE_PREEMPTOR_CLASS = ("parity-preemptor-probe", 1000000)


def priority_classes() -> list[dict[str, object]]:
    return [
        *(priority_class(name, value) for name, value in PRIORITY_CLASSES),
        priority_class(*PREEMPTOR_CLASS, policy="PreemptLowerPriority"),
        priority_class(*PROBE_PREEMPTOR_CLASS),
    ]


def priority_class(name: str, value: int, policy: str = "Never") -> dict[str, object]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "preemptionPolicy": policy,
    }


# The volumes feature (bench/parity_harness/volumes.py): one CSI driver that the harness plays
# (it provisions claims annotated with a selected node), claim sizes, reclaim policy.
CSI_DRIVER = "parity.csi.example.com"
STORAGE_GIB = (1, 2, 5, 10, 20, 50)
READ_WRITE_ONCE = "ReadWriteOnce"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
READ_WRITE_MANY = "ReadWriteMany"

# The gates feature: schedulingGates names on the pending pod.
SCHEDULING_GATES = ("parity.example/quota", "parity.example/warmup")

# The dra feature (bench/parity_harness/dra.py): the DRA driver the harness plays.
DRA_DRIVER = "gpu.parity.example.com"
