"""Why a pod fits no node: :class:`Diagnosis` and :class:`FitError`.

Upstream ``pkg/scheduler/framework/types.go`` (v1.36.3): ``Diagnosis`` collects the statuses
of the nodes a cycle rejected (a :class:`~scheduler_core.framework.types.NodeToStatus`), the
plugins that rejected the pod (which the queue keys its queueing hints on) and the PreFilter and
PostFilter messages; ``FitError.Error`` renders them as the FailedScheduling message. Both the
scheduling cycle and preemption's dry run (which reports the statuses of its own dry run) build
that message here, so there is one copy of upstream's format.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from scheduler_core.framework.status import Code, Status
from scheduler_core.framework.types import PodInfo

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"


def reasons_histogram(num_all_nodes: int, statuses: Mapping[str, Status], absent: Status | None) -> str:
    """``0/N nodes are available:`` and the sorted histogram of reasons, nodes missing from
    ``statuses`` counting ``absent``'s reasons (upstream ``FitError.Error`` without the
    PreFilter/PostFilter messages)."""
    message = NO_NODE_AVAILABLE_MSG.format(num_all_nodes) + ":"
    histogram: Counter[str] = Counter()
    # Nodes rejected alike share equal statuses (often one object): count each once.
    for status, nodes in Counter(statuses.values()).items():
        for reason in status.reasons:
            histogram[reason] += nodes
    missing = num_all_nodes - len(statuses)
    if missing > 0 and absent is not None:
        for reason in absent.reasons:
            histogram[reason] += missing
    if histogram:
        message += " " + ", ".join(sorted(f"{count} {reason}" for reason, count in histogram.items())) + "."
    return message


@dataclass(slots=True)
class Diagnosis:
    """Why nodes were rejected: per-node statuses, and the statuses of nodes not listed."""

    node_to_status: dict[str, Status] = field(default_factory=dict)
    absent_status: Status | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def add_plugin_status(self, status: Status) -> None:
        if not status.plugin:
            return
        if status.code is Code.PENDING:
            self.pending_plugins.add(status.plugin)
        elif status.is_rejected():
            self.unschedulable_plugins.add(status.plugin)


class FitError(Exception):
    """The pod fits no node; ``str()`` is upstream's FailedScheduling message."""

    def __init__(self, pod: PodInfo, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        super().__init__()
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis

    def __str__(self) -> str:
        d = self.diagnosis
        if d.pre_filter_msg:
            message = NO_NODE_AVAILABLE_MSG.format(self.num_all_nodes) + f": {d.pre_filter_msg}."
        else:
            message = reasons_histogram(self.num_all_nodes, d.node_to_status, d.absent_status)
        if d.post_filter_msg:
            message += f" {d.post_filter_msg}"  # the message carries its own period (v1.36 types.go)
        return message
