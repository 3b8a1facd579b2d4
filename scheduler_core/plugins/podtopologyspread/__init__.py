"""PodTopologySpread plugin: :mod:`.plugin` (extension points and queueing hints),
:mod:`.filtering` (PreFilter/Filter), :mod:`.scoring` (PreScore/Score), :mod:`.common`
(constraints), :mod:`.counting` (matching pods per node and domain), :mod:`.defaults`
(default selectors), :mod:`.args`, :mod:`.gomath` (Go's Log and Round)."""

from scheduler_core.plugins.podtopologyspread.args import PodTopologySpreadArgs
from scheduler_core.plugins.podtopologyspread.plugin import PodTopologySpread

__all__ = ["PodTopologySpread", "PodTopologySpreadArgs"]
