"""The webhook's review says, for one object, what ``crd-scheduler validate`` says for it
(less the file name), with the namespace's PluginConfigs merged into a profile."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler_core.names import API_VERSION
from scheduler_core.runtime.registry import default_registry
from scheduler_operator.cli import main
from scheduler_operator.control.admission import review


def _profile(name: str, spec: dict[str, Any] | None, namespace: str = "team-a") -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": API_VERSION, "kind": "SchedulerProfile",
                            "metadata": {"name": name, "namespace": namespace}}  # fmt: skip
    if spec is not None:
        body["spec"] = spec
    return body


def _config(name: str, plugin: str, args: dict[str, Any], namespace: str = "team-a") -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "PluginConfig", "metadata": {"name": name, "namespace": namespace},
            "spec": {"plugin": plugin, "args": args}}  # fmt: skip


def _review(body: dict[str, Any], *configs: dict[str, Any]) -> list[str]:
    return review(body, registry=default_registry(), home_namespace="crd-scheduler", configs=lambda ns: configs)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(_profile("nospec", None), id="no-spec"),
        pytest.param(_profile("p", {"plugins": {"score": {"enabled": [{"name": "Nope"}]}}}), id="unknown-plugin"),
        pytest.param(_profile("p", {"pluginConfig": [{"name": "NodeResourcesFit", "args": {"x": 1}}]}), id="bad-args"),
        pytest.param(_config("c", "NodeResourcesFit", {"scoringStrategy": {"type": "Nope"}}), id="bad-config"),
        pytest.param(_profile("Bad", {}), id="bad-name"),
    ],
)
def test_review_says_what_validate_and_simulate_print(body: dict[str, Any], tmp_path: Path, capsys: Any) -> None:
    """The webhook, ``validate`` and ``simulate`` share one entry (``resolution.validate``): a
    refused object gets the same messages from all three."""
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump(body))
    assert main(["validate", "-f", str(path)]) == 2
    printed = [line.removeprefix(f"{path}: ") for line in capsys.readouterr().out.splitlines()]
    assert printed
    assert _review(body) == printed
    assert main(["simulate", "-f", str(path)]) == 2
    errors = [line.removeprefix(f"error: {path}: ") for line in capsys.readouterr().err.splitlines()]
    assert errors == printed


def test_a_review_runs_on_the_operators_event_loop() -> None:
    """Kopf calls the webhook's handlers on the operator's loop (they are coroutines): the
    review builds the frameworks synchronously there, reading the reconciler's PluginConfigs on
    the thread that writes them, with no event loop of its own (``asyncio.run`` inside a running
    loop raises)."""

    async def on_the_loop() -> list[str]:
        return _review(_profile("p", {"pluginConfig": [{"name": "NodeResourcesFit", "args": {"x": 1}}]}))

    problems = asyncio.run(on_the_loop())
    assert problems and all(p.startswith("SchedulerProfile team-a/p: spec.pluginConfig[0].args") for p in problems)


def test_valid_objects_pass_and_generate_name_is_accepted() -> None:
    assert _review(_profile("good", {"percentageOfNodesToScore": 50})) == []
    generated = _profile("", {})
    generated["metadata"] = {"generateName": "gen-", "namespace": "team-a"}
    assert _review(generated) == []


def test_a_profile_is_reviewed_with_its_namespaces_plugin_configs_merged_but_only_its_problems_count() -> None:
    broken = _config("fit", "NodeResourcesFit", {"scoringStrategy": {"type": "Nope"}})
    assert _review(_profile("p", {}), broken) == []  # the config's own review refused it already


@pytest.mark.parametrize(
    ("home_policy", "tenant", "expected"),
    [
        pytest.param(
            None, {"schedulerName": "default-scheduler"},
            ["SchedulerProfile team-a/p: spec.schedulerName: tenant policy rule 'scheduler-names': a profile in "
             "namespace 'team-a' may not serve schedulerName 'default-scheduler': it is kube-scheduler's name, which "
             "every pod that names no scheduler has (the policy's allowedSchedulerNames does not list it)"],
            id="default-scheduler",
        ),
        pytest.param(
            None, {},
            ["SchedulerProfile team-a/p: spec.schedulerName: tenant policy rule 'scheduler-names': a profile in "
             "namespace 'team-a' may not serve schedulerName 'crd-scheduler': the cluster-wide profile "
             "crd-scheduler/default serves it (the policy's allowedSchedulerNames does not list it)"],
            id="the-cluster-wide-name-the-operator-knows",
        ),
        pytest.param({"allowedSchedulerNames": ["crd-scheduler"]}, {}, [], id="allowed-by-the-home-policy"),
        pytest.param(
            {"allowedSchedulerNames": ["crd-scheduler"], "allowDisabling": ["TaintToleration"]},
            {"plugins": {"filter": {"disabled": [{"name": "TaintToleration"}]}}}, [],
            id="the-home-policy-is-the-operators-not-the-default",
        ),
    ],
)  # fmt: skip
def test_a_tenant_profile_is_reviewed_beside_the_home_profiles_the_operator_knows(
    home_policy: dict[str, Any] | None, tenant: dict[str, Any], expected: list[str]
) -> None:
    home = _profile("default", {} if home_policy is None else {"tenantPolicy": home_policy}, namespace="crd-scheduler")
    del home["apiVersion"], home["kind"]  # as a watch's list items may come
    found = review(
        _profile("p", tenant),
        registry=default_registry(),
        home_namespace="crd-scheduler",
        configs=lambda ns: (),
        home_profiles=lambda: [home],
    )
    assert found == expected
