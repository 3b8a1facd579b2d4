"""InterPodAffinity plugin: :mod:`.plugin` (args, events, extension points), :mod:`.filtering`,
:mod:`.scoring`, :mod:`.terms` (affinity terms of a pod) and :mod:`.selector` (label selectors)."""

from scheduler_core.plugins.interpodaffinity.plugin import InterPodAffinity, InterPodAffinityArgs

__all__ = ["InterPodAffinity", "InterPodAffinityArgs"]
