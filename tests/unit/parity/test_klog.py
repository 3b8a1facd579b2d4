"""Reading kube-scheduler's log: klog text lines, Go-quoted values, attempts per pod."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.parity_harness.klog import LogTail, Record, SchedulerLog, go_unquote, parse_line

# Lines as kube-scheduler v1.36.3 wrote them at --v=10 (pkg/scheduler/schedule_one.go, eventhandlers.go).
ADD_NODE = 'I1122 10:29:01.882579   14605 eventhandlers.go:63] "Add event for node" node="px1-n0"'
ADD_POD = 'I1122 10:29:01.922639   14605 eventhandlers.go:374] "Add event for scheduled pod" pod="px1/old"'
ATTEMPT = 'I1122 10:29:01.933205   14605 schedule_one.go:123] "Attempting to schedule pod" pod="px1/p"'
SCORE = (
    'I1122 10:29:01.933943   14605 schedule_one.go:982] "Plugin scored node for pod" pod="px1/p" '
    'plugin="TaintToleration" node="px1-n1" score=300'
)
TOTAL = (
    'I1122 10:29:01.933995   14605 schedule_one.go:1050] "Calculated node\'s final score for pod" pod="px1/p" '
    'node="px1-n1" score=417'
)
BOUND = (
    'I1122 10:29:01.939927   14605 schedule_one.go:481] "Successfully bound pod to node" pod="px1/p" '
    'node="px1-n1" evaluatedNodes=3 feasibleNodes=3'
)
NO_FIT = (
    'I1122 10:30:29.405511   17886 schedule_one.go:1239] "Unable to schedule pod; no fit; waiting" '
    'pod="px1/q" err="0/4 nodes are available: 1 Insufficient cpu, 3 node(s) didn\'t satisfy plugin(s) '
    '[NodeAffinity]."'
)
HINT = (
    'I1122 10:29:03.974434   14605 batch.go:87] "OpportunisticBatch provided node hint" pod="px1/q" '
    'profile="parity-scheduler" cycleCount=2 hint="px1-n0" remainingNodes=1'
)


@pytest.mark.parametrize(
    ("literal", "text"),
    [
        pytest.param('"plain"', "plain", id="plain"),
        pytest.param(r'"say \"hi\"\n"', 'say "hi"\n', id="quotes-and-newline"),
        pytest.param(r'"tab\there\\"', "tab\there\\", id="tab-and-backslash"),
        pytest.param(r'"\x41\u00e9\101"', "Aé" + "A", id="hex-unicode-octal"),
    ],
)
def test_go_quoted_strings(literal: str, text: str) -> None:
    assert go_unquote(literal) == text


@pytest.mark.parametrize(
    ("line", "record"),
    [
        pytest.param(
            SCORE,
            Record(
                "Plugin scored node for pod",
                {"pod": "px1/p", "plugin": "TaintToleration", "node": "px1-n1", "score": "300"},
            ),
            id="score",
        ),
        pytest.param(
            NO_FIT,
            Record(
                "Unable to schedule pod; no fit; waiting",
                {
                    "pod": "px1/q",
                    "err": "0/4 nodes are available: 1 Insufficient cpu, "
                    "3 node(s) didn't satisfy plugin(s) [NodeAffinity].",
                },
            ),
            id="quoted-value-with-spaces",
        ),
        pytest.param(
            'I1122 10:29:01.934377   14605 pod_expansion.go:50] "Request Body" logger="Bind" body=<',
            Record("Request Body", {"logger": "Bind", "body": "<"}),
            id="multi-line-value-start",
        ),
        pytest.param("\t00000050  18 0a 04 4e 6f 64 65 12  |...Node....px1-n|", None, id="continuation"),
        pytest.param("not klog at all", None, id="other-text"),
    ],
)
def test_parse_line(line: str, record: Record | None) -> None:
    assert parse_line(line) == record


def _feed(lines: list[str]) -> SchedulerLog:
    log = SchedulerLog()
    for line in lines:
        record = parse_line(line)
        assert record is not None
        log.feed(record)
    return log


def test_a_scheduled_attempt_collects_scores_totals_and_the_binding() -> None:
    log = _feed([ADD_NODE, ADD_POD, ATTEMPT, SCORE, TOTAL, BOUND])
    assert log.nodes == {"px1-n0"} and log.scheduled_pods == {"px1/old"}
    attempt = log.first("px1/p")
    assert attempt is not None and attempt.finished
    assert attempt.scores == {"px1-n1": {"TaintToleration": 300}}
    assert attempt.totals == {"px1-n1": 417}
    assert (attempt.bound_node, attempt.feasible_count, attempt.fit_error) == ("px1-n1", 3, None)


def test_the_first_attempt_stays_first_and_a_hint_is_noted() -> None:
    retry = NO_FIT.replace("1 Insufficient cpu", "1 Insufficient memory")
    log = _feed([ATTEMPT.replace("px1/p", "px1/q"), HINT, NO_FIT, ATTEMPT.replace("px1/p", "px1/q"), retry])
    first = log.first("px1/q")
    assert first is not None and first.hinted
    assert first.fit_error is not None and "Insufficient cpu" in first.fit_error
    assert len(log.attempts["px1/q"]) == 2
    assert log.first("px1/p") is None


def test_lines_of_an_attempt_begun_before_reading_are_ignored() -> None:
    assert _feed([SCORE, BOUND]).attempts == {}


def test_a_deleted_node_leaves_the_cache() -> None:
    log = _feed([ADD_NODE, ADD_NODE.replace("Add event", "Delete event")])
    assert log.nodes == set() and log.deleted_nodes == {"px1-n0"}


def test_the_tail_reads_only_complete_lines_as_they_come(tmp_path: Path) -> None:
    path = tmp_path / "kube-scheduler.log"
    path.write_text(ATTEMPT + "\n" + SCORE[:40])
    tail = LogTail(path)
    tail.poll()
    attempt = tail.log.first("px1/p")
    assert attempt is not None and attempt.scores == {}
    with path.open("a") as stream:
        stream.write(SCORE[40:] + "\nnoise line\n" + BOUND + "\n")
    tail.poll()
    assert attempt.scores == {"px1-n1": {"TaintToleration": 300}} and attempt.bound_node == "px1-n1"


def test_every_prequeue_plugin_holding_a_pod_and_its_nomination_are_kept() -> None:
    """Upstream runs PreEnqueue plugins in map order (scheduling_queue.go runPreEnqueuePlugins):
    which of SchedulingGates and DynamicResources reports first is random, so all are kept."""
    log = SchedulerLog()
    for plugin in ("DynamicResources", "SchedulingGates", "DynamicResources"):
        log.feed(Record("Status after running PreEnqueue plugin", {"pod": "ns/p", "plugin": plugin}))
    log.feed(Record("Updating pod condition and nominated node name", {"pod": "ns/p"}))
    log.feed(Record("Updating pod condition and nominated node name", {"pod": "ns/q", "nominatedNodeName": "n1"}))
    log.feed(Record("Updating pod condition and nominated node name", {"pod": "ns/q", "nominatedNodeName": "n2"}))
    assert log.gated == {"ns/p": {"DynamicResources", "SchedulingGates"}}
    assert log.nominated == {"ns/p": "", "ns/q": "n1"}  # the first attempt's: none for p


def test_a_preemption_ending_and_the_victims_leaving_the_cache_are_kept() -> None:
    """What the harness reads to tell a preemptor parked after its preemption (upstream.py
    _parked_watch), in the words of v1.36.3 eventhandlers.go and preemption/executor.go."""
    log = _feed(
        [
            'I1124 10:05:46.225745   21207 eventhandlers.go:443] "Delete event for scheduled pod" pod="px1/v1"',
            'I1124 10:05:46.244035   21207 executor.go:303] "Async Preemption finished completely"'
            ' preemptor="px1/p" node="px1-n4" result="success"',
        ]
    )
    assert log.deleted_pods == {"px1/v1"} and log.preempted == {"px1/p"}
