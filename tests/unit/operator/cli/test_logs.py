"""``--log-format text|json`` and ``-v``: what the long-running verbs write to stderr."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator

import pytest

from scheduler_operator.cli import logs
from scheduler_operator.cli.command import build_parser


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


def test_json_lines_carry_ts_level_msg_and_the_pod_node_profile(
    restore_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    logs.configure("json", "INFO")
    log = logging.getLogger("scheduler_operator.control.backend")
    log.info("bound %s node=%s", "ns/p", "n1", extra={"pod": "ns/p", "node": "n1", "uid": "u1"})
    log.debug("not at INFO")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        log.exception("failed", extra={"profile": "crd-scheduler/default"})
    lines = capsys.readouterr().err.splitlines()
    first, second = (json.loads(line) for line in lines)
    assert isinstance(first.pop("ts"), float)
    assert first == {
        "level": "info", "msg": "bound ns/p node=n1", "logger": "scheduler_operator.control.backend",
        "pod": "ns/p", "node": "n1", "uid": "u1",
    }  # fmt: skip
    assert second["level"] == "error" and second["profile"] == "crd-scheduler/default"
    assert "RuntimeError: boom" in second["err"]


def test_text_is_the_default(restore_logging: None, capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["run"])
    logs.configure(args.log_format, logs.level_of(args.verbosity, args.log_level))
    logging.getLogger("x").info("hello")
    assert capsys.readouterr().err.rstrip().endswith(" INFO x: hello")


@pytest.mark.parametrize(
    ("argv", "level"),
    [
        pytest.param([], "INFO", id="default"),
        pytest.param(["-v", "2"], "INFO", id="v2"),
        pytest.param(["-v", "4"], "DEBUG", id="v4"),
        pytest.param(["--v", "10"], "DEBUG", id="v10"),
        pytest.param(["-v", "4", "--log-level", "WARNING"], "WARNING", id="level-wins"),
    ],
)
def test_verbosity_maps_to_a_level(argv: list[str], level: str) -> None:
    args = build_parser().parse_args(["run", *argv])
    assert logs.level_of(args.verbosity, args.log_level) == level


def test_records_go_to_the_stderr_of_the_moment_and_other_handlers_stay(
    restore_logging: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A handler bound to the stderr of its configure() call wrote into a closed stream once that
    stream was gone (a test's captured stderr), and configure() removed every other handler."""
    other = logging.NullHandler()
    logging.getLogger().addHandler(other)
    logs.configure("text", "INFO")
    logs.configure("json", "INFO")  # replaces its own handler only
    now = io.StringIO()
    monkeypatch.setattr(sys, "stderr", now)
    logging.getLogger("x").info("hello")
    assert json.loads(now.getvalue())["msg"] == "hello"  # one line, from the second configure
    assert other in logging.getLogger().handlers
