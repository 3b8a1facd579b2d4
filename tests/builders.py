"""Moved to :mod:`tests.wrappers`, the one test kit; this name stays only for ``bench/tenancy.py``
(edited beside), its last importer."""

from __future__ import annotations

from tests.wrappers import node, node_info, pod, pod_info

__all__ = ["node", "node_info", "pod", "pod_info"]
