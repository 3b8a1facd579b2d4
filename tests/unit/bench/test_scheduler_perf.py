"""bench/scheduler_perf: upstream's performance-config files, read and run in-process.

The loader's rules are tested on small files written here (upstream's own files are read by
the last tests, skipped when the Go module cache lacks the pinned sources)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bench.cluster import creation_seconds
from bench.scheduler_perf import cluster, config, gotemplate, inprocess, table

NODE = """apiVersion: v1
kind: Node
metadata:
  generateName: n-
status:
  capacity: {pods: "110", cpu: "4", memory: 32Gi}
  conditions: [{type: Ready, status: "True"}]
"""
POD = """apiVersion: v1
kind: Pod
metadata:
  generateName: p-
  labels: {color: green}
spec:
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {color: green}}
        topologyKey: kubernetes.io/hostname
  containers:
  - name: c
    image: pause
    resources: {limits: {cpu: 100m, memory: 100Mi}}
"""
CONFIG = """
- name: AntiAffinity
  defaultPodTemplatePath: pod.yaml
  featureGates: {SchedulerQueueingHints: false}
  workloadTemplate:
  - opcode: createNodes
    countParam: $nodes
    nodeTemplatePath: node.yaml
    labelNodePrepareStrategy: {labelKey: zone, labelValues: [a, b]}
  - opcode: createPods
    countParam: $init
    namespace: init
  - opcode: createPods
    countParam: $measure
    collectMetrics: true
  workloads:
  - name: small
    labels: [integration-test, short]
    featureGates: {SchedulerQueueingHints: true}
    params: {nodes: 4, init: 1, measure: 3}
  - name: big
    labels: [performance]
    params: {nodes: 600, init: 100, measure: 500}
"""


def write(tmp_path: Path, text: str = CONFIG) -> Path:
    folder = tmp_path / "sp" / "misc"
    folder.mkdir(parents=True)
    (folder / "performance-config.yaml").write_text(text)
    (folder / "node.yaml").write_text(NODE)
    (folder / "pod.yaml").write_text(POD)
    return tmp_path / "sp"


def test_variants_take_params_gates_and_labels(tmp_path: Path) -> None:
    root = write(tmp_path)
    (case,) = config.load(root)
    small, big = case.variants
    assert small.full_name == "AntiAffinity/small"
    assert small.feature_gates == {"SchedulerQueueingHints": True}  # the workload's overrides the case's
    assert big.feature_gates == {"SchedulerQueueingHints": False}
    assert [op.get("count") for op in small.ops] == [4, 1, 3]
    assert small.ops[0]["nodeTemplatePath"] == str(root / "misc" / "node.yaml")
    assert config.smallest(case) is small
    assert config.default_variant(case) is big
    assert config.enabled(["performance"], big.labels) and not config.enabled(["performance"], small.labels)
    assert config.enabled(["integration-test", "-performance"], small.labels)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(
            ("countParam: $measure", "countParam: $missing"), "parameter missing is undefined", id="undefined"
        ),
        pytest.param(
            ("opcode: createPods\n    countParam: $init", "opcode: createPodz\n    countParam: $init"),
            "unknown opcode 'createPodz'",
            id="opcode",
        ),
        pytest.param(
            ("collectMetrics: true", "collectMetrics: true\n    colectMetrics: true"),
            "unknown field(s) ['colectMetrics']",
            id="field",
        ),
        pytest.param(
            ("params: {nodes: 4, init: 1, measure: 3}", "params: {nodes: 4, init: 1, measure: 3, extra: 1}"),
            "the parameters ['extra'] are defined but unused",
            id="unused",
        ),
    ],
)
def test_bad_files_are_refused_with_case_and_reason(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    root = write(tmp_path, CONFIG.replace(*change))
    with pytest.raises(config.ConfigError, match="AntiAffinity") as error:
        config.load(root)
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("name: n-{{ .Index }}", "name: n-7", id="index"),
        pytest.param("gpu-{{Mod .Index 5}}", "gpu-2", id="mod"),
        pytest.param("{{ DivideInt 30000 .Count }}Mi", "3000Mi", id="divide"),
        pytest.param("{{ AddInt .Index 1 2 }}", "10", id="add"),
    ],
)
def test_templates_render_upstreams_actions(text: str, expected: str) -> None:
    assert gotemplate.render(text, {"Index": 7, "Count": 10}) == expected


def test_an_unknown_template_action_is_refused() -> None:
    with pytest.raises(gotemplate.TemplateError, match=r"x.yaml: unsupported template action '\{\{ if .Index \}\}'"):
        gotemplate.render("{{ if .Index }}", {"Index": 1}, "x.yaml")


def test_a_variant_runs_in_process_and_reports_its_collection(tmp_path: Path) -> None:
    (case,) = config.load(write(tmp_path))
    counters = inprocess.Counters()
    result = asyncio.run(inprocess.run_variant(config.smallest(case), counters=counters))
    assert result["nodes"] == 4
    (collection,) = result["collections"]
    # Anti-affinity (own namespace) puts each measured pod on a node of its own.
    assert collection["bound"] == 3 and collection["namespaces"] == ["namespace-2"]
    assert result["pending_at_end"] == 0
    assert counters.attempts == 4


def test_a_wait_that_cannot_be_met_fails_the_variant(tmp_path: Path) -> None:
    # Two nodes for three pods that must not share one.
    root = write(tmp_path, CONFIG.replace("{nodes: 4, init: 1, measure: 3}", "{nodes: 2, init: 1, measure: 3}"))
    (case,) = config.load(root)
    with pytest.raises(inprocess.WorkloadFailed, match="op 2 createPods: 2 of 3 pods scheduled in namespace-2"):
        asyncio.run(inprocess.run_variant(config.smallest(case)))


def test_label_strategy_is_round_robin(tmp_path: Path) -> None:
    (case,) = config.load(write(tmp_path))
    executor = inprocess.Executor(config.smallest(case))
    asyncio.run(executor.run())
    zones = [n["metadata"]["labels"]["zone"] for n in executor.cluster.nodes.values()]
    assert zones == ["a", "b", "a", "b"]


def upstream_root() -> Path:
    try:
        return config.scheduler_perf_root()
    except config.ConfigError:
        pytest.skip("no pinned scheduler_perf sources in the Go module cache")


def test_every_pinned_file_loads() -> None:
    cases = config.load(upstream_root())
    folders = {c.folder for c in cases}
    assert {
        "affinity",
        "dra",
        "event_handling",
        "misc",
        "nodedeclaredfeatures",
        "topology_spreading",
        "volumes",
    } <= folders
    assert len(cases) >= 40


@pytest.mark.parametrize(
    "name",
    [
        "SchedulingPodAntiAffinity",
        "SchedulingWhileGated",
        "SchedulingWithMixedChurn",
        "Partitionable",  # allocResourceClaims
        "EventHandlingPodUpdate",  # the unschedulable leftover flush
        "SchedulingDeletedPodsWithFinalizers",
    ],
)
def test_pinned_smallest_variants_run(name: str) -> None:
    (case,) = [c for c in config.load(upstream_root()) if c.name == name]
    result = asyncio.run(inprocess.run_variant(config.smallest(case)))
    assert result["collections"] and all(c["bound"] > 0 for c in result["collections"])


def test_the_readme_table_says_what_ran_and_why_not(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    collection = {"bound": 10, "pods_per_second": 400.0, "sli_p99_ms": 1.25}
    ran = {"case": "SchedulingBasic", "variant": "5Nodes", "folder": "misc", "status": "ran", "attempts": 15,
           "peak_rss_mb": 120.0, "collections": [collection]}  # fmt: skip
    unsupported = {"case": "Partitionable", "variant": "fast", "folder": "dra", "status": "unsupported",
                   "op": "allocResourceClaims", "reason": "no allocator"}  # fmt: skip
    record = {"environment": {"date": "d", "commit": "c", "load_average": [9.0], "cpus": 2}, "variants": "smallest",
              "summary": {"ran": 1, "unsupported": 1}, "results": [ran, unsupported]}  # fmt: skip
    (results / "inprocess.json").write_text(json.dumps(record))
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- b -->\nSTALE\n<!-- e -->\ntail\n")
    table.write_readme(readme, results, "<!-- b -->", "<!-- e -->")
    text = readme.read_text()
    assert "STALE" not in text and text.startswith("intro\n<!-- b -->\n") and text.endswith("<!-- e -->\ntail\n")
    assert "| misc | SchedulingBasic | 5Nodes | ran (10 measured pods bound) | 400.0 | 1.25 | 15 | 120 |" in text
    assert "| dra | Partitionable | fast | unsupported: allocResourceClaims: no allocator |" in text
    assert "load average 1-min 9.0-9.0" in text and "only valid from an idle machine" in text


def test_the_readme_table_keeps_what_no_saved_result_replaces(tmp_path: Path) -> None:
    # Earlier passes' figures live only in the table: rendering again from a partial saved run
    # replaces the cells of the cases and modes it has and keeps every other cell and line.
    results = tmp_path / "results"
    results.mkdir()
    stream = {
        "ratio": 1.07,
        "crd_scheduler": {"cpu_seconds_per_bound_pod": 0.00276, "peak_rss_mib": 119.0, "seconds": 0.6},
        "kube_scheduler": {"cpu_seconds_per_bound_pod": 0.00372, "peak_rss_mib": 80.0, "seconds": 0.64},
    }
    cluster = {"case": "SchedulingBasic", "variant": "500Nodes", "folder": "misc", "status": "ran",
               "stream": stream, "ratio_runs": {"stream": [0.83, 1.07, 1.62]},
               "cpu_per_bound_pod_runs": {"stream": [[0.00355, 0.00344], [0.00276, 0.00372], [0.00238, 0.0045]]},
               "environment": {"date": "2026-11-30 19:00 UTC", "commit": "abc1234", "load_average": [0.6],
                               "cpus": 2}}  # fmt: skip
    # The file's own environment is its last save's (of other cases, on another dev cluster):
    # none of it belongs to a result stamped with its own.
    last = {"commit": "def5678", "cpus": 2, "note": "dev cluster audit log /tmp/audit.log"}
    (results / "cluster.json").write_text(json.dumps({"environment": last, "results": [cluster]}))
    old_row = "| misc | SchedulingBasic | 500Nodes | ran (1000 measured pods bound) | 2162.2 | 0.96 | 1500 | 81 "
    old_row += "| 500Nodes: 241.9 (ours x8.94) | 500Nodes: stream 0.97 | 2.07 / 2.72 | 141 / 101 |"
    other = "| volumes | SchedulingSecrets | 500Nodes | ran (1000 measured pods bound) | 1934.2 | 0.74 | 1500 | 291 "
    other += "| - | 500Nodes: stream 1.09 | 1.77 / 2.68 | 131 / 112 |"
    before = "\n".join(["- inprocess: the morning sweep, `f7c073a`", "- cluster: earlier passes", "",
                        table.HEADER, "|---" * 12 + "|", old_row, other])  # fmt: skip
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n<!-- b -->\n{before}\n<!-- e -->\ntail\n")
    table.write_readme(readme, results, "<!-- b -->", "<!-- e -->")
    text = readme.read_text()
    assert other in text  # no saved result for it: kept as it was
    assert "- inprocess: the morning sweep, `f7c073a`" in text and "- cluster: earlier passes" in text
    assert "- upstream: no saved run" in text
    saved = "- cluster, saved results (`bench/results/scheduler_perf/cluster.json`): 2026-11-30 19:00 UTC, "
    assert saved + "commit `abc1234`, load average 1-min 0.6-0.6 on 2 CPUs: SchedulingBasic" in text
    (row,) = [line for line in text.splitlines() if "| SchedulingBasic |" in line]
    # The in-process and upstream cells are kept; the cluster ones are the saved run's.
    assert row.startswith(old_row.split("| 500Nodes: stream")[0])
    assert "| 500Nodes (2026-11-30 19:00 UTC, at `abc1234`): stream 1.07 (runs 0.83, 1.07, 1.62) " in row
    assert "| 2.76 / 3.72 (runs 3.55 / 3.44, 2.76 / 3.72, 2.38 / 4.50; ours lower in 2 of 3) | 119 / 80 |" in row
    # Rendering again changes nothing.
    table.write_readme(readme, results, "<!-- b -->", "<!-- e -->")
    assert readme.read_text() == text


def test_a_kept_upstream_cell_drops_its_ratio_beside_a_new_in_process_run(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    ran = {"case": "EventHandlingPodAdd", "variant": "1000Pods", "folder": "event_handling", "status": "ran",
           "attempts": 6000, "peak_rss_mb": 160.0, "pods_per_second_runs": [110.9, 122.7, 116.2],
           "collections": [{"bound": 2000, "pods_per_second": 116.2, "sli_p99_ms": 9.5}]}  # fmt: skip
    (results / "inprocess.json").write_text(json.dumps({"environment": {}, "results": [ran]}))
    old_row = "| event_handling | EventHandlingPodAdd | 1000Pods | ran (2000 measured pods bound) | 17.3 "
    old_row += "| 115673.77 | 6000 | 168 | 1000Pods: 33.4 (ours x0.52) "
    old_row += "| 1000Pods: stream 1.31 | 14.60 / 21.73 | 161 / 229 |"
    readme = tmp_path / "README.md"
    readme.write_text(f"<!-- b -->\n{table.HEADER}\n{'|---' * 12}|\n{old_row}\n<!-- e -->\n")
    table.write_readme(readme, results, "<!-- b -->", "<!-- e -->")
    (row,) = [line for line in readme.read_text().splitlines() if "| EventHandlingPodAdd |" in line]
    # The old ratio compared upstream with an earlier run of ours: it is not carried over.
    kept = "1000Pods: 33.4 (an earlier pass's; not compared with this run)"
    assert f"| 116.2 (runs 110.9, 122.7, 116.2) | 9.50 | 6000 | 160 | {kept} |" in row
    assert row.endswith("| 1000Pods: stream 1.31 | 14.60 / 21.73 | 161 / 229 |")


def test_an_upstream_run_without_throughput_is_compared_by_its_duration(tmp_path: Path) -> None:
    # Upstream's collector samples once a second: a shorter measured phase writes no
    # SchedulingThroughput, only SchedulingDuration; the cell says so and divides the pods by it.
    results = tmp_path / "results"
    results.mkdir()
    ours = {"case": "SchedulingPreferredAffinityWithNSSelector", "variant": "500Nodes", "folder": "affinity",
            "status": "ran", "attempts": 140, "peak_rss_mb": 87.0,
            "collections": [{"bound": 100, "pods_per_second": 1104.1, "sli_p99_ms": 1.1}]}  # fmt: skip
    theirs = {"case": ours["case"], "variant": "500Nodes", "folder": "affinity", "status": "ran",
              "pods_per_second": None, "runs": [{"pods_per_second": None, "scheduling_throughput": [],
                                                 "scheduling_duration": [{"Duration": 0.8}]}]}  # fmt: skip
    (results / "inprocess.json").write_text(json.dumps({"environment": {}, "results": [ours]}))
    (results / "upstream.json").write_text(json.dumps({"environment": {}, "results": [theirs]}))
    readme = tmp_path / "README.md"
    readme.write_text("<!-- b -->\n<!-- e -->\n")
    table.write_readme(readme, results, "<!-- b -->", "<!-- e -->")
    cell = "500Nodes: no SchedulingThroughput (a 0.80 s phase); 100 pods ÷ SchedulingDuration: 125.0 (ours x8.83)"
    assert f"| {cell} |" in readme.read_text()


# What a v1.36.3 benchmark prints when a measured value misses its workload's threshold
# (executor.go stopCollectingMetrics, scheduler_perf.go applyThreshold); exit status 1.
THRESHOLD_MISS = (
    "    executor.go:484: op 6: SchedulingPodAntiAffinity/5000Nodes_2000Pods: "
    'expected "SchedulingThroughput" "Average" to be higher: got 41.500000, want 70.000000\n'
    """\
    executor.go:486: Stopped metrics collection
--- FAIL: BenchmarkPerfScheduling/SchedulingPodAntiAffinity/5000Nodes_2000Pods
FAIL
"""
)


def test_a_missed_upstream_threshold_keeps_the_run() -> None:
    from bench.scheduler_perf import upstream

    assert upstream.below_threshold(THRESHOLD_MISS) == [
        {
            "name": "SchedulingPodAntiAffinity/5000Nodes_2000Pods",
            "metric": "SchedulingThroughput",
            "bucket": "Average",
            "expected": "higher",
            "got": 41.5,
            "want": 70.0,
        }
    ]
    assert upstream._only_threshold_failures(THRESHOLD_MISS)


def test_any_other_upstream_failure_fails_the_run() -> None:
    from bench.scheduler_perf import upstream

    other = THRESHOLD_MISS + "    executor.go:301: op 7: error waiting for pods: timed out\n"
    assert not upstream._only_threshold_failures(other)
    assert not upstream._only_threshold_failures(THRESHOLD_MISS + "panic: test timed out after 1h0m0s\n")


def test_cluster_repeats_report_the_median_ratio_run_and_every_run() -> None:
    from bench.suite import _median_cluster_run

    def run(ratio: float, ours_cpu: float) -> dict[str, object]:
        sides = {
            "crd_scheduler": {"cpu_seconds_per_bound_pod": ours_cpu},
            "kube_scheduler": {"cpu_seconds_per_bound_pod": 0.003},
        }
        return {"workload": "SchedulingBasic/500Nodes", "stream": {**sides, "ratio": ratio}}

    median = _median_cluster_run([run(1.2, 0.001), run(0.9, 0.002), run(1.0, 0.0015)])
    assert median["stream"]["ratio"] == 1.0
    assert median["stream"]["crd_scheduler"]["cpu_seconds_per_bound_pod"] == 0.0015
    assert median["ratio_runs"] == {"stream": [1.2, 0.9, 1.0]}
    assert median["cpu_per_bound_pod_runs"]["stream"][1] == [0.002, 0.003]
    cells = table._cluster_cells({"variant": "500Nodes", "status": "ran", **median})
    assert cells[0] == "500Nodes: stream 1.00 (runs 1.20, 0.90, 1.00)"


def test_cluster_runs_alternate_which_scheduler_goes_first_unless_told() -> None:
    from bench.suite import _median_cluster_run, first_side

    assert [first_side("alternate", i) for i in range(3)] == ["crd_scheduler", "kube_scheduler", "crd_scheduler"]
    assert {first_side("ours-first", i) for i in range(3)} == {"crd_scheduler"}
    assert {first_side("theirs-first", i) for i in range(3)} == {"kube_scheduler"}
    runs = [{"order": [first_side("alternate", i)], "stream": {"ratio": 1.0 + i / 10}} for i in range(3)]
    median = _median_cluster_run(runs)
    assert median["first_side_runs"] == ["crd_scheduler", "kube_scheduler", "crd_scheduler"]
    cells = table._cluster_cells({"variant": "fast", "status": "ran", **median, "warmup_runs": 1})
    assert cells[0] == (
        "fast: stream 1.10 (runs 1.00, 1.10, 1.20); first: ours, theirs, ours; after 1 warm-up run; "
        "order-balanced 1.10 (ours first 1.09, theirs first 1.10)"
    )


def test_alternated_runs_report_a_ratio_balanced_between_the_two_orders() -> None:
    # Three runs alternated put ours first twice; going first is worth ~10 % (bench/README.md,
    # nineteenth pass): the balanced ratio weighs each order once, whatever the count of runs.
    from bench.suite import _median_cluster_run, first_side

    ratios = [1.44, 0.81, 1.0]
    runs = [{"order": [first_side("alternate", i)], "stream": {"ratio": r}} for i, r in enumerate(ratios)]
    median = _median_cluster_run(runs)
    assert median["stream"]["ratio"] == 1.0
    # ours first: geometric mean of 1.44 and 1.0 = 1.2; theirs first: 0.81; balanced sqrt(1.2 * 0.81)
    assert median["ratio_by_first_side"] == {"stream": {"crd_scheduler": 1.2, "kube_scheduler": 0.81}}
    assert "balanced_ratio" not in median  # derived where shown, from the two means
    cells = table._cluster_cells({"variant": "500Nodes", "status": "ran", **median})
    assert cells[0] == (
        "500Nodes: stream 1.00 (runs 1.44, 0.81, 1.00); first: ours, theirs, ours; "
        "order-balanced 0.99 (ours first 1.20, theirs first 0.81)"
    )
    one_order = _median_cluster_run([{"order": ["crd_scheduler"], "stream": {"ratio": 1.1}}] * 2)
    assert "ratio_by_first_side" not in one_order


def test_a_stream_ratio_under_one_says_whether_both_sides_were_creation_bound() -> None:
    def row(ours: dict[str, float], theirs: dict[str, float], ratio: float) -> dict[str, object]:
        sides = {"crd_scheduler": ours, "kube_scheduler": theirs}
        return {"variant": "500Nodes", "status": "ran", "stream": {**sides, "ratio": ratio}}

    # SchedulingNodeAffinity 500Nodes on the dev cluster: both bound their last pod within
    # 0.1 s of its creation, 3.5 s into the run.
    kept_up = row({"seconds": 3.53, "creation_seconds": 3.467}, {"seconds": 3.514, "creation_seconds": 3.413}, 0.995)
    assert table._cluster_cells(kept_up)[0] == (
        "500Nodes: stream 0.99; under 1.0, creation-bound: last binding 0.06 / 0.10 s after the last pod created"
    )
    behind = row({"seconds": 6.0, "creation_seconds": 3.4}, {"seconds": 3.5, "creation_seconds": 3.4}, 0.58)
    assert table._cluster_cells(behind)[0] == (
        "500Nodes: stream 0.58; under 1.0: last binding 2.60 / 0.10 s after the last pod created"
    )
    ops_path = row({"seconds": 6.0}, {"seconds": 5.0}, 0.83)
    assert table._cluster_cells(ops_path)[0] == "500Nodes: stream 0.83; under 1.0: the median run has no creation time"
    above = row({"seconds": 3.0, "creation_seconds": 3.0}, {"seconds": 3.5, "creation_seconds": 3.4}, 1.17)
    assert table._cluster_cells(above)[0] == "500Nodes: stream 1.17"


def test_a_failed_wait_names_a_few_unbound_pods_with_their_scheduled_condition() -> None:
    never = {"metadata": {"namespace": "test", "name": "a"}, "status": {}}
    rejected = {
        "metadata": {"namespace": "test", "name": "b"},
        "status": {"conditions": [
            {"type": "Ready", "status": "False"},
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/2 nodes are available."},
        ]},
    }  # fmt: skip
    assert cluster.unbound_summary(12, [never, rejected]) == (
        "12 pods unbound, e.g. test/a (no scheduling attempt recorded); "
        "test/b (Unschedulable: 0/2 nodes are available.)"
    )
    assert cluster.unbound_summary(4, []) == "4 pods unbound"  # each was deleted before it was read


def test_a_window_made_before_its_pods_were_bound() -> None:
    # CI (2026-12-03): three pods, the clock read 0.017 s after the window's start once the
    # creator threads were joined, the last binding seen at 0.015 s; the creation must not read
    # as later than the bindings it came before.
    assert creation_seconds(0.017, 0.015, made=3, bound=3) == 0.015
    assert creation_seconds(0.017, 0.5, made=3, bound=3) == 0.017
    # Some pods unbound: the last binding seen says nothing of when the last pod was made.
    assert creation_seconds(0.017, 0.015, made=3, bound=2) == 0.017
