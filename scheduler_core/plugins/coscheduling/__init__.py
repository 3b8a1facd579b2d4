"""Coscheduling: gang scheduling with scheduler-plugins' PodGroup (``scheduling.x-k8s.io``)."""

from scheduler_core.plugins.coscheduling.coscheduling import Coscheduling, CoschedulingArgs

__all__ = ["Coscheduling", "CoschedulingArgs"]
