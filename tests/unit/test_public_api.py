"""The plugin API is what ``scheduler_core.framework`` exports; this pins it (STYLE habit 1).

Changing it is a decision about every out-of-tree plugin: update the list on purpose.
"""

from __future__ import annotations

import scheduler_core.framework as framework

PINNED = {
    "ASSIGNED_POD_ADD",
    "ASSIGNED_POD_DELETE",
    "ASSIGNED_POD_UPDATE",
    "CPU",
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "DEFAULT_SCHEDULER_NAME",
    "EPHEMERAL_STORAGE",
    "MAX_NODE_SCORE",
    "MAX_TOTAL_SCORE",
    "MEMORY",
    "MIN_NODE_SCORE",
    "NODE_ADD",
    "NODE_DELETE",
    "NO_EXECUTE",
    "NO_SCHEDULE",
    "PODS",
    "PREFER_NO_SCHEDULE",
    "ActionType",
    "BatchFilterPlugin",
    "BatchScorePlugin",
    "BindPlugin",
    "BoolArray",
    "ClusterAPI",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "CycleState",
    "EnqueueExtensions",
    "EventResource",
    "FilterPlugin",
    "Handle",
    "HostPort",
    "ImageStateSummary",
    "IntArray",
    "LabelColumn",
    "NodeColumns",
    "NodeInfo",
    "NodeName",
    "NodeScore",
    "Nominator",
    "PermitPlugin",
    "Plugin",
    "PluginFactory",
    "PodInfo",
    "PodUID",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterExtensions",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QuantityError",
    "QueueSortPlugin",
    "QueuedPodInfo",
    "QueueingHint",
    "QueueingHintFn",
    "ReservePlugin",
    "Resource",
    "ScoreExtensions",
    "ScorePlugin",
    "SnapshotLister",
    "StateData",
    "StateNotFound",
    "Status",
    "Taint",
    "TaintColumns",
    "Toleration",
    "WaitingPod",
    "compute_pod_resources",
    "default_normalize_score",
    "default_normalize_score_batch",
    "is_extended_resource_name",
    "is_hugepage_resource_name",
    "is_scalar_resource_name",
    "is_success",
    "milli_value",
    "parse_quantity",
    "pod_requests",
    "tolerations_tolerate_taint",
    "value",
}


def test_exported_names_are_pinned() -> None:
    assert set(framework.__all__) == PINNED


def test_every_exported_name_exists() -> None:
    missing = [name for name in framework.__all__ if not hasattr(framework, name)]
    assert missing == []
