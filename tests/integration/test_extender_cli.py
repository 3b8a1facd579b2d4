"""``crd-scheduler extender serve`` refusing bad input before it connects: exit 2, one
``error: ...`` line per problem naming the file and field, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.test_simulate_cli import cli, write

PROFILE_API = "scheduling.crd-scheduler.io/v1alpha1"


def _profile(spec: dict[str, object]) -> dict[str, object]:
    return {"apiVersion": PROFILE_API, "kind": "SchedulerProfile", "metadata": {"name": "x"}, "spec": spec}


@pytest.mark.parametrize(
    ("spec", "args", "error"),
    [
        pytest.param({"plugins": {"filter": {"enabled": [{"name": "Nope"}]}}}, [],
                     "{file}: spec.plugins.filter.enabled[0].name: plugin 'Nope' does not exist", id="unknown-plugin"),
        pytest.param({"percentageOfNodesToScore": 300}, [],
                     "{file}: spec.percentageOfNodesToScore: Input should be less than or equal to 100 (got 300)",
                     id="bad-field"),
        pytest.param({"extenders": [{"urlPrefix": "http://e"}]}, [],
                     "{file}: spec.extenders: a profile served as an extender may not call extenders", id="extenders"),
        pytest.param({}, ["--listen", "nowhere"], "--listen: 'nowhere' is not HOST:PORT", id="bad-listen"),
        pytest.param({}, ["--tls-cert", "/nonexistent.crt"], "--tls-cert and --tls-key: give both or neither",
                     id="half-tls"),
    ],
)  # fmt: skip
def test_bad_input_exits_2_with_the_reason(
    tmp_path: Path, spec: dict[str, object], args: list[str], error: str
) -> None:
    path = write(tmp_path / "profile.yaml", _profile(spec))
    done = cli("extender", "serve", "--profile", path, *args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == ["error: " + error.format(file=path)]


def test_a_missing_profile_file_is_named(tmp_path: Path) -> None:
    done = cli("extender", "serve", "--profile", str(tmp_path / "absent.yaml"))
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {tmp_path / 'absent.yaml'}: No such file or directory"
