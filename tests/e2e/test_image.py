"""The OCI image that ``make image`` built (hack/image/build.py), run with crun: its own
entrypoint and Python, as the user 65532, on a read-only root filesystem (image_support.py).

Opt-in: without a built layout for this version these tests skip, unless ``make image-test``
(which builds it first) set CRD_SCHEDULER_IMAGE_TEST=1, where a missing image fails.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import ssl
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.image_support import BUILT_FLAG, Image, ImageOperator, crun_missing, layout_for
from tests.e2e.operator_support import Env, free_port, profile, wait_all_bound, wait_binds

VERSION = importlib.metadata.version("crd-scheduler")
SIZE_BUDGET = 200 * 1000 * 1000  # bytes, uncompressed (docs/deploy.md)


def _unavailable(reason: str) -> None:
    if os.environ.get(BUILT_FLAG) == "1":
        pytest.fail(f"image: {reason}", pytrace=False)
    pytest.skip(f"image: {reason} (make image-test builds and tests it)")


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Image]:
    layout = layout_for(VERSION)
    if not (layout / "index.json").exists():
        _unavailable(f"no {layout.relative_to(layout.parents[2])} (make image)")
    problem = crun_missing()
    if problem:
        _unavailable(problem)
    yield Image.unpack(layout, VERSION, tmp_path_factory.mktemp("image"))


def test_version_comes_from_the_image_entrypoint(image: Image, tmp_path: Path) -> None:
    ran = image.run(image.command("--version"), tmp_path)

    assert ran.returncode == 0, ran.stdout
    assert re.match(rf"crd-scheduler {re.escape(VERSION)}\b", ran.stdout), ran.stdout


def test_the_image_runs_as_65532_on_a_read_only_root(image: Image, tmp_path: Path) -> None:
    check = (
        "import os, sys, scheduler_operator.cli, kubernetes.client, numpy;"
        "print(os.getuid(), os.getgid(), sys.version_info[:2], sys.dont_write_bytecode);"
        "open('/opt/crd-scheduler/probe', 'w')"
    )
    ran = image.run(["python", "-c", check], tmp_path)

    assert ran.stdout.splitlines()[0] == "65532 65532 (3, 11) True", ran.stdout
    assert "Read-only file system: '/opt/crd-scheduler/probe'" in ran.stdout


def test_config_and_labels(image: Image) -> None:
    config = image.config["config"]
    labels = config["Labels"]
    annotations = image.manifest["annotations"]

    assert (config["User"], config["Entrypoint"], config["Cmd"]) == ("65532:65532", ["crd-scheduler"], ["run"])
    assert "PYTHONDONTWRITEBYTECODE=1" in config["Env"]
    assert labels["org.opencontainers.image.version"] == VERSION
    assert labels["org.opencontainers.image.title"] == "crd-scheduler"
    assert labels["org.opencontainers.image.licenses"] == "Apache-2.0"
    assert labels["io.crd-scheduler.kubernetes-version"] == "v1.36.3"
    assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", labels["org.opencontainers.image.revision"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", labels["org.opencontainers.image.created"])
    assert {k: v for k, v in annotations.items() if k in labels} == labels


def test_size_within_budget(image: Image) -> None:
    size = image.size()

    print(f"image {image.tag}: {size / 1e6:.1f} MB uncompressed")
    assert size <= SIZE_BUDGET


def test_run_binds_a_pod_as_the_operator_service_account(image: Image, env: Env) -> None:
    """The operator's identity is the dev cluster's token of crd-scheduler/crd-scheduler (the
    ServiceAccount of manifests/ and the chart), with manifests/rbac.yaml's rights."""
    assert env.cluster.operator_kubeconfig is not None
    env.add_nodes(2, cpu="4", memory="8Gi")
    env.custom.create(env.home, profile("default", env.scheduler))
    # HTTPS only in the test below, as in tests/e2e/operator_support.py.
    operator = ImageOperator(image, env.cluster.operator_kubeconfig, env.home, env.tmp, "--secure-port", "0")
    env.operators.append(operator)
    operator.wait_log(r"leading: scheduling", timeout=60)

    env.create_pods(env.home, ["from-the-image"], cpu="100m")
    placed = wait_all_bound(env.core, env.home, {"from-the-image"})
    wait_binds(operator, 1)

    assert placed["from-the-image"] in env.nodes
    # Other sessions' namespaced profiles on the shared cluster are this operator's to serve too.
    assert f"{env.home}/from-the-image" in [pod for pod, _, _ in operator.binds()]
    assert operator.problems() == []


def test_run_serves_https_with_its_default_self_signed_pair(image: Image, env: Env) -> None:
    """``run``'s defaults, as the Deployment starts it: /healthz over HTTPS with a self-signed
    pair made in memory (scheduler_operator/control/serving.py), with what the image has installed."""
    assert env.cluster.operator_kubeconfig is not None
    port = free_port()
    operator = ImageOperator(image, env.cluster.operator_kubeconfig, env.home, env.tmp, "--secure-port", str(port))
    env.operators.append(operator)
    operator.wait_log(r"leading: scheduling", timeout=60)

    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", context=context, timeout=10) as answer:
        assert answer.status == 200
