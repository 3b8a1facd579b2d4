"""``crd-scheduler run --kubeconfig FILE --context NAME``: the operator's every client (its
transport, the Lease keeper's and Kopf's) takes the credentials of that file and context, as
kubectl's flags do, whatever ``KUBECONFIG`` says."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.e2e.operator_support import Env, profile, wait_all_bound

pytestmark = pytest.mark.e2e


def _two_contexts(operator: Path, where: Path) -> Path:
    """The operator's kubeconfig, with a first, current context that leads nowhere."""
    config = yaml.safe_load(operator.read_text())
    (real,) = config["contexts"]
    cluster = dict(config["clusters"][0])
    cluster["cluster"] = {**cluster["cluster"], "server": "https://127.0.0.1:1"}
    cluster["name"] = "nowhere"
    config["clusters"].append(cluster)
    config["contexts"].insert(0, {"name": "nowhere", "context": {**real["context"], "cluster": "nowhere"}})
    config["current-context"] = "nowhere"
    path = where / "two-contexts.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def test_run_takes_the_kubeconfig_and_context_it_is_given(env: Env) -> None:
    assert env.cluster.operator_kubeconfig is not None
    chosen = _two_contexts(env.cluster.operator_kubeconfig, env.tmp)
    context = yaml.safe_load(env.cluster.operator_kubeconfig.read_text())["contexts"][0]["name"]
    env.add_nodes(2, cpu="2", memory="4Gi")
    env.custom.create(env.home, profile("default", env.scheduler))
    # KUBECONFIG names a file that does not exist: only the flags can lead to the API server.
    env.start_operator("--kubeconfig", str(chosen), "--context", context, env={"KUBECONFIG": str(env.tmp / "missing")})
    names = [f"k{i}" for i in range(3)]
    env.create_pods(env.home, names, cpu="100m", memory="64Mi")
    wait_all_bound(env.core, env.home, set(names))
