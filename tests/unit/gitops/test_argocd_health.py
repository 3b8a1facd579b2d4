"""The Argo CD health check (examples/gitops/argocd-cm-health.yaml, shown in docs/gitops.md)
run by a Lua 5.1 interpreter (Argo CD's gopher-lua speaks 5.1) on statuses the operator writes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from lupa import lua51  # Lua 5.1, as Argo CD runs health checks; in the dev lock

from scheduler_operator.control.status import plugin_config_status, profile_status

ROOT = Path(__file__).resolve().parents[3]
SNIPPET = ROOT / "examples" / "gitops" / "argocd-cm-health.yaml"
KEY = "resource.customizations.health.scheduling.crd-scheduler.io_"
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
PLUGINS: dict[str, list[dict[str, object]]] = {"bind": [{"name": "DefaultBinder"}]}


def health_check(kind: str) -> str:
    return str(yaml.safe_load(SNIPPET.read_text())["data"][KEY + kind])


def assess(kind: str, obj: dict[str, Any]) -> tuple[str, str]:
    """What Argo CD would show: the script's ``hs.status`` and ``hs.message``."""
    lua = lua51.LuaRuntime()
    lua.globals().obj = lua.table_from(obj, recursive=True)
    result = lua.execute(health_check(kind))
    return str(result["status"]), str(result["message"])


def _profile(generation: int, status: dict[str, Any] | None) -> dict[str, Any]:
    obj: dict[str, Any] = {"kind": "SchedulerProfile", "metadata": {"name": "p", "generation": generation}}
    if status is not None:
        obj["status"] = status
    return obj


def _profile_status(generation: int, problems: list[str], serving: int | None) -> dict[str, Any]:
    return profile_status(
        generation=generation, problems=problems, serving_generation=serving, plugins=PLUGINS, previous=None, now=NOW
    )


@pytest.mark.parametrize(
    ("obj", "expected", "message"),
    [
        pytest.param(_profile(2, _profile_status(2, [], 2)), "Healthy", "serving generation 2", id="serving"),
        pytest.param(
            _profile(2, _profile_status(2, ["spec.plugins.score.enabled[0].name: plugin 'X' does not exist"], 1)),
            "Degraded",
            "SpecRejected: generation 2 refused, the last good generation 1 keeps serving: "
            "spec.plugins.score.enabled[0].name: plugin 'X' does not exist",
            id="refused-keeps-last-good",
        ),
        pytest.param(
            _profile(1, _profile_status(1, ["a: b"], None)),
            "Degraded",
            "SpecRejected: generation 1 refused, no generation of this profile ever served: its pods wait: a: b",
            id="never-worked",
        ),
        pytest.param(
            _profile(3, _profile_status(2, [], 2)),
            "Progressing",
            "waiting for crd-scheduler to reconcile generation 3",
            id="not-yet-reconciled",
        ),
        pytest.param(_profile(1, None), "Progressing", "waiting for crd-scheduler to reconcile generation 1",
                     id="no-status-yet"),
        pytest.param(
            _profile(1, {"observedGeneration": 1, "conditions": [
                {"type": "Reconciling", "status": "True", "reason": "Rebuilding", "message": "rebuilding"},
                {"type": "Ready", "status": "True", "reason": "Serving", "message": "serving generation 1"}]}),
            "Progressing", "rebuilding", id="reconciling",
        ),
    ],
)  # fmt: skip
def test_scheduler_profile_health(obj: dict[str, Any], expected: str, message: str) -> None:
    assert assess("SchedulerProfile", obj) == (expected, message)


@pytest.mark.parametrize(
    ("problems", "refusals", "expected", "message"),
    [
        pytest.param([], [], "Healthy", "applies to profiles: a", id="applied"),
        pytest.param(["spec.args: bad"], [], "Degraded", "InvalidArgs: spec.args: bad", id="invalid-args"),
        pytest.param(
            [], ["team/a: spec.args.ignoredResources: tenant policy rule 'narrowing-args'"],
            "Degraded",
            "RefusedByProfile: refused by profile team/a: spec.args.ignoredResources: tenant policy rule "
            "'narrowing-args'",
            id="refused-by-policy",
        ),
    ],
)  # fmt: skip
def test_plugin_config_health(problems: list[str], refusals: list[str], expected: str, message: str) -> None:
    status = plugin_config_status(
        generation=1, problems=problems, unknown_plugin=False, profiles=["a"], refusals=refusals, previous=None, now=NOW
    )
    obj = {"kind": "PluginConfig", "metadata": {"name": "fit", "generation": 1}, "status": status}
    assert assess("PluginConfig", obj) == (expected, message)


def test_the_docs_show_the_shipped_snippet() -> None:
    assert SNIPPET.read_text() in (ROOT / "docs" / "gitops.md").read_text()
