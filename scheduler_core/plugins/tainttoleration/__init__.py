"""TaintToleration plugin."""

from scheduler_core.plugins.tainttoleration.taint_toleration import TaintToleration

__all__ = ["TaintToleration"]
