"""A plugin that raises: the one mechanism that turns the exception into a Status.

A plugin reports a problem by returning a Status; raising is a bug (in an out-of-tree plugin,
or in ours). Upstream has no such case to handle (a panic ends kube-scheduler); here it must
never end the scheduling loop (issue 26). So every place that runs plugins catches what they
raise at *one* boundary per kind of work, and asks this module for the Status:

* the scheduling cycle (PreFilter, Filter, PostFilter, PreScore, Score, NormalizeScore, Reserve,
  Permit, the extender calls), in :mod:`scheduler_core.scheduler`: a SchedulerError for that
  pod, requeued, as upstream's ``handleSchedulingFailure`` treats an Error status
  (v1.36.3 ``pkg/scheduler/schedule_one.go``);
* the binding cycle (Permit's wait, PreBind, Bind; Unreserve and PostBind are logged), likewise;
* PreEnqueue, in :mod:`scheduler_core.queue.pre_enqueue`: an Error status gates the pod, as
  upstream's ``runPreEnqueuePlugin`` (``pkg/scheduler/backend/queue/scheduling_queue.go``);
* QueueSort's ``less``, in the scheduler: the FIFO order answers instead (see ``Scheduler._less``);
* queueing hints, in :mod:`scheduler_core.queue.hints`: QUEUE, as upstream;
* ``events_to_register``: when the profile is built, which refuses the profile.

The framework's runners stay free of try/except on the hot path: the plugin is named from the
exception's traceback, as the outermost frame whose ``self`` is one of the profile's plugins
(the extension-point method the framework called; a Filter that DefaultPreemption's dry run
calls is then reported as DefaultPreemption's PostFilter, the point whose run failed).
"""

from __future__ import annotations

from collections.abc import Iterable
from types import CodeType, TracebackType

from scheduler_core.framework.extension_points import EXTENSION_POINTS
from scheduler_core.framework.field import go_quote
from scheduler_core.framework.interface import Plugin
from scheduler_core.framework.status import Code, Status

# The method a framework calls -> the extension point's upstream name, for the message.
_POINTS: dict[str, str] = {p.method: p.config_name[0].upper() + p.config_name[1:] for p in EXTENSION_POINTS}
_POINTS.update(
    {
        "filter_batch": "Filter",
        "add_pod": "PreFilterExtensions AddPod",
        "remove_pod": "PreFilterExtensions RemovePod",
        "post_filter_async": "PostFilter",
        "score_batch": "Score",
        "normalize_score": "NormalizeScore",
        "normalize_score_batch": "NormalizeScore",
        "unreserve": "Unreserve",
        "events_to_register": "EnqueueExtensions",
    }
)


def culprit(error: BaseException, plugins: Iterable[Plugin]) -> tuple[str, str] | None:
    """(plugin name, extension point) of the plugin method ``error`` was raised through, or
    None when no plugin of ``plugins`` is on its traceback (our own code raised)."""
    by_id = {id(p): p for p in plugins}
    tb: TracebackType | None = error.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        owner = frame.f_locals.get("self") if "self" in frame.f_code.co_varnames else None
        if owner is not None and id(owner) in by_id and by_id[id(owner)] is owner:
            return owner.name, _point(owner, frame.f_code)
        tb = tb.tb_next
    return None


def _point(plugin: Plugin, code: CodeType) -> str:
    """The extension point whose method has ``code`` (found by code object: the method may be
    any callable the class holds under that name), else the code's own name."""
    for method, point in _POINTS.items():
        fn = getattr(type(plugin), method, None)
        if getattr(fn, "__code__", None) is code:
            return point
    return code.co_name


def raised_status(error: BaseException, plugins: Iterable[Plugin]) -> Status:
    """The Error status for ``error``, naming the plugin that raised it (``Status.plugin``) in
    upstream's wording for a failed run (``running PreFilter plugin "X": ...``)."""
    what = f"{type(error).__name__}: {error}"
    found = culprit(error, plugins)
    if found is None:
        return Status(Code.ERROR, f"unexpected error in the scheduling cycle: {what}", error=error)
    name, point = found
    return Status(Code.ERROR, f"running {point} plugin {go_quote(name)}: raised {what}", plugin=name, error=error)
