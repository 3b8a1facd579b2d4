"""Moved to :mod:`tests.wrappers`, the one test kit; this name stays until the last importers
(tests/unit/scheduling, being edited beside) import the kit."""

from __future__ import annotations

from tests.wrappers import node, node_info, pod, pod_info

__all__ = ["node", "node_info", "pod", "pod_info"]
