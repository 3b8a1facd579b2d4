"""Status codes and the Status a plugin returns.

A plugin returns ``None`` for success, or a :class:`Status`. What the scheduler does
with each code follows upstream ``pkg/scheduler/framework/interface.go``:

============================  ==============================================================
code                          consequence
============================  ==============================================================
SUCCESS                       go on (plugins normally return ``None`` instead)
ERROR                         internal error: the cycle aborts, the pod goes to backoffQ
UNSCHEDULABLE                 the node (or pod) does not fit now; preemption may help; the
                              pod waits in the unschedulable pool for a hinted event
UNSCHEDULABLE_AND_UNRESOLVABLE  as UNSCHEDULABLE, but preemption cannot help on that node
WAIT                          Permit only: the pod waits (bounded) for ``allow``/``reject``
SKIP                          PreFilter/PreScore: skip this plugin's Filter/Score for the
                              cycle; Bind: let the next bind plugin decide
PENDING                       the pod waits for something outside the scheduler; it is
                              requeued by an event (or the 5-minute flush), never by
                              backoff alone
============================  ==============================================================
"""

from __future__ import annotations

import enum


class Code(enum.IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    @property
    def upstream_name(self) -> str:
        return _UPSTREAM_NAMES[self]


_UPSTREAM_NAMES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}

_REJECTED = frozenset({Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING})


class Status:
    """The result of running a plugin: a code, human-readable reasons and the plugin."""

    __slots__ = ("code", "error", "plugin", "reasons")

    def __init__(
        self,
        code: Code,
        *reasons: str,
        plugin: str = "",
        error: BaseException | None = None,
    ) -> None:
        self.code = code
        self.reasons: tuple[str, ...] = reasons
        self.plugin = plugin
        self.error = error
        if error is not None and not reasons:
            self.reasons = (str(error),)

    # Constructors, named as the codes are used.
    @classmethod
    def unschedulable(cls, *reasons: str) -> Status:
        return cls(Code.UNSCHEDULABLE, *reasons)

    @classmethod
    def unresolvable(cls, *reasons: str) -> Status:
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)

    @classmethod
    def as_error(cls, error: BaseException | str) -> Status:
        if isinstance(error, str):
            error = RuntimeError(error)
        return cls(Code.ERROR, error=error)

    @classmethod
    def skip(cls) -> Status:
        return cls(Code.SKIP)

    @classmethod
    def wait(cls, *reasons: str) -> Status:
        return cls(Code.WAIT, *reasons)

    @classmethod
    def pending(cls, *reasons: str) -> Status:
        return cls(Code.PENDING, *reasons)

    def with_plugin(self, plugin: str) -> Status:
        self.plugin = plugin
        return self

    def is_success(self) -> bool:
        return self.code is Code.SUCCESS

    def is_wait(self) -> bool:
        return self.code is Code.WAIT

    def is_skip(self) -> bool:
        return self.code is Code.SKIP

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending (upstream ``IsRejected``)."""
        return self.code in _REJECTED

    def message(self) -> str:
        """Reasons joined by ", " as upstream ``Status.Message``."""
        return ", ".join(self.reasons)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return self.code is other.code and self.reasons == other.reasons

    def __hash__(self) -> int:
        return hash((self.code, self.reasons))

    def __repr__(self) -> str:
        plugin = f", plugin={self.plugin!r}" if self.plugin else ""
        return f"Status({self.code.upstream_name}, {list(self.reasons)!r}{plugin})"


def is_success(status: Status | None) -> bool:
    """``None`` and a SUCCESS status are both success."""
    return status is None or status.code is Code.SUCCESS
