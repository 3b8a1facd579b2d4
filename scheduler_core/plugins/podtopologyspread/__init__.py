"""PodTopologySpread plugin: :mod:`.plugin` (extension points and queueing hints),
:mod:`.filtering` (PreFilter/Filter), :mod:`.scoring` (PreScore/Score), :mod:`.common`
(constraints, default selectors, pod counting), :mod:`.args`, :mod:`.gomath`."""

from scheduler_core.plugins.podtopologyspread.args import PodTopologySpreadArgs
from scheduler_core.plugins.podtopologyspread.plugin import PodTopologySpread

__all__ = ["PodTopologySpread", "PodTopologySpreadArgs"]
