"""What the scheduler tells the cluster about a pod it did not place: condition reasons and the
message limit (upstream ``pkg/scheduler/schedule_one.go``: ``v1.PodReasonUnschedulable``,
``SchedulerError``, ``truncateMessage``)."""

from __future__ import annotations

REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"
# Ours (no upstream equivalent): the pod's namespace has a profile for its schedulerName that
# does not serve; the pod waits rather than fall back to the cluster-wide profile.
REASON_PROFILE_NOT_SERVING = "ProfileNotServing"
MAX_MESSAGE_LENGTH = 1024  # upstream truncateMessage


def truncate_message(message: str) -> str:
    if len(message) <= MAX_MESSAGE_LENGTH:
        return message
    suffix = " ..."
    return message[: MAX_MESSAGE_LENGTH - len(suffix)] + suffix
