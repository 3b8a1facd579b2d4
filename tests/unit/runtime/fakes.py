"""In-test plugins for runtime tests: each serves the extension points its methods name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from scheduler_core.framework import (
    CycleState,
    NodeInfo,
    NodeScore,
    PodInfo,
    PreFilterResult,
    QueuedPodInfo,
    Status,
)


class Sort:
    name = "Sort"
    args_model = None

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return a.timestamp < b.timestamp


class OtherSort(Sort):
    name = "OtherSort"


class Binder:
    name = "Binder"
    args_model = None
    calls: list[tuple[str, str]] = []

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        Binder.calls.append((pod.name, node_name))
        return None


class SkipBinder(Binder):
    name = "SkipBinder"

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return Status.skip()


class Journal:
    """Records the order of calls across plugins of one test."""

    def __init__(self) -> None:
        self.calls: list[str] = []


class ScorerArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    bonus: int = Field(default=0, ge=0, le=100)


def make_plugin(
    name: str,
    *,
    journal: Journal | None = None,
    filter_status: dict[str, Status] | None = None,
    pre_filter: tuple[PreFilterResult | None, Status | None] | None = None,
    scores: dict[str, int] | None = None,
    normalize: bool = False,
    reserve_status: Status | None = None,
    permit: tuple[Status | None, float] | None = None,
    points: Sequence[str] = (),
    args_model: type[BaseModel] | None = None,
) -> type[Any]:
    """A plugin class named ``name`` serving ``points`` with canned answers."""
    log = journal or Journal()
    methods: dict[str, Any] = {"name": name, "args_model": args_model}

    def __init__(self: Any, args: Any, handle: Any) -> None:
        self.args = args
        self.handle = handle

    methods["__init__"] = __init__
    if "pre_filter" in points:
        pre_filter_answer = pre_filter or (None, None)

        def pre_filter_(self: Any, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Any:
            log.calls.append(f"{name}.pre_filter")
            return pre_filter_answer

        methods["pre_filter"] = pre_filter_
    if "filter" in points:

        def filter_(self: Any, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
            log.calls.append(f"{name}.filter({node.name})")
            return (filter_status or {}).get(node.name)

        methods["filter"] = filter_
    if "score" in points:

        def score(self: Any, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
            return (scores or {}).get(node.name, 0), None

        methods["score"] = score
        if normalize:

            def normalize_score(self: Any, state: CycleState, pod: PodInfo, node_scores: list[NodeScore]) -> None:
                top = max(s.score for s in node_scores) or 1
                for s in node_scores:
                    s.score = s.score * 100 // top

            methods["normalize_score"] = normalize_score
    if "reserve" in points:

        def reserve(self: Any, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
            log.calls.append(f"{name}.reserve")
            return reserve_status

        def unreserve(self: Any, state: CycleState, pod: PodInfo, node_name: str) -> None:
            log.calls.append(f"{name}.unreserve")

        methods["reserve"] = reserve
        methods["unreserve"] = unreserve
    if "permit" in points:

        def permit_(self: Any, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
            log.calls.append(f"{name}.permit")
            return permit or (None, 0.0)

        methods["permit"] = permit_
    if "pre_bind" in points:

        async def pre_bind(self: Any, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
            log.calls.append(f"{name}.pre_bind")
            return None

        methods["pre_bind"] = pre_bind
    if "post_bind" in points:

        async def post_bind(self: Any, state: CycleState, pod: PodInfo, node_name: str) -> None:
            log.calls.append(f"{name}.post_bind")

        methods["post_bind"] = post_bind
    return type(name, (), methods)
