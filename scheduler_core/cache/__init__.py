"""The scheduler cache (assume, forget) and the snapshot each cycle reads.

Upstream ``pkg/scheduler/backend/cache``. :class:`Cache` takes the cluster's nodes and
assigned pods plus the pods the scheduler has assumed; :meth:`Cache.update_snapshot` gives
the :class:`Snapshot` (nodes in zone round-robin order, with columnar arrays) that plugins
read through the framework's ``SnapshotLister``.
"""

from scheduler_core.cache.cache import (
    Cache,
    new_snapshot,
)
from scheduler_core.cache.errors import CacheError
from scheduler_core.cache.images import ImageStates, ImageStateSummary
from scheduler_core.cache.node_tree import NodeTree, get_zone_key
from scheduler_core.cache.snapshot import Snapshot

__all__ = [
    "Cache",
    "CacheError",
    "ImageStateSummary",
    "ImageStates",
    "NodeTree",
    "Snapshot",
    "get_zone_key",
    "new_snapshot",
]
