"""The one exception the cache raises.

Upstream's cache returns Go errors whose text names the pod as ``uid(namespace/name)``;
the messages here keep that text so logs read the same. Upstream exits the process on the
two "cache is corrupted" cases (a pod updated or removed on another node than the cache
holds); here they raise, leaving the cache unchanged, and the caller decides.
"""

from __future__ import annotations


class CacheError(Exception):
    """An operation the pod lifecycle does not allow, or a node the cache does not know."""
