"""``crd-scheduler run``: its options, checked before anything connects."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from scheduler_operator.cli.command import _serving_options, build_parser, main
from scheduler_operator.cli.output import EXIT_BAD_INPUT
from scheduler_operator.control.options import ServingOptions
from scheduler_operator.io.calls import lane_limits


def test_run_defaults_follow_the_design(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CRD_SCHEDULER_HOME_NAMESPACE", raising=False)

    args = build_parser().parse_args(["run"])

    assert (args.home_namespace, args.lease_name, args.identity) == ("crd-scheduler", "crd-scheduler", None)
    assert args.liveness == ""  # Kopf's own endpoint: off unless asked for (no listener on 0.0.0.0 by surprise)
    assert (args.lease_duration, args.renew_deadline, args.retry_period) == (15.0, 10.0, 2.0)
    assert args.max_in_flight == 64
    # Bindings and preemptions get 64 calls in flight, reports 16; a lower flag bounds both.
    assert lane_limits(args.max_in_flight) == (64, 16)
    assert lane_limits(build_parser().parse_args(["run", "--max-in-flight", "4"]).max_in_flight) == (4, 4)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        pytest.param("7.5", 7.5, id="seconds"),
        pytest.param("7.5s", 7.5, id="go-duration"),
        pytest.param("1m30s", 90.0, id="minutes"),
        pytest.param("2500ms", 2.5, id="milliseconds"),
    ],
)
def test_durations_are_kept_exactly_in_seconds_or_go_durations(value: str, seconds: float) -> None:
    args = build_parser().parse_args(["run", "--retry-period", value])

    assert args.retry_period == seconds


def test_home_namespace_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRD_SCHEDULER_HOME_NAMESPACE", "scheduling")

    assert build_parser().parse_args(["run"]).home_namespace == "scheduling"
    assert build_parser().parse_args(["run", "--home-namespace", "x"]).home_namespace == "x"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--lease-duration", "5", "--renew-deadline", "6"], "--lease-duration must be", id="lease"),
        pytest.param(["--retry-period", "9"], "--renew-deadline must be greater than --retry-period", id="retry"),
        pytest.param(["--lease-duration", "0"], "--lease-duration must be a positive duration, got 0", id="zero"),
        pytest.param(["--lease-duration=-5s"], "--lease-duration must be a positive duration, got -5", id="negative"),
        pytest.param(["--lease-duration", "nan"], "--lease-duration: 'nan' is not a finite duration", id="nan"),
        pytest.param(
            ["--lease-duration", "7.5x"],
            "--lease-duration: '7.5x' is not a duration: seconds (7.5) or a Go duration",
            id="unit",
        ),
    ],
)
def test_bad_election_timings_are_refused(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code: int | str | None
    try:
        code = main(["run", *argv])
    except SystemExit as exit_:  # argparse refused the value itself
        code = exit_.code

    assert code == EXIT_BAD_INPUT
    assert message in capsys.readouterr().err


def test_metrics_and_probes_are_served_over_https_on_10259_and_plain_http_only_when_asked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = build_parser().parse_args(["run"])
    assert (args.bind_address, args.secure_port, args.port) == ("0.0.0.0", 10259, 0)
    plain, secure = _serving_options(args)
    assert plain is None and secure is not None
    # kube-scheduler's defaults (k8s.io/apiserver pkg/server/options): always-allowed probes, 10 s caches.
    assert secure.always_allow_paths == ("/healthz", "/readyz", "/livez")
    assert (secure.token_cache_ttl, secure.authorized_ttl, secure.unauthorized_ttl) == (10.0, 10.0, 10.0)
    args = build_parser().parse_args(
        ["run", "--bind-address", "127.0.0.1", "--port", "9100", "--secure-port", "0",
         "--authorization-always-allow-paths", "/healthz, /metrics*"]
    )  # fmt: skip
    plain, secure = _serving_options(args)
    assert plain == ServingOptions("127.0.0.1", 9100) and secure is None
    args = build_parser().parse_args(["run", "--authorization-always-allow-paths", "/healthz,/metrics*"])
    assert _serving_options(args)[1].always_allow_paths == ("/healthz", "/metrics*")  # type: ignore[union-attr]
    assert main(["run", "--port", "70000"]) == EXIT_BAD_INPUT
    assert "--port 70000 is not a TCP port" in capsys.readouterr().err
    assert main(["run", "--secure-port", "-1"]) == EXIT_BAD_INPUT
    assert "--secure-port -1 is not a TCP port" in capsys.readouterr().err
    assert main(["run", "--tls-cert-file", "a.crt"]) == EXIT_BAD_INPUT
    assert "--tls-cert-file and --tls-private-key-file go together" in capsys.readouterr().err
    assert main(["run", "--webhook-port", "9443", "--webhook-cert", "a.crt"]) == EXIT_BAD_INPUT
    assert "error: --webhook-port needs --webhook-cert and --webhook-key" in capsys.readouterr().err
    assert main(["run", "--lease-duration", "1s", "--renew-deadline", "2s"]) == EXIT_BAD_INPUT
    assert "error: --lease-duration must be greater than --renew-deadline" in capsys.readouterr().err


EXAMPLES = Path(__file__).resolve().parents[4] / "scheduler_operator" / "examples"
OFFLINE_VERBS = [
    pytest.param(["simulate", "--example", "-o", "json"], id="simulate"),
    pytest.param(["validate", "-f", str(EXAMPLES / "profiles.yaml")], id="validate"),
]


@pytest.mark.parametrize("argv", OFFLINE_VERBS)
def test_a_verb_that_reads_no_cluster_starts_and_runs_without_the_kubernetes_package(argv: list[str]) -> None:
    """The cluster verbs import it when they run (cli.live, io.kube), and the extender client
    imports aiohttp when it makes a session; a fresh interpreter checks that importing the
    command line and running an offline verb loads neither."""
    code = (
        "import contextlib, io, sys, scheduler_operator.cli\n"
        "loaded = [m in sys.modules for m in ('kubernetes', 'aiohttp')]\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        f"    code = scheduler_operator.cli.main({argv!r})\n"
        "print(*loaded, code, *(m in sys.modules for m in ('kubernetes', 'aiohttp')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False", "0", "False", "False"]
