"""GangScheduling: upstream v1.36's alpha gang plugin (``scheduling.k8s.io/v1alpha2`` PodGroup)."""

from scheduler_core.plugins.gangscheduling.gang_scheduling import GangScheduling

__all__ = ["GangScheduling"]
