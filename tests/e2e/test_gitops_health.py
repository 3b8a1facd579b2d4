"""GitOps health on the dev cluster (issue 22, item 1; docs/gitops.md): on live SchedulerProfiles
and PluginConfigs, kstatus's own ``Compute`` (hack/kstatus, what Flux uses), upstream's
``kubectl wait --for=condition=Ready`` and the Argo CD Lua check agree with the operator: a
refused spec is Failed / Degraded / never Ready, a fix is Current / Healthy / Ready, a generation
not yet reconciled is InProgress / Progressing. A tenant PluginConfig refused by the policy says
so on itself, and ``explain`` on a pod held by a refused profile names the refusal.

kstatus and kubectl are built from the Go module proxy on first use (``scripts/dev-cluster build
kstatus|kubectl``, hack/kstatus/go.mod).
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from scheduler_operator.resources import PLUGIN_CONFIG_PLURAL, PROFILE_PLURAL
from tests.e2e import Cluster, eventually
from tests.e2e.operator_support import (
    Env,
    condition_of,
    plugin_config,
    profile,
    wait_all_bound,
)

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
ARGOCD_SNIPPET = ROOT / "examples" / "gitops" / "argocd-cm-health.yaml"
MISSPELT = {"score": {"enabled": [{"name": "NodeResourcesFitt"}]}}


def computed(kstatus: Path, obj: dict[str, Any]) -> tuple[str, str]:
    """kstatus's ``Compute`` on the object: (status, message)."""
    done = subprocess.run([str(kstatus)], input=json.dumps(obj), capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    status, _, message = done.stdout.rstrip("\n").partition("\t")
    return status, message


def argocd(obj: dict[str, Any]) -> str:
    """The Argo CD health check's verdict (Lua 5.1 by lupa, from the dev lock)."""
    lua51: Any = importlib.import_module("lupa.lua51")
    script = yaml.safe_load(ARGOCD_SNIPPET.read_text())["data"][
        f"resource.customizations.health.scheduling.crd-scheduler.io_{obj['kind']}"
    ]
    lua = lua51.LuaRuntime()
    lua.globals().obj = lua.table_from(obj, recursive=True)
    return str(lua.execute(script)["status"])


def wait_ready(kubectl: Path, cluster: Cluster, namespace: str, what: str, timeout: str) -> int:
    done = subprocess.run(
        [str(kubectl), "--kubeconfig", str(cluster.kubeconfig), "-n", namespace, "wait",
         "--for=condition=Ready", what, f"--timeout={timeout}"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    return done.returncode


def test_kstatus_kubectl_wait_and_argocd_follow_a_refused_and_a_fixed_profile(
    env: Env, kstatus: Path, kubectl: Path
) -> None:
    env.add_nodes(2, cpu="4", memory="8Gi")
    env.custom.create(env.home, profile("default", env.scheduler))
    env.start_operator()
    env.custom.wait_status(PROFILE_PLURAL, env.home, "default", lambda s: s.get("observedGeneration") == 1)
    served = env.custom.get(PROFILE_PLURAL, env.home, "default")
    assert computed(kstatus, served)[0] == "Current"
    assert argocd(served) == "Healthy"
    assert wait_ready(kubectl, env.cluster, env.home, "schedulerprofile/default", "30s") == 0

    # The object as the patch left it: a new generation the operator has not acted on yet.
    patched = env.custom.patch_spec(PROFILE_PLURAL, env.home, "default", {"plugins": MISSPELT})
    assert patched["metadata"]["generation"] == 2 and patched["status"]["observedGeneration"] == 1
    assert computed(kstatus, patched)[0] == "InProgress"
    assert argocd(patched) == "Progressing"

    env.custom.wait_status(PROFILE_PLURAL, env.home, "default", lambda s: s.get("observedGeneration") == 2)
    refused = env.custom.get(PROFILE_PLURAL, env.home, "default")
    ready, stalled = condition_of(refused["status"], "Ready"), condition_of(refused["status"], "Stalled")
    assert (ready["status"], ready["reason"]) == ("False", "SpecRejected")
    assert (stalled["status"], stalled["reason"]) == ("True", "SpecRejected")
    assert ready["message"].startswith("generation 2 refused, the last good generation 1 keeps serving: ")
    assert "plugin 'NodeResourcesFitt' does not exist" in ready["message"]
    status, message = computed(kstatus, refused)
    assert status == "Failed" and "the last good generation 1 keeps serving" in message
    assert argocd(refused) == "Degraded"
    assert wait_ready(kubectl, env.cluster, env.home, "schedulerprofile/default", "3s") != 0
    env.create_pods(env.home, ["still-served"], cpu="100m")
    wait_all_bound(env.core, env.home, {"still-served"})  # the last good generation serves

    env.custom.patch_spec(PROFILE_PLURAL, env.home, "default", {"plugins": None})
    env.custom.wait_status(PROFILE_PLURAL, env.home, "default", lambda s: s.get("observedGeneration") == 3)
    fixed = env.custom.get(PROFILE_PLURAL, env.home, "default")
    assert condition_of(fixed["status"], "Ready")["status"] == "True"
    assert condition_of(fixed["status"], "Stalled")["status"] == "False"
    assert computed(kstatus, fixed)[0] == "Current"
    assert argocd(fixed) == "Healthy"
    assert wait_ready(kubectl, env.cluster, env.home, "schedulerprofile/default", "30s") == 0


def test_a_tenant_plugin_config_refused_by_policy_says_so_and_explain_names_a_refusal(env: Env, kstatus: Path) -> None:
    env.add_nodes(1, cpu="4", memory="8Gi")
    env.custom.create(
        env.home, profile("default", env.scheduler, tenantPolicy={"allowedSchedulerNames": [env.scheduler]})
    )
    tenant, broken = env.namespace(), env.namespace()
    env.custom.create(tenant, profile("packed", env.scheduler))
    operator = env.start_operator()
    env.custom.wait_status(PROFILE_PLURAL, tenant, "packed", lambda s: s.get("observedGeneration") == 1)

    env.custom.create(tenant, plugin_config("fit", "NodeResourcesFit", {"ignoredResources": ["cpu"]}))
    config = env.custom.wait_status(
        PLUGIN_CONFIG_PLURAL, tenant, "fit", lambda s: condition_of(s, "Ready").get("status") == "False"
    )
    ready = condition_of(config, "Ready")
    assert ready["reason"] == "RefusedByProfile"
    assert ready["message"].startswith(
        f"refused by profile {tenant}/packed: spec.args.ignoredResources: tenant policy rule 'narrowing-args': "
    )
    assert condition_of(config, "Stalled")["status"] == "True"
    assert computed(kstatus, env.custom.get(PLUGIN_CONFIG_PLURAL, tenant, "fit"))[0] == "Failed"

    def warned_on_itself() -> None:
        events: Any = client.EventsV1Api(env.api).list_namespaced_event(tenant).items
        notes = [
            e.note for e in events
            if e.regarding.kind == "PluginConfig" and e.regarding.name == "fit" and e.type == "Warning"
            and e.reporting_instance == operator.identity
        ]  # fmt: skip
        assert notes == [ready["message"]]

    eventually(warned_on_itself)

    # A profile that never worked: Stalled (Failed), and its pods are held; explain says why.
    env.custom.create(broken, profile("own", env.scheduler, plugins=MISSPELT))
    never = env.custom.wait_status(PROFILE_PLURAL, broken, "own", lambda s: s.get("observedGeneration") == 1)
    assert condition_of(never, "Stalled")["status"] == "True"
    assert computed(kstatus, env.custom.get(PROFILE_PLURAL, broken, "own"))[0] == "Failed"
    env.create_pods(broken, ["held"], cpu="100m")
    done = subprocess.run(
        [sys.executable, "-m", "scheduler_operator", "explain", "held", "-n", broken, "--home-namespace", env.home,
         "-o", "json", "--kubeconfig", str(env.cluster.kubeconfig)],
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (explained,) = json.loads(done.stdout)["pods"]
    assert (explained["status"], explained["profile"]) == ("ProfileNotServing", f"{broken}/own")
    assert explained["held"][0].startswith("status Ready=False (SpecRejected): generation 1 refused, no generation")
    assert any("plugin 'NodeResourcesFitt' does not exist" in line for line in explained["held"])
