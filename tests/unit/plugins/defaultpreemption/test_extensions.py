"""The PreFilter extensions (AddPod/RemovePod) in a dry run: called for every pod the dry run
removes or adds back, in upstream's order (default_preemption.go ``SelectVictimsOnNode``), and
not at all for a plugin whose PreFilter returned Skip, as upstream's
``RunPreFilterExtensionRemovePod`` skips it. The handle answers for a skipped extension without
entering the framework's loop: the dry run asks per victim and per node (PreemptionPVs: 1.3
million times an attempt run), and most pods skip every plugin that has an extension."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from scheduler_core.framework import Code, CycleState, NodeInfo, PodInfo, PreFilterResult, Status
from scheduler_core.plugins.defaultpreemption.pdb import budgets
from scheduler_core.plugins.noderesources import NodeResourcesFit
from tests.unit.plugins.defaultpreemption.harness import HIGH, LARGE, LOW, MEDIUM, VERY_LARGE, make_env
from tests.wrappers import make_node, pod, pod_info


class Extension:
    """A PreFilter plugin with extensions that records them; Skip when ``skip`` is set."""

    name = "Extension"
    args_model = None
    skip = False
    calls: list[tuple[str, str]] = []

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        return None, Status(Code.SKIP) if Extension.skip else None

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None:
        Extension.calls.append(("add", to_add.name))
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo) -> Status | None:
        Extension.calls.append(("remove", to_remove.name))
        return None


@pytest.mark.parametrize(
    ("skip", "want_calls", "want_loops"),
    [
        pytest.param(
            False,
            # Both removed; "a" (started first) is tried first and reprieved; "b" does not fit.
            [("remove", "a"), ("remove", "b"), ("add", "a"), ("add", "b"), ("remove", "b")],
            5,
            id="extension run per removal and addition",
        ),
        pytest.param(True, [], 0, id="skipped extension: the framework is not asked"),
    ],
)
def test_extensions_in_select_victims_on_node(
    monkeypatch: pytest.MonkeyPatch, skip: bool, want_calls: list[tuple[str, str]], want_loops: int
) -> None:
    # 500m node; two 200m pods of low priority; the 300m preemptor fits beside one of them.
    pods = [
        pod("a", uid="a", node_name="n", priority=LOW, requests=MEDIUM, start_time="1970-01-01T00:00:01Z"),
        pod("b", uid="b", node_name="n", priority=LOW, requests=MEDIUM, start_time="1970-01-01T00:00:02Z"),
    ]
    env = make_env(
        [make_node().name("n").capacity_only(VERY_LARGE, pods="32").obj()], pods, plugins=(Extension, NodeResourcesFit)
    )
    monkeypatch.setattr(Extension, "skip", skip)
    monkeypatch.setattr(Extension, "calls", [])
    loops: list[str] = []
    for method in ("run_pre_filter_extension_add_pod", "run_pre_filter_extension_remove_pod"):
        original = getattr(env.fwk, method)

        def counted(*args: Any, _original: Any = original, _method: str = method) -> Status | None:
            loops.append(_method)
            return _original(*args)  # type: ignore[no-any-return]

        monkeypatch.setattr(env.fwk, method, counted)
    preemptor = pod_info("p", uid="p", priority=HIGH, requests=LARGE)
    state = env.pre_filtered_state(preemptor)
    assert (Extension.name in state.skip_filter_plugins) is skip
    node = env.snapshot.get("n")
    assert node is not None
    victims, violations, status = env.plugin.select_victims_on_node(
        state.clone(), preemptor, node.clone(), budgets(()), 0
    )
    assert (status, [v.name for v in victims], violations) == (None, ["b"], 0)
    assert Extension.calls == want_calls
    assert len(loops) == want_loops
