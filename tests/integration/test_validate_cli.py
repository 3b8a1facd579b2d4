"""``crd-scheduler validate``: SchedulerProfiles and PluginConfigs from files and folders
(recursively, other kinds passed over), the operator's rules, exit 0/2, one line per problem,
and GitHub workflow annotations with ``-o github``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from scheduler_operator.cli import main

GOOD = {
    "apiVersion": "scheduling.crd-scheduler.io/v1alpha1", "kind": "SchedulerProfile",
    "metadata": {"name": "packing", "namespace": "team-a"},
    "spec": {"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]},
}  # fmt: skip
BAD_CONFIG = {
    "apiVersion": "scheduling.crd-scheduler.io/v1alpha1", "kind": "PluginConfig",
    "metadata": {"name": "fit", "namespace": "team-b"},
    "spec": {"plugin": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Nope"}}},
}  # fmt: skip
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}, "spec": {"replicas": "bad"}}


def _write(path: Path, *docs: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs))
    return path


def test_valid_tree_exits_0_and_other_kinds_are_passed_over(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path / "a" / "b" / "profile.yaml", GOOD)
    _write(tmp_path / "app.yaml", DEPLOYMENT, {"kind": "Whatever", "apiVersion": "x/v1"})
    assert main(["validate", "-f", str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert out.out == ""
    assert "1 SchedulerProfile(s), 0 PluginConfig(s): valid" in out.err


def test_problems_one_line_each_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad_profile = {**GOOD, "metadata": {"name": "Bad_Name"}, "spec": {"percentageOfNodesToScore": 200}}
    path = _write(tmp_path / "deep" / "x.yaml", GOOD, bad_profile, BAD_CONFIG)
    assert main(["validate", "-f", str(tmp_path)]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f'{path}: SchedulerProfile crd-scheduler/Bad_Name: metadata.name: Invalid value: "Bad_Name": a lowercase '
        "RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end "
        "with an alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        f"{path}: SchedulerProfile crd-scheduler/Bad_Name: spec.percentageOfNodesToScore: Invalid value: 200: "
        "spec.percentageOfNodesToScore in body should be less than or equal to 100",
        f"{path}: PluginConfig team-b/fit: spec.args: plugin 'NodeResourcesFit': Value error, "
        'scoringStrategy.type: Unsupported value: "Nope": supported values: "LeastAllocated", "MostAllocated", '
        '"RequestedToCapacityRatio"',
    ]


def test_github_annotations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path / "x.yaml", BAD_CONFIG)
    assert main(["validate", "-f", str(path), "-o", "github"]) == 2
    (line,) = capsys.readouterr().out.splitlines()
    at = _line_of(path, "args:")
    assert line.startswith(
        f"::error file={path},line={at},title=crd-scheduler validate::PluginConfig team-b/fit: spec.args: "
    )


def test_github_annotations_point_at_the_field_of_the_object_in_a_multi_document_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    enabled = [{"name": "NodeResourcesFit"}, {"name": "NoSuchPlugin"}]
    bad = {
        **GOOD,
        "metadata": {"name": "bad", "namespace": "team-a"},
        "spec": {"schedulerName": "other", "plugins": {"score": {"enabled": enabled}}},
    }
    path = _write(tmp_path / "x.yaml", GOOD, bad)
    assert main(["validate", "-f", str(path), "-o", "github"]) == 2
    (line,) = capsys.readouterr().out.splitlines()
    # spec.plugins.score.enabled[1].name: the line of "name: NoSuchPlugin", in the second document.
    assert f",line={_line_of(path, 'name: NoSuchPlugin')}," in line, line
    assert "spec.plugins.score.enabled[1].name" in line


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), start=1) if text in line)


def test_unreadable_and_missing_files_are_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.yaml").write_text("kind: [")
    assert main(["validate", "-f", str(tmp_path / "bad.yaml"), "-f", str(tmp_path / "none.yaml")]) == 2
    out = capsys.readouterr().out
    assert f"{tmp_path / 'bad.yaml'}: line 2, column 1: " in out
    assert "No such file or directory" in out


def test_a_huge_bad_value_never_grows_the_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    huge = {**BAD_CONFIG, "spec": {"plugin": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "x" * 10**6}}}}
    _write(tmp_path / "x.yaml", huge, {**GOOD, "spec": {"schedulerName": ["y" * 10**6]}})
    assert main(["validate", "-f", str(tmp_path)]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert all(len(line) < 3000 for line in lines)


def test_a_long_bad_value_within_the_args_bounds_is_truncated_in_the_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long = {**BAD_CONFIG, "spec": {"plugin": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "x" * 4000}}}}
    _write(tmp_path / "x.yaml", long)
    assert main(["validate", "-f", str(tmp_path)]) == 2
    [line] = capsys.readouterr().out.splitlines()
    assert len(line) < 3000
    assert "(truncated)" in line


@pytest.mark.parametrize(
    ("flags", "code"),
    [pytest.param([], 2, id="empty-is-an-error"), pytest.param(["--allow-empty"], 0, id="allow-empty")],
)
def test_a_tree_without_profiles(
    flags: list[str], code: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "app.yaml", DEPLOYMENT)
    assert main(["validate", "-f", str(tmp_path), *flags]) == code
    err = capsys.readouterr().err
    refusal = f"error: {tmp_path}: no SchedulerProfile or PluginConfig found (--allow-empty to accept)"
    assert (refusal in err) is (code == 2)
