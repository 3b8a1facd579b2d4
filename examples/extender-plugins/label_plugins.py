"""Two small out-of-tree plugins, as a team would write them (docs/extenders.md).

Installed with ``pip install -e examples/extender-plugins``, they register through the
``crd_scheduler.plugins`` entry-point group, so any profile may name them, and
``crd-scheduler extender serve`` can answer a stock kube-scheduler with them.

``RefuseLabel`` refuses nodes labelled ``example.com/refuse`` (unresolvable: preemption cannot
change a label); ``ScoreByLabel`` scores a node by its ``example.com/score`` label (0..100).
"""

from __future__ import annotations

from typing import Any

from scheduler_core.framework import CycleState, Handle, NodeInfo, PodInfo, Status

REFUSE_LABEL = "example.com/refuse"
SCORE_LABEL = "example.com/score"


class RefuseLabel:
    name = "RefuseLabel"
    args_model = None

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        if REFUSE_LABEL in node_info.labels:
            return Status.unresolvable(f"node(s) had label {REFUSE_LABEL}")
        return None


class ScoreByLabel:
    name = "ScoreByLabel"
    args_model = None

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        try:
            return max(0, min(100, int(node_info.labels.get(SCORE_LABEL, "0")))), None
        except ValueError:
            return 0, None
