"""DefaultPreemption: the PostFilter plugin that evicts lower-priority pods for a pod that fits
nowhere (upstream ``pkg/scheduler/framework/plugins/defaultpreemption`` and
``pkg/scheduler/framework/preemption``, k8s.io/kubernetes v1.36.3)."""

from scheduler_core.plugins.defaultpreemption.args import DefaultPreemptionArgs
from scheduler_core.plugins.defaultpreemption.default_preemption import DefaultPreemption

__all__ = ["DefaultPreemption", "DefaultPreemptionArgs"]
