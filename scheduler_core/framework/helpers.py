"""Small helpers shared by plugins (upstream ``pkg/scheduler/framework/plugins/helper``)."""

from __future__ import annotations

import numpy as np

from scheduler_core.framework.columns import IntArray
from scheduler_core.framework.cycle_state import CycleState
from scheduler_core.framework.interface import MAX_NODE_SCORE
from scheduler_core.framework.status import Status
from scheduler_core.framework.types import NodeScore, PodInfo


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> None:
    """Scale scores to 0..max_priority by the maximum, optionally reversed, in place
    (upstream ``helper.DefaultNormalizeScore``; Go integer division on non-negatives)."""
    max_count = max((s.score for s in scores), default=0)
    if max_count == 0:
        if reverse:
            for s in scores:
                s.score = max_priority
        return
    for s in scores:
        score = max_priority * s.score // max_count
        s.score = max_priority - score if reverse else score


def default_normalize_score_batch(max_priority: int, reverse: bool, scores: IntArray) -> None:
    """The array form of :func:`default_normalize_score`, in place."""
    if scores.size == 0:
        return
    max_count = int(scores.max())
    if max_count <= 0:
        if reverse:
            scores[:] = max_priority
        return
    # Scores are non-negative, so floor division equals Go's truncation.
    np.floor_divide(scores * max_priority, max_count, out=scores)
    if reverse:
        np.subtract(max_priority, scores, out=scores)


class DefaultNormalizeScore:
    """A plugin's NormalizeScore and its batch form as :func:`default_normalize_score` to
    ``MAX_NODE_SCORE`` (reversed when the class sets ``_normalize_reversed``), for the plugins
    whose ScoreExtensions are upstream's ``helper.DefaultNormalizeScore`` and nothing more."""

    _normalize_reversed = False

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, self._normalize_reversed, scores)
        return None

    def normalize_score_batch(self, state: CycleState, pod: PodInfo, scores: IntArray) -> Status | None:
        default_normalize_score_batch(MAX_NODE_SCORE, self._normalize_reversed, scores)
        return None
