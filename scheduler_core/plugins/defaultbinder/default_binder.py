"""DefaultBinder: bind the pod to the chosen node through the cluster API.

Upstream: ``pkg/scheduler/framework/plugins/defaultbinder/default_binder.go``, which posts a
``v1.Binding`` and turns an API error into an Error status. Here the backend behind
``handle.api`` (the operator's client, or the simulator) does the call and returns the
status; this plugin only delegates, in the binding cycle, with the annotations the Binding
carries (``CycleState.binding_annotations``: the explanation of ``explain: Annotate``).
"""

from __future__ import annotations

from scheduler_core.framework import CycleState, Handle, PodInfo, Status
from scheduler_core.plugins import names

NAME = names.DEFAULT_BINDER


class DefaultBinder:
    name = NAME
    args_model = None

    def __init__(self, args: object, handle: Handle) -> None:
        self._handle = handle

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return await self._handle.api.bind(pod, node_name, state.binding_annotations)
