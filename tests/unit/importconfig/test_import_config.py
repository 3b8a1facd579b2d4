"""``import-config``: KubeSchedulerConfiguration v1 files as SchedulerProfiles that serve.

The files under tests/data/kube-scheduler-config are real-world shapes from the Kubernetes
docs; each is imported, its profiles built by the simulator as the operator builds them, and
pods of every schedulerName scheduled. Field names: k8s.io/kube-scheduler@v0.36.3/config/v1/types.go.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler_core.importconfig import ConfigImportError, convert
from scheduler_core.runtime.registry import default_registry
from scheduler_core.simulator import load_lists, simulate
from scheduler_operator.cli import main
from tests.wrappers import node, pod

CONFIGS = Path(__file__).resolve().parents[2] / "data" / "kube-scheduler-config"
REGISTRY = default_registry()


def _import(name: str) -> tuple[list[dict[str, Any]], list[str]]:
    config = yaml.safe_load((CONFIGS / name).read_text())
    # The conversion itself, names kept (the rename of default-scheduler is tested on its own).
    imported = convert(
        config, namespace="crd-scheduler", registry=REGISTRY, source=name, take_over_default_scheduler=True
    )
    return imported.objects, imported.warnings


def _dra(source: str) -> list[str]:
    """Every import says DynamicResources (a v1.36 default) is missing, while this build lacks it."""
    if "DynamicResources" in REGISTRY:
        return []
    return [
        f"{source}: profiles: upstream's default plugin DynamicResources does not exist in this build: the profiles "
        "run without it (pods with resource claims are not scheduled as upstream would)"
    ]


def _specs(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o["spec"] for o in objects}


@pytest.mark.parametrize(
    ("name", "specs", "warnings"),
    [
        pytest.param(
            "multiple-profiles.yaml",
            {
                "default-scheduler": {"schedulerName": "default-scheduler"},
                "no-scoring-scheduler": {
                    "schedulerName": "no-scoring-scheduler",
                    "plugins": {"preScore": {"disabled": [{"name": "*"}]}, "score": {"disabled": [{"name": "*"}]}},
                },
            },
            [],
            id="multiple-profiles",
        ),
        pytest.param(
            "most-allocated.yaml",
            {
                "bin-packing-scheduler": {
                    "schedulerName": "bin-packing-scheduler",
                    "plugins": {"score": {
                        "enabled": [{"name": "NodeResourcesFit", "weight": 5}],
                        "disabled": [{"name": "NodeResourcesBalancedAllocation"}],
                    }},
                    "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
                        "type": "MostAllocated",
                        "resources": [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}],
                    }}}],
                }
            },
            ["most-allocated.yaml: leaderElection: not imported: use `crd-scheduler run --lease-name/--lease-duration/"
             "--renew-deadline/--retry-period`"],
            id="most-allocated-args-without-apiVersion-kind",
        ),
        pytest.param(
            "requested-to-capacity-ratio.yaml",
            {
                "rtcr-scheduler": {
                    "schedulerName": "rtcr-scheduler",
                    "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
                        "type": "RequestedToCapacityRatio",
                        "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}],
                        "requestedToCapacityRatio": {"shape": [
                            {"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]},
                    }}}],
                }
            },
            [],
            id="requested-to-capacity-ratio",
        ),
        pytest.param(
            "disabled-plugins.yaml",
            {
                "trimmed-scheduler": {
                    "schedulerName": "trimmed-scheduler",
                    "plugins": {
                        "multiPoint": {"disabled": [
                            {"name": "ImageLocality"}, {"name": "PodTopologySpread"}, {"name": "InterPodAffinity"}]},
                        "score": {"enabled": [{"name": "TaintToleration", "weight": 10}]},
                    },
                }
            },
            ["disabled-plugins.yaml: clientConnection: not imported: use the operator's kubeconfig and "
             "`--max-in-flight`"],
            id="disabled-plugins",
        ),
        pytest.param(
            "pod-topology-spread-defaults.yaml",
            {
                "spread-scheduler": {
                    "schedulerName": "spread-scheduler",
                    "pluginConfig": [{"name": "PodTopologySpread", "args": {
                        "defaultConstraints": [
                            {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                             "whenUnsatisfiable": "ScheduleAnyway"},
                            {"maxSkew": 2, "topologyKey": "kubernetes.io/hostname",
                             "whenUnsatisfiable": "ScheduleAnyway"},
                        ],
                        "defaultingType": "List",
                    }}],
                }
            },
            [],
            id="pod-topology-spread-defaults",
        ),
        pytest.param(
            "percentage-of-nodes-to-score.yaml",
            {
                "default-scheduler": {"schedulerName": "default-scheduler", "percentageOfNodesToScore": 30},
                "thorough-scheduler": {
                    "schedulerName": "thorough-scheduler",
                    "percentageOfNodesToScore": 100,
                    "plugins": {"score": {"disabled": [{"name": "ImageLocality"}]}},
                },
            },
            [
                "percentage-of-nodes-to-score.yaml: parallelism: not imported: the operator runs scheduling cycles "
                "serially",
                "percentage-of-nodes-to-score.yaml: podInitialBackoffSeconds: not imported: the operator's backoff is "
                "upstream's default (1 s)",
                "percentage-of-nodes-to-score.yaml: podMaxBackoffSeconds: not imported: the operator's backoff is "
                "upstream's default (10 s)",
            ],
            id="percentage-global-and-per-profile",
        ),
    ],
)  # fmt: skip
def test_real_world_configs_import_and_serve(name: str, specs: dict[str, Any], warnings: list[str]) -> None:
    objects, found = _import(name)
    assert _specs(objects) == specs
    assert found == [*warnings, *_dra(name)]
    assert {o["metadata"]["namespace"] for o in objects} == {"crd-scheduler"}
    # Every profile builds as the operator builds it, and schedules its pods.
    pods = [pod(f"p-{o['metadata']['name']}", cpu="100m", scheduler_name=o["spec"]["schedulerName"]) for o in objects]
    cluster = load_lists(name, {"SchedulerProfile": objects, "Node": [node("n1"), node("n2")], "Pod": pods})
    result = simulate(cluster, live=True)
    assert [(r.profile, r.status) for r in result.pods] == [
        (f"crd-scheduler/{o['metadata']['name']}", "Scheduled") for o in objects
    ]


@pytest.mark.parametrize(
    ("config", "warning"),
    [
        pytest.param(
            {"profiles": [{"schedulerName": "s", "plugins": {"filter": {"enabled": [{"name": "NoSuchPlugin"}]}}}]},
            "profiles[0].plugins.filter.enabled[0]: plugin 'NoSuchPlugin' does not exist in this build: not imported",
            id="out-of-tree-plugin",
        ),
        pytest.param(
            {"profiles": [{"schedulerName": "s", "pluginConfig": [
                {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Nope"}}}]}]},
            "profiles[0].pluginConfig[0] (NodeResourcesFit): not imported: args: plugin 'NodeResourcesFit': ",
            id="args-the-model-refuses",
        ),
        pytest.param(
            {"profiles": [{"schedulerName": "s", "plugins": {"placementScore": {"enabled": [{"name": "X"}]}}}]},
            "profiles[0].plugins.placementScore: not imported: workload-aware scheduling has no equivalent",
            id="v1.36-placement-points",
        ),
        pytest.param({"futureField": 1}, "futureField: not imported: unknown field", id="unknown-field"),
    ],
)  # fmt: skip
def test_what_has_no_equivalent_is_a_warning(config: dict[str, Any], warning: str) -> None:
    full = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", **config}
    imported = convert(full, namespace="ns", registry=REGISTRY)
    assert any(w.startswith(warning) for w in imported.warnings), imported.warnings


def test_no_profiles_is_upstreams_default_profile() -> None:
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    (obj,) = convert(config, namespace="ns", registry=REGISTRY, take_over_default_scheduler=True).objects
    assert obj["spec"] == {"schedulerName": "default-scheduler"}


RENAMED = (
    "profiles[0].schedulerName: 'default-scheduler' renamed to 'crd-scheduler': served while kube-scheduler runs, "
    "both schedulers would bind the same pods; pods opt in with spec.schedulerName: crd-scheduler. To replace "
    "kube-scheduler, turn it off first and pass --take-over-default-scheduler (docs/deploy.md: As the cluster's "
    "only scheduler)"
)


@pytest.mark.parametrize(
    "profiles",
    [
        pytest.param(None, id="no-profiles"),
        pytest.param([{"schedulerName": "default-scheduler"}, {"schedulerName": "other"}], id="named"),
        pytest.param([{"plugins": {}}], id="unnamed-is-default-scheduler"),
    ],
)
def test_default_scheduler_is_never_emitted_without_the_flag(profiles: list[dict[str, Any]] | None) -> None:
    config = _config() if profiles is None else _config(profiles=profiles)
    imported = convert(config, namespace="ns", registry=REGISTRY, source="f.yaml")
    names = [o["spec"]["schedulerName"] for o in imported.objects]
    assert "default-scheduler" not in names and names[0] == "crd-scheduler"
    assert f"f.yaml: {RENAMED}" in imported.warnings


def test_the_rename_refuses_to_collide_with_a_profile_of_ours() -> None:
    config = _config(profiles=[{"schedulerName": "default-scheduler"}, {"schedulerName": "crd-scheduler"}])
    with pytest.raises(ConfigImportError, match=r"profiles\[0\].schedulerName: 'default-scheduler' cannot be renamed"):
        convert(config, namespace="ns", registry=REGISTRY)


@pytest.mark.parametrize(
    ("flags", "served"), [([], "crd-scheduler"), (["--take-over-default-scheduler"], "default-scheduler")]
)
def test_cli_takes_over_default_scheduler_only_when_asked(
    flags: list[str], served: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(_config()))
    assert main(["import-config", str(path), *flags]) == 0
    out, err = capsys.readouterr()
    (obj,) = list(yaml.safe_load_all(out))
    assert obj["spec"]["schedulerName"] == served
    assert ("--take-over-default-scheduler" in err) is (not flags)


def test_not_a_v1_configuration_is_refused() -> None:
    with pytest.raises(ConfigImportError, match=r"f.yaml: apiVersion/kind: must be kubescheduler.config.k8s.io/v1/"):
        convert({"apiVersion": "kubescheduler.config.k8s.io/v1beta3", "kind": "KubeSchedulerConfiguration"},
                namespace="ns", registry=REGISTRY, source="f.yaml")  # fmt: skip


def test_cli_prints_profiles_for_kubectl_apply(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import-config", str(CONFIGS / "most-allocated.yaml"), "--home-namespace", "sched"]) == 0
    out, err = capsys.readouterr()
    (obj,) = list(yaml.safe_load_all(out))
    assert obj["kind"] == "SchedulerProfile" and obj["metadata"] == {
        "name": "bin-packing-scheduler",
        "namespace": "sched",
    }
    assert "warning: " in err and "leaderElection" in err


def test_cli_names_a_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["import-config", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in capsys.readouterr().err


def test_extenders_are_imported_into_every_profile() -> None:
    """Upstream's extenders are global to the configuration: each imported profile calls them."""
    extender = {"urlPrefix": "http://127.0.0.1:9/x", "filterVerb": "filter", "weight": 2, "ignorable": True}
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "extenders": [extender],
        "profiles": [{"schedulerName": "a"}, {"schedulerName": "b"}],
    }
    imported = convert(config, namespace="crd-scheduler", registry=default_registry())
    assert [o["spec"]["extenders"] for o in imported.objects] == [[extender], [extender]]
    assert not [w for w in imported.warnings if "extenders" in w]
    built = load_lists("test", {"SchedulerProfile": imported.objects}, home_namespace="crd-scheduler")
    assert [p.spec.extenders[0].url_prefix for p in built.profiles] == [extender["urlPrefix"]] * 2


def _config(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", **fields}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        pytest.param(
            _config(profiles=[{"plugins": [1, 2]}]), "profiles[0].plugins: must be an object", id="plugins-list"
        ),
        pytest.param(
            _config(profiles=[{"pluginConfig": "x"}]), "profiles[0].pluginConfig: must be an array",
            id="plugin-config-str",
        ),
        pytest.param(
            _config(profiles=[{"pluginConfig": [{"name": "NodeResourcesFit", "args": [1]}]}]),
            "profiles[0].pluginConfig[0].args: must be an object",
            id="args-list",
        ),
        pytest.param(
            _config(profiles=[{"plugins": {"filter": {"disabled": "x"}}}]),
            "profiles[0].plugins.filter.disabled: must be an array",
            id="disabled-str",
        ),
        pytest.param(
            _config(profiles=[{"schedulerName": 5}]), "profiles[0].schedulerName: must be a string", id="name-int"
        ),
        pytest.param(_config(extenders="nope"), "extenders: must be an array", id="extenders-str"),
        pytest.param(
            _config(profiles=[{"plugins": {"score": {"disabled": [{"name": {"a": 1}}]}}}]),
            "profiles[0].plugins.score.disabled[0].name: must be a string",
            id="plugin-name-object",
        ),
    ],
)  # fmt: skip
def test_a_config_of_the_wrong_shape_is_refused_naming_the_field(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigImportError) as refused:
        convert(config, namespace="crd-scheduler", registry=default_registry())
    assert message in str(refused.value)
