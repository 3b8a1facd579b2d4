"""Running a profile's PreEnqueue plugins on a pod about to enter activeQ or backoffQ.

Upstream: ``runPreEnqueuePlugins``/``runPreEnqueuePluginsForPod``/``runPreEnqueuePlugin`` in
``pkg/scheduler/backend/queue/scheduling_queue.go``. Plugins are those of the profile the
pod resolves to (``profile_of``), not of its schedulerName. The plugin that gated the pod last time
runs first; the first rejection gates the pod: the plugin joins the pod's unschedulable
plugins and is recorded as its gating plugin, with the events it registered, so only those
events (or a wildcard one) make the queue try again. A plugin that raises counts as an Error
status naming it (:mod:`scheduler_core.framework.faults`), which gates the pod as any rejection
does; an Error is logged at ERROR, as upstream's ``runPreEnqueuePlugin`` logs it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from scheduler_core.framework import ClusterEvent, Code, PodInfo, PreEnqueuePlugin, Status, is_success
from scheduler_core.framework.faults import raised_status
from scheduler_core.queue.queued import QueuedPod

log = logging.getLogger(__name__)


class PreEnqueueRunner:
    def __init__(
        self,
        plugin_events: Callable[[str], tuple[ClusterEvent, ...]],
        profile_of: Callable[[PodInfo], str | None],
    ) -> None:
        self._plugins: dict[str, tuple[PreEnqueuePlugin, ...]] = {}
        self._plugin_events = plugin_events
        self._profile_of = profile_of

    def set_profile(self, profile: str, plugins: Sequence[PreEnqueuePlugin]) -> None:
        self._plugins[profile] = tuple(plugins)

    def remove_profile(self, profile: str) -> None:
        self._plugins.pop(profile, None)

    def run(self, qp: QueuedPod) -> None:
        """Gate ``qp`` on the first rejection, or clear its gate when every plugin passes."""
        profile = self._profile_of(qp.pod_info)
        plugins = self._plugins.get(profile, ()) if profile is not None else ()
        gating = qp.gating_plugin
        if gating:
            first = next((p for p in plugins if p.name == gating), None)
            if first is not None and not self._run_one(first, qp):
                return
        for plugin in plugins:
            if gating and plugin.name == gating:
                continue
            if not self._run_one(plugin, qp):
                return
        qp.set_gating("", ())

    def _run_one(self, plugin: PreEnqueuePlugin, qp: QueuedPod) -> bool:
        status: Status | None
        try:
            status = plugin.pre_enqueue(qp.pod_info)
        except Exception as error:
            status = raised_status(error, (plugin,))
        if is_success(status):
            return True
        qp.unschedulable_plugins.add(plugin.name)
        qp.set_gating(plugin.name, self._plugin_events(plugin.name))
        if status is not None and status.code is Code.ERROR:
            log.error("Unexpected error running PreEnqueue plugin %s for pod %s: %s", plugin.name, qp.key,
                      status.message(), exc_info=status.error)  # fmt: skip
        else:
            log.debug("PreEnqueue plugin %s gated pod %s: %r", plugin.name, qp.key, status)
        return False
