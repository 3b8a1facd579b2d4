"""GitHub Actions workflow annotations for ``crd-scheduler validate -o github``.

One ``::error file=...,title=...::message`` line per problem, escaped as the runner's
workflow-command parser expects (``%``, CR and LF in the message; also ``:`` and ``,`` in
properties), so each problem shows on the pull request's file.
"""

from __future__ import annotations

from scheduler_core.simulator import Problem

TITLE = "crd-scheduler validate"


def _message(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _message(text).replace(":", "%3A").replace(",", "%2C")


def github(problem: Problem) -> str:
    message = ": ".join(part for part in (problem.what, problem.path, problem.reason) if part)
    return f"::error file={_property(problem.source)},title={_property(TITLE)}::{_message(message)}"
