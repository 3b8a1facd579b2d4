"""Reading manifests: documents and lists, API-server defaulting, validation messages."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml

from scheduler_core.simulator import InputError, load_texts
from scheduler_core.simulator.defaulting import generated_uid
from tests.unit.simulator.support import dump, load, plugin_config, profile
from tests.wrappers import make_pod, node, pod


def _priority_class(name: str, value: int, *, default: bool = False, policy: str | None = None) -> dict[str, Any]:
    pc: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}}
    pc["value"] = value
    if default:
        pc["globalDefault"] = True
    if policy:
        pc["preemptionPolicy"] = policy
    return pc


PREEMPT = "PreemptLowerPriority"


def _errors(*objects: Any, source: str = "in.yaml") -> list[str]:
    with pytest.raises(InputError) as caught:
        load(*objects, source=source)
    return [str(p) for p in caught.value.problems]


# -- documents --------------------------------------------------------------------------------


def test_multi_document_yaml_keeps_input_order_and_skips_empty_documents() -> None:
    text = dump(node("n1"), pod("a"), None, pod("b"), node("n2"))
    cluster = load_texts([("c.yaml", text)])
    assert [n["metadata"]["name"] for n in cluster.nodes] == ["n1", "n2"]
    assert [p["metadata"]["name"] for p in cluster.pods] == ["a", "b"]


@pytest.mark.parametrize(
    "document",
    [
        pytest.param({"apiVersion": "v1", "kind": "List", "items": [pod("a"), pod("b")]}, id="kind-List"),
        pytest.param(
            {
                "apiVersion": "v1",
                "kind": "PodList",
                # as the API returns a typed list: items with neither kind nor apiVersion
                "items": [{k: v for k, v in pod(n).items() if k not in ("kind", "apiVersion")} for n in "ab"],
            },
            id="typed-PodList-items-without-kind",
        ),
    ],
)
def test_lists_are_flattened(document: dict[str, Any]) -> None:
    cluster = load(document)
    assert [p["metadata"]["name"] for p in cluster.pods] == ["a", "b"]


def test_json_file_with_an_object() -> None:
    cluster = load_texts([("one.json", json.dumps(node("n1")))])
    assert [n["metadata"]["name"] for n in cluster.nodes] == ["n1"]


@pytest.mark.parametrize(
    ("source", "text"),
    [
        pytest.param("many.json", json.dumps([pod("a"), pod("b")]), id="json-array"),
        pytest.param("many.yaml", yaml.safe_dump([pod("a"), pod("b")]), id="yaml-sequence"),
    ],
)
def test_a_document_that_is_a_list_of_objects_is_refused_as_kubectl_does(source: str, text: str) -> None:
    """kubectl: 'unable to decode "many.yaml": json: cannot unmarshal array into Go value of
    type unstructured.detector' (cli-runtime's StreamVisitor, unstructured's decode)."""
    with pytest.raises(InputError) as exc:
        load_texts([(source, text)])
    assert str(exc.value) == (
        f"{source}: document 1: a document may not be a list of objects (kubectl refuses it too): put "
        "each object in a document of its own, separated by ---, or in the items of a kind: List"
    )


def test_a_list_item_with_an_api_version_but_no_kind_keeps_no_kind() -> None:
    document = {"apiVersion": "v1", "kind": "PodList", "items": [{k: v for k, v in pod("a").items() if k != "kind"}]}
    with pytest.raises(InputError, match="kind: Required value"):
        load_texts([("l.yaml", yaml.safe_dump(document))])


def test_a_cluster_scoped_object_with_a_namespace_is_read_without_it_as_the_api_server_does() -> None:
    n = node("n1")
    n["metadata"]["namespace"] = "kube-system"
    cluster = load_texts([("n.yaml", yaml.safe_dump(n))])
    assert [x["metadata"]["name"] for x in cluster.nodes] == ["n1"]
    assert "namespace" not in cluster.nodes[0]["metadata"]


def test_timestamps_stay_strings_as_in_the_api() -> None:
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  creationTimestamp: 2024-05-01T10:00:00Z\n"
        "spec:\n  containers: [{name: c}]\n"
    )
    cluster = load_texts([("t.yaml", text)])
    assert cluster.pods[0]["metadata"]["creationTimestamp"] == "2024-05-01T10:00:00Z"


def test_kinds_the_scheduler_reads_are_carried_and_other_known_ones_noted() -> None:
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "pdb"}, "spec": {}}
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}}
    cluster = load(pdb, ns, deploy, _priority_class("high", 10))
    assert cluster.objects["PodDisruptionBudget"][0]["metadata"] == {"name": "pdb", "namespace": "default"}
    assert cluster.objects["Namespace"][0]["metadata"] == {"name": "team-a"}
    assert cluster.objects["PriorityClass"][0]["value"] == 10
    assert "Deployment" not in cluster.objects
    assert cluster.warnings == ["in.yaml: Deployment shop/web: kind Deployment is ignored by the scheduler"]


def test_node_without_pods_allocatable_is_warned_about() -> None:
    bare = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {"capacity": {"cpu": "2"}}}
    cluster = load(bare)
    assert cluster.warnings == [
        "in.yaml: Node n1: status.allocatable.pods is not set: no pod fits it (the kubelet reports 110 by default)"
    ]


# -- defaulting (pkg/apis/core/v1/defaults.go, plugin/pkg/admission/priority) -------------------


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        pytest.param(
            {"capacity": {"cpu": "4", "pods": "110"}}, {"cpu": "4", "pods": "110"}, id="allocatable-from-capacity"
        ),
        pytest.param(
            {"capacity": {"cpu": "4", "pods": "110"}, "allocatable": {"cpu": "3", "pods": "100"}},
            {"cpu": "3", "pods": "100"},
            id="allocatable-kept",
        ),
    ],
)
def test_node_allocatable_defaults_to_capacity(status: dict[str, Any], expected: dict[str, Any]) -> None:
    cluster = load({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": status})
    assert cluster.nodes[0]["status"]["allocatable"] == expected


@pytest.mark.parametrize(
    ("resources", "expected_requests"),
    [
        pytest.param({"limits": {"cpu": "1", "memory": "1Gi"}}, {"cpu": "1", "memory": "1Gi"}, id="from-limits"),
        pytest.param(
            {"requests": {"cpu": "500m"}, "limits": {"cpu": "1", "memory": "1Gi"}},
            {"cpu": "500m", "memory": "1Gi"},
            id="explicit-request-kept",
        ),
        pytest.param({"requests": {"cpu": "250m"}}, {"cpu": "250m"}, id="no-limits"),
    ],
)
def test_container_requests_default_to_limits(resources: dict[str, Any], expected_requests: dict[str, Any]) -> None:
    spec = {
        "containers": [{"name": "c", "resources": resources}],
        "initContainers": [{"name": "i", "resources": resources}],
    }
    cluster = load({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
    defaulted = cluster.pods[0]["spec"]
    assert defaulted["containers"][0]["resources"]["requests"] == expected_requests
    assert defaulted["initContainers"][0]["resources"]["requests"] == expected_requests


def test_pod_namespace_scheduler_name_and_uid_are_defaulted() -> None:
    cluster = load(make_pod().name("web").as_written().obj())
    meta, spec = cluster.pods[0]["metadata"], cluster.pods[0]["spec"]
    assert meta["namespace"] == "default"
    assert meta["uid"] == generated_uid("Pod", "default", "web")
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["priority"] == 0
    assert spec["preemptionPolicy"] == "PreemptLowerPriority"


def test_explicit_uid_and_scheduler_name_are_kept() -> None:
    cluster = load(pod("a", uid="u-1", scheduler_name="crd-scheduler"))
    assert cluster.pods[0]["metadata"]["uid"] == "u-1"
    assert cluster.pods[0]["spec"]["schedulerName"] == "crd-scheduler"


@pytest.mark.parametrize(
    ("classes", "spec", "priority", "policy"),
    [
        pytest.param([_priority_class("high", 1000)], {"priorityClassName": "high"}, 1000, PREEMPT, id="named-class"),
        pytest.param([_priority_class("batch", 10, policy="Never")], {"priorityClassName": "batch"}, 10, "Never",
                     id="class-policy"),
        pytest.param(
            [_priority_class("low", 5, default=True), _priority_class("lower", 1, default=True)], {}, 1,
            PREEMPT, id="lowest-global-default",
        ),
        pytest.param([], {"priorityClassName": "system-node-critical"}, 2000001000, PREEMPT, id="system-class"),
        pytest.param([], {"priority": 7}, 7, PREEMPT, id="explicit-priority-kept"),
        pytest.param([_priority_class("high", 1000)], {"priorityClassName": "high", "priority": 1000}, 1000, PREEMPT,
                     id="exported-pod-consistent"),
    ],
)  # fmt: skip
def test_priority_is_resolved_from_priority_classes(
    classes: list[dict[str, Any]], spec: dict[str, Any], priority: int, policy: str
) -> None:
    cluster = load(
        make_pod().name("web").as_written().spec(**spec).obj(), *classes
    )  # classes after the pod: resolution does not depend on order
    assert cluster.pods[0]["spec"]["priority"] == priority
    assert cluster.pods[0]["spec"]["preemptionPolicy"] == policy


def test_profile_without_namespace_goes_to_the_home_namespace() -> None:
    cluster = load(profile("p", namespace=None), home_namespace="sched")
    assert str(cluster.profiles[0].key) == "sched/p"


def test_profiles_and_plugin_configs_are_parsed_with_the_config_models() -> None:
    cluster = load(
        profile("batch", "team-a", schedulerName="batch", percentageOfNodesToScore=50),
        plugin_config("fit", "NodeResourcesFit", {"scoringStrategy": {"type": "MostAllocated"}}, namespace="team-a"),
    )
    (p,) = cluster.profiles
    assert (str(p.key), p.spec.scheduler_name, p.spec.percentage_of_nodes_to_score) == ("team-a/batch", "batch", 50)
    (c,) = cluster.plugin_configs
    assert (c.namespace, c.spec.plugin, c.spec.args) == (
        "team-a",
        "NodeResourcesFit",
        {"scoringStrategy": {"type": "MostAllocated"}},
    )


# -- problems --------------------------------------------------------------------------------

_QUANTITY = (
    'Invalid value: "lots": '
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        pytest.param(
            [pod("web", containers=[{"name": "c", "resources": {"requests": {"cpu": "lots"}}}])],
            [f"in.yaml: Pod default/web: spec.containers[0].resources.requests[cpu]: {_QUANTITY}"],
            id="bad-request-quantity",
        ),
        pytest.param(
            [pod("web", initContainers=[{"name": "i", "resources": {"limits": {"memory": "lots"}}}])],
            [f"in.yaml: Pod default/web: spec.initContainers[0].resources.limits[memory]: {_QUANTITY}"],
            id="bad-init-limit-quantity",
        ),
        pytest.param(
            [pod("web", overhead={"cpu": "lots"})],
            [f"in.yaml: Pod default/web: spec.overhead[cpu]: {_QUANTITY}"],
            id="bad-overhead",
        ),
        pytest.param(
            [pod("web", containers=[{"name": "c", "resources": {"requests": {"cpu": "-1"}}}])],
            ['in.yaml: Pod default/web: spec.containers[0].resources.requests[cpu]: Invalid value: "-1": '
             "must be greater than or equal to 0"],
            id="negative-quantity",
        ),
        pytest.param(
            [pod("web", containers=[{"name": "c", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}])],
            ['in.yaml: Pod default/web: spec.containers[0].resources.requests: Invalid value: "2": '
             "must be less than or equal to cpu limit of 1"],
            id="request-above-limit",
        ),
        pytest.param(
            [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {"capacity": {"cpu": "lots"}}}],
            [f"in.yaml: Node n1: status.capacity[cpu]: {_QUANTITY}"],
            id="bad-node-capacity",
        ),
        pytest.param(
            [node("n1", taints=[{"key": "k", "effect": "Sometimes"}])],
            ['in.yaml: Node n1: spec.taints[0].effect: Unsupported value: "Sometimes": supported values: '
             '"NoSchedule", "PreferNoSchedule", "NoExecute"'],
            id="bad-taint-effect",
        ),
        pytest.param(
            [node("n1", taints=[{"key": "k"}])], ["in.yaml: Node n1: spec.taints[0].effect: Required value"],
            id="taint-without-effect",
        ),
        pytest.param(
            [pod("web", tolerations=[{"operator": "Equal", "value": "x"}])],
            ['in.yaml: Pod default/web: spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists '
             'when `key` is empty, which means "match all values and all keys"'],
            id="toleration-without-key",
        ),
        pytest.param(
            [pod("web", tolerations=[{"key": "k", "operator": "Exists", "value": "v"}])],
            ["in.yaml: Pod default/web: spec.tolerations[0].operator: Invalid value: \"v\": "
             "value must be empty when `operator` is 'Exists'"],
            id="exists-with-value",
        ),
        pytest.param(
            [pod("web", nodeSelector={"disk": 1})],
            ["in.yaml: Pod default/web: spec.nodeSelector[disk]: Invalid value: 1: must be a string"],
            id="non-string-node-selector",
        ),
        pytest.param(
            [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}, "spec": {}}],
            ["in.yaml: Pod default/web: spec.containers: Required value"],
            id="no-containers",
        ),
        pytest.param(
            [{"apiVersion": "v1", "metadata": {"name": "x"}}],
            ["in.yaml: document 1: kind: Required value"],
            id="no-kind",
        ),
        pytest.param(
            [{"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "c"}]}}],
            ["in.yaml: Pod (document 1): metadata.name: Required value: name or generateName is required"],
            id="no-name",
        ),
        pytest.param(
            [{"apiVersion": "v1", "kind": "List",
              "items": [node("n1"), {"apiVersion": "v1", "kind": "Node", "metadata": {}}]}],
            ["in.yaml: Node (document 1, item 2): metadata.name: Required value: name or generateName is required"],
            id="no-name-in-list",
        ),
        pytest.param(
            [pod("a"), pod("a")],
            ["in.yaml: Pod default/a: metadata.name: Duplicate value: also defined in in.yaml"],
            id="duplicate",
        ),
        pytest.param(
            [pod("web", priorityClassName="gold")],
            ["in.yaml: Pod default/web: spec.priorityClassName: no PriorityClass with name gold was found"],
            id="unknown-priority-class",
        ),
        pytest.param(
            [pod("web", priorityClassName="high", priority=5), _priority_class("high", 1000)],
            ["in.yaml: Pod default/web: spec.priority: the integer value of priority (5) must not be provided in pod "
             "spec; priority admission controller computed 1000 from the given PriorityClass name"],
            id="priority-contradicts-class",
        ),
        pytest.param(
            [profile("batch", plugins={"score": {"enabeld": []}})],
            ["in.yaml: SchedulerProfile crd-scheduler/batch: "
             'strict decoding error: unknown field "spec.plugins.score.enabeld"'],
            id="profile-unknown-field",
        ),
        pytest.param(
            [profile("batch", plugins={"score": {"enabled": [{"name": "X", "weight": -1}]}})],
            ["in.yaml: SchedulerProfile crd-scheduler/batch: spec.plugins.score.enabled[0].weight: Invalid value: -1: "
             "spec.plugins.score.enabled[0].weight in body should be greater than or equal to 0"],
            id="profile-negative-weight",
        ),
        pytest.param(
            [plugin_config("pc", "", {})],
            ['in.yaml: PluginConfig crd-scheduler/pc: spec.plugin: Invalid value: "": '
             "spec.plugin in body should be at least 1 chars long"],
            id="plugin-config-without-plugin",
        ),
    ],
)  # fmt: skip
def test_problems_name_file_object_field_and_reason(objects: list[Any], expected: list[str]) -> None:
    assert _errors(*objects) == expected


def test_yaml_syntax_error_names_file_and_line() -> None:
    with pytest.raises(InputError) as caught:
        load_texts([("broken.yaml", "kind: Pod\nmetadata: {name: x\n")])
    (problem,) = caught.value.problems
    # libyaml says "did not find expected", the pure-Python parser "expected ..., but got".
    assert re.fullmatch(
        r"broken\.yaml: line 3, column 1: (did not find expected|expected) ',' or '}'.* "
        r"\(while parsing a flow mapping\)",
        str(problem),
    )


def test_problems_of_every_file_are_reported_together() -> None:
    with pytest.raises(InputError) as caught:
        load_texts([("a.yaml", "a: [\n"), ("b.yaml", dump(pod("web", nodeName=3)))])
    assert [p.source for p in caught.value.problems] == ["a.yaml", "b.yaml"]


def test_missing_file_is_an_input_problem(tmp_path: Any) -> None:
    from scheduler_core.simulator import load_files

    with pytest.raises(InputError) as caught:
        load_files([str(tmp_path / "nope.yaml")])
    assert str(caught.value) == f"{tmp_path / 'nope.yaml'}: No such file or directory"


def test_directory_reads_its_manifest_files_in_name_order(tmp_path: Any) -> None:
    from scheduler_core.simulator import load_files

    (tmp_path / "b.yaml").write_text(dump(pod("b")))
    (tmp_path / "a.json").write_text(json.dumps(pod("a")))
    (tmp_path / "notes.txt").write_text("not a manifest")
    cluster = load_files([str(tmp_path)])
    assert [p["metadata"]["name"] for p in cluster.pods] == ["a", "b"]
