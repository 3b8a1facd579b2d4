"""Metrics: a dependency-free registry with Prometheus text exposition, and kube-scheduler's
metric families (:mod:`scheduler_core.metrics.scheduler_metrics`)."""
