"""Where everything lives: one state folder (git-ignored ``.devcluster/`` by default).

::

    .devcluster/
      bin/            built binaries + .stamp (hash of go.mod, go.sum and build flags)
      build.log       output of the last ``go build``
      run/            one running cluster; removed by ``down``
        pki/          CA, serving and client certificates, service-account key
        etcd/         etcd data
        logs/         one log per component
        pids/         one pid file per component
        state.json    ports chosen at ``up``
        kubeconfig, kubeconfig-operator, kubeconfig-scheduler, kubeconfig-controller-manager

``CRD_SCHEDULER_DEVCLUSTER_DIR`` moves the state folder (e.g. to run a second cluster);
``CRD_SCHEDULER_DEVCLUSTER_BIN`` points at an already built bin folder, which is then only
used, never built into. ``CRD_SCHEDULER_DEVCLUSTER_FEATURE_GATES`` (``--feature-gates`` syntax,
e.g. ``GenericWorkload=true,GangScheduling=true``) and ``CRD_SCHEDULER_DEVCLUSTER_RUNTIME_CONFIG``
(``--runtime-config``, e.g. ``scheduling.k8s.io/v1alpha2=true``) are read when a cluster starts
and kept in ``run/features.json``: every component of that cluster, the on-demand
kube-scheduler included, runs with them. ``CRD_SCHEDULER_DEVCLUSTER_AUDIT_LOG`` (a file path)
has the API server write an audit log there: one line per write of pods, bindings, pod
statuses and ``resource.k8s.io`` objects (the timelines of ``python -m bench.timeline``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
MODULE_DIR = REPO_ROOT / "hack" / "devcluster"

ETCD = "etcd"
APISERVER = "kube-apiserver"
CONTROLLER_MANAGER = "kube-controller-manager"
SCHEDULER = "kube-scheduler"
BINARIES = (ETCD, APISERVER, CONTROLLER_MANAGER, SCHEDULER)
KWOK = "kwok"  # built on demand (hack/kwok), started by `nodes` / `up --kwok-nodes`
KWOK_REAPER = "kwok-reaper"  # deletes kwok's deleted pods as a kubelet (reaper.py), with kwok
# Stop order: dependents first.
CLUSTER_COMPONENTS = (CONTROLLER_MANAGER, APISERVER, ETCD)


ROOT_ENV = "CRD_SCHEDULER_DEVCLUSTER_DIR"
FEATURE_GATES_ENV = "CRD_SCHEDULER_DEVCLUSTER_FEATURE_GATES"
RUNTIME_CONFIG_ENV = "CRD_SCHEDULER_DEVCLUSTER_RUNTIME_CONFIG"
AUDIT_LOG_ENV = "CRD_SCHEDULER_DEVCLUSTER_AUDIT_LOG"


@dataclass(frozen=True)
class Layout:
    root: Path
    bin: Path
    external_bin: bool = False  # binaries built elsewhere: use them, never build into them

    @classmethod
    def from_env(cls) -> Layout:
        root = Path(os.environ.get(ROOT_ENV) or REPO_ROOT / ".devcluster")
        bin_dir = os.environ.get("CRD_SCHEDULER_DEVCLUSTER_BIN")
        if bin_dir:
            return cls(root=root.resolve(), bin=Path(bin_dir).resolve(), external_bin=True)
        return cls(root=root.resolve(), bin=root.resolve() / "bin")

    @property
    def features(self) -> Path:
        """The feature gates and runtime config the running cluster was started with."""
        return self.run / "features.json"

    @property
    def audit_policy(self) -> Path:
        return self.run / "audit-policy.yaml"

    @property
    def build_log(self) -> Path:
        return self.root / "build.log"

    @property
    def run(self) -> Path:
        return self.root / "run"

    @property
    def pki(self) -> Path:
        return self.run / "pki"

    @property
    def logs(self) -> Path:
        return self.run / "logs"

    @property
    def pids(self) -> Path:
        return self.run / "pids"

    @property
    def state(self) -> Path:
        return self.run / "state.json"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.run / "kubeconfig"

    @property
    def operator_kubeconfig(self) -> Path:
        return self.run / "kubeconfig-operator"

    def kubeconfig_for(self, component: str) -> Path:
        return self.run / f"kubeconfig-{component.removeprefix('kube-')}"

    def binary(self, name: str) -> Path:
        return self.bin / name

    def log(self, component: str) -> Path:
        return self.logs / f"{component}.log"

    def pidfile(self, component: str) -> Path:
        return self.pids / f"{component}.pid"
