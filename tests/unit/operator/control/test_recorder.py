"""Events as kube-scheduler writes them, and the filter that keeps them from flooding the API."""

from __future__ import annotations

from datetime import UTC, datetime

from scheduler_operator.control.recorder import MAX_NOTE_LENGTH, SpamFilter, event_body

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "team", "uid": "u1"}}
AT = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)


def test_event_body_names_and_refers_as_upstream() -> None:
    body = event_body(POD, event_type="Normal", reason="Scheduled", action="Binding", note="ok", instance="r1", now=AT)

    assert body["metadata"] == {"name": f"web.{int(AT.timestamp() * 1_000_000) * 1000:x}", "namespace": "team"}
    assert body["eventTime"] == "2026-03-04T05:06:07.890123Z"
    assert body["regarding"] == {"apiVersion": "v1", "kind": "Pod", "namespace": "team", "name": "web", "uid": "u1"}
    assert (body["reportingController"], body["reportingInstance"]) == ("crd-scheduler", "r1")
    assert (body["type"], body["reason"], body["action"], body["note"]) == ("Normal", "Scheduled", "Binding", "ok")


def test_long_notes_are_cut_to_the_api_limit() -> None:
    body = event_body(POD, event_type="Warning", reason="R", action="A", note="x" * 5000, instance="r", now=AT)

    assert len(body["note"]) == MAX_NOTE_LENGTH
    assert body["note"].endswith(" ...")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_spam_filter_passes_new_notes_and_repeats_only_after_a_while() -> None:
    clock = Clock()
    spam = SpamFilter(repeat_after=60.0, clock=clock)

    seen = [spam.allow("u1", "FailedScheduling", "0/3 nodes")]
    seen.append(spam.allow("u1", "FailedScheduling", "0/3 nodes"))
    seen.append(spam.allow("u2", "FailedScheduling", "0/3 nodes"))  # another pod
    seen.append(spam.allow("u1", "FailedScheduling", "0/4 nodes"))  # a new message
    clock.now = 59.0
    seen.append(spam.allow("u1", "FailedScheduling", "0/4 nodes"))
    clock.now = 120.0
    seen.append(spam.allow("u1", "FailedScheduling", "0/4 nodes"))
    spam.forget("u2")
    seen.append(spam.allow("u2", "FailedScheduling", "0/3 nodes"))

    assert seen == [True, False, True, True, False, True, True]
