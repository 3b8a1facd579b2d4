"""``up`` / ``down`` / ``status`` of etcd + kube-apiserver + kube-controller-manager on loopback.

Choices (see README.md for the why):

* Authorization ``Node,RBAC``; admission = the apiserver defaults plus ``NodeRestriction``,
  minus ``TaintNodesByCondition`` (there is no kubelet nor node-lifecycle controller to ever
  lift the ``not-ready`` taint it puts on new Nodes, so scheduling tests could not place pods).
* kube-controller-manager runs only the controllers an API-only cluster needs: service accounts
  (pods pass ServiceAccount admission), namespace deletion, garbage collection, ClusterRole
  aggregation, the ``kube-root-ca.crt`` publisher and ``persistentvolume-binder`` (the PV
  controller: it completes the PV/PVC bindings VolumeBinding's PreBind starts; tests play the
  external provisioner), ``pvc-protection`` and ``pv-protection`` (they lift the finalizers
  admission puts on every claim and volume, without which a test namespace with a claim, and a
  deleted PV, would stay Terminating for ever) and ``resourceclaim-controller`` (it creates a pod's ResourceClaims from
  its ResourceClaimTemplates and records them in ``status.resourceClaimStatuses``; tests play the
  DRA driver). Never ``nodelifecycle``: with no kubelets
  it would taint and evict every Node. Override with ``CRD_SCHEDULER_DEVCLUSTER_CONTROLLERS``;
  ``up --controllers`` adds workload controllers (``SELECTABLE_CONTROLLERS``: ReplicaSets,
  Deployments, Jobs, ... for pods on kwok nodes) to a cluster it starts.
* The unprivileged identity is a real service account, ``crd-scheduler/crd-scheduler`` (what the
  operator runs as in a cluster), with a TokenRequest token in ``kubeconfig-operator``. It has no
  rights beyond discovery until RBAC grants them.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from . import build, layout, pki, process
from .api import Client, wait_until
from .errors import DevClusterError
from .layout import APISERVER, CONTROLLER_MANAGER, ETCD, SCHEDULER, Layout
from .ui import locked, say, tail

OPERATOR_NAMESPACE = "crd-scheduler"
OPERATOR_SERVICE_ACCOUNT = "crd-scheduler"
OPERATOR_USER = f"system:serviceaccount:{OPERATOR_NAMESPACE}:{OPERATOR_SERVICE_ACCOUNT}"
DEFAULT_CONTROLLERS = (
    "serviceaccount,serviceaccount-token,namespace,garbagecollector,clusterrole-aggregation,root-ca-cert-publisher,"
    "persistentvolume-binder,pvc-protection,pv-protection,resourceclaim-controller"
)
# What `up --controllers` may add: the workload controllers upstream's [sig-scheduling] and
# [sig-apps] specs need. Never nodelifecycle (see above).
SELECTABLE_CONTROLLERS = (
    "replicaset",
    "replicationcontroller",
    "disruption",
    "deployment",
    "job",
    "statefulset",
    "daemonset",
    "podgroup-protection-controller",  # with GenericWorkload: lifts the finalizer on deleted PodGroups
)
CONTROLLER_CLIENT_RATE = ("--kube-api-qps=5000", "--kube-api-burst=5000")
_TOKEN_SECONDS = 30 * 24 * 3600
_START_TIMEOUT = 180.0
_START_ATTEMPTS = 2
_FRONT_PROXY_CLIENT = "front-proxy-client"
_AUTO = "started-for-users"  # marker: stop when the last registered user releases
_USERS = "users"  # one pid file per registered user


@dataclass(frozen=True)
class Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int

    @classmethod
    def pick(cls) -> Ports:
        return cls(*process.free_ports(4))


@dataclass(frozen=True)
class Certs:
    ca: pki.Pair
    apiserver: pki.Pair
    admin: pki.Pair
    controller_manager: pki.Pair
    scheduler: pki.Pair
    front_proxy_ca: pki.Pair
    front_proxy_client: pki.Pair
    service_accounts: pki.Pair

    @classmethod
    def at(cls, folder: Path) -> Certs:
        def pair(name: str) -> pki.Pair:
            return pki.Pair(folder / f"{name}.crt", folder / f"{name}.key")

        return cls(
            ca=pair("ca"),
            apiserver=pair("apiserver"),
            admin=pair("admin"),
            controller_manager=pair("controller-manager"),
            scheduler=pair("scheduler"),
            front_proxy_ca=pair("front-proxy-ca"),
            front_proxy_client=pair("front-proxy-client"),
            service_accounts=pki.Pair(folder / "sa.pub", folder / "sa.key"),
        )

    @classmethod
    def create(cls, folder: Path) -> Certs:
        authority = pki.Authority(folder).create()
        authority.issue("apiserver", "/CN=kube-apiserver", server=True)
        authority.issue("admin", "/O=system:masters/CN=devcluster-admin")
        authority.issue("controller-manager", "/CN=system:kube-controller-manager")
        authority.issue("scheduler", "/CN=system:kube-scheduler")
        pki.Authority(folder, "front-proxy-ca").create().issue("front-proxy-client", f"/CN={_FRONT_PROXY_CLIENT}")
        pki.signing_key(folder)
        return cls.at(folder)


def tracked(
    lay: Layout, names: tuple[str, ...] = (layout.KWOK_REAPER, layout.KWOK, SCHEDULER, *layout.CLUSTER_COMPONENTS)
) -> list[process.Tracked]:
    found = (process.read_pidfile(name, lay.pidfile(name)) for name in names)
    return [item for item in found if item is not None]


def load_ports(lay: Layout) -> Ports | None:
    try:
        return Ports(**json.loads(lay.state.read_text())["ports"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def server_url(ports: Ports) -> str:
    return f"https://127.0.0.1:{ports.apiserver}"


def admin_client(lay: Layout, ports: Ports) -> Client:
    certs = Certs.at(lay.pki)
    return Client(server_url(ports), certs.ca, certs.admin)


def healthy(lay: Layout) -> bool:
    """All cluster processes run and the apiserver is ready."""
    ports = load_ports(lay)
    running = {item.name for item in tracked(lay) if item.alive}
    if ports is None or not set(layout.CLUSTER_COMPONENTS) <= running:
        return False
    try:
        return admin_client(lay, ports).request("GET", "/readyz")[0] == 200
    except OSError:
        return False


def parse_controllers(text: str) -> tuple[str, ...]:
    """``up --controllers a,b``: names from SELECTABLE_CONTROLLERS, anything else refused."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    for name in names:
        if name == "nodelifecycle":
            raise DevClusterError(
                "--controllers: nodelifecycle is never run: with no kubelets it would taint and evict every Node"
            )
        if name not in SELECTABLE_CONTROLLERS:
            raise DevClusterError(
                f"--controllers: unknown controller {name!r}; choose from {', '.join(SELECTABLE_CONTROLLERS)}"
            )
    return names


def up(lay: Layout, *, for_pid: int | None = None, controllers: tuple[str, ...] = ()) -> Path:
    """Start the cluster, or reuse the running one.

    ``for_pid`` registers a user (a test session): a cluster started for users is stopped by
    :func:`release` when its last live user leaves; one started by hand (no ``for_pid``) stays.
    ``controllers`` (from SELECTABLE_CONTROLLERS) run besides the default ones; a running
    cluster without them is refused, not restarted (others may be using it).
    """
    build.ensure_built(lay)
    with locked(lay.root / "cluster.lock"):
        if healthy(lay):
            say(f"reusing the running cluster ({lay.run})")
            wanted = os.environ.get(layout.FEATURE_GATES_ENV, "")
            if wanted and wanted != features(lay)["featureGates"]:
                raise DevClusterError(
                    f"the running cluster in {lay.root} has feature gates {features(lay)['featureGates']!r}, "
                    f"not {wanted!r}: use another CRD_SCHEDULER_DEVCLUSTER_DIR"
                )
            missing = [name for name in controllers if name not in running_controllers(lay)]
            if missing:
                raise DevClusterError(
                    f"the running cluster in {lay.root} does not run the controllers {', '.join(missing)}: "
                    "use another CRD_SCHEDULER_DEVCLUSTER_DIR (or `down` it, if no one else uses it)"
                )
        else:
            _fresh_start(lay, controllers)
            if for_pid is not None:
                (lay.run / _AUTO).touch()
        if for_pid is None:
            (lay.run / _AUTO).unlink(missing_ok=True)
        else:
            _register(lay, for_pid)
        return lay.admin_kubeconfig


def release(lay: Layout, pid: int) -> bool:
    """Unregister user ``pid``; stop a cluster started for users once none is left. True if stopped."""
    with locked(lay.root / "cluster.lock"):
        (lay.run / _USERS / str(pid)).unlink(missing_ok=True)
        if not (lay.run / _AUTO).exists() or _live_users(lay):
            return False
        _down(lay, keep_logs=False)
        return True


def _register(lay: Layout, pid: int) -> None:
    start_time = process.start_time(pid)
    if start_time is None:
        raise DevClusterError(f"--for-pid {pid}: no such process")
    folder = lay.run / _USERS
    folder.mkdir(exist_ok=True)
    (folder / str(pid)).write_text(f"{pid} {start_time}\n")


def _live_users(lay: Layout) -> list[int]:
    folder = lay.run / _USERS
    if not folder.is_dir():
        return []
    live = []
    for entry in folder.iterdir():
        user = process.read_pidfile("user", entry)
        if user is not None and user.alive:
            live.append(user.pid)
        else:
            entry.unlink()  # a session that died without releasing
    return live


def _fresh_start(lay: Layout, controllers: tuple[str, ...] = ()) -> None:
    if lay.run.exists():
        say("found a stopped or partial cluster; cleaning it up")
        _down(lay, keep_logs=False)
    for attempt in range(1, _START_ATTEMPTS + 1):
        try:
            _start(lay, controllers)
            return
        except (RuntimeError, TimeoutError, OSError) as error:
            logs = "\n".join(f"--- {lay.log(name)}\n{tail(lay.log(name), 15)}" for name in layout.CLUSTER_COMPONENTS)
            _down(lay, keep_logs=True)
            if attempt == _START_ATTEMPTS:
                kept = lay.root / "logs"
                raise DevClusterError(f"cluster did not come up: {error}\n{logs}\n(logs kept in {kept})") from error
            # A free port picked at start may have been taken meanwhile; new ports, new try.
            say(f"cluster did not come up ({error}); retrying")


def features(lay: Layout) -> dict[str, str]:
    """``{"featureGates": ..., "runtimeConfig": ...}`` of the running cluster (empty: none)."""
    try:
        saved = json.loads(lay.features.read_text())
    except (OSError, ValueError):
        return {"featureGates": "", "runtimeConfig": ""}
    return {"featureGates": str(saved.get("featureGates", "")), "runtimeConfig": str(saved.get("runtimeConfig", ""))}


def running_controllers(lay: Layout) -> tuple[str, ...]:
    """The controllers kube-controller-manager of the running cluster was started with."""
    try:
        saved = json.loads(lay.features.read_text()).get("controllers")
    except (OSError, ValueError):
        saved = None
    return tuple(str(saved).split(",")) if saved else tuple(DEFAULT_CONTROLLERS.split(","))


def gate_flags(lay: Layout) -> list[str]:
    gates = features(lay)["featureGates"]
    return [f"--feature-gates={gates}"] if gates else []


def _start(lay: Layout, controllers: tuple[str, ...] = ()) -> None:
    lay.run.mkdir(parents=True)
    base = os.environ.get("CRD_SCHEDULER_DEVCLUSTER_CONTROLLERS", DEFAULT_CONTROLLERS)
    lay.features.write_text(
        json.dumps(
            {
                "featureGates": os.environ.get(layout.FEATURE_GATES_ENV, ""),
                "runtimeConfig": os.environ.get(layout.RUNTIME_CONFIG_ENV, ""),
                "auditLog": os.path.abspath(audit) if (audit := os.environ.get(layout.AUDIT_LOG_ENV)) else "",
                "controllers": ",".join([base, *controllers]),
            },
            indent=2,
        )
        + "\n"
    )
    certs = Certs.create(lay.pki)
    ports = Ports.pick()
    server = server_url(ports)
    lay.state.write_text(json.dumps({"ports": asdict(ports), "server": server}, indent=2) + "\n")
    pki.write_kubeconfig(
        lay.admin_kubeconfig, server=server, ca=certs.ca.cert, user="devcluster-admin", client=certs.admin
    )
    for component, pair in ((CONTROLLER_MANAGER, certs.controller_manager), (SCHEDULER, certs.scheduler)):
        pki.write_kubeconfig(
            lay.kubeconfig_for(component), server=server, ca=certs.ca.cert, user=f"system:{component}", client=pair
        )
    started: list[process.Tracked] = []

    def launch(name: str, argv: list[str]) -> None:
        started.append(process.start(name, argv, log=lay.log(name), pidfile=lay.pidfile(name), cwd=lay.run))

    def dead() -> str | None:
        return next((item.name for item in started if not item.alive), None)

    admin = Client(server, certs.ca, certs.admin)
    say(f"starting etcd and kube-apiserver on 127.0.0.1:{ports.apiserver}")
    launch(ETCD, _etcd_args(lay, ports))
    wait_until("etcd /health", lambda: _etcd_healthy(ports), timeout=_START_TIMEOUT, alive=dead)
    launch(APISERVER, _apiserver_args(lay, ports, certs))
    wait_until(
        "kube-apiserver /readyz", lambda: admin.request("GET", "/readyz")[0] == 200, timeout=_START_TIMEOUT, alive=dead
    )
    launch(CONTROLLER_MANAGER, _controller_manager_args(lay, ports, certs))
    # Pods can be created once the ServiceAccount controller has made the `default` accounts.
    wait_until(
        "the default ServiceAccount (kube-controller-manager)",
        lambda: admin.request("GET", "/api/v1/namespaces/default/serviceaccounts/default")[0] == 200,
        timeout=_START_TIMEOUT,
        alive=dead,
    )
    _make_operator_identity(lay, admin, certs)
    say(f"cluster up: {server} (admin kubeconfig {lay.admin_kubeconfig})")


def _etcd_healthy(ports: Ports) -> bool:
    with urllib.request.urlopen(f"http://127.0.0.1:{ports.etcd_client}/health", timeout=5) as answer:
        return bool(json.loads(answer.read()).get("health") == "true")


def _etcd_args(lay: Layout, ports: Ports) -> list[str]:
    client = f"http://127.0.0.1:{ports.etcd_client}"
    peer = f"http://127.0.0.1:{ports.etcd_peer}"
    return [
        str(lay.binary(ETCD)),
        "--name=devcluster",
        f"--data-dir={lay.run / 'etcd'}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=devcluster={peer}",
        "--unsafe-no-fsync",  # throwaway test data; fsync dominates latency on CI disks
        "--log-level=warn",
    ]


def _apiserver_args(lay: Layout, ports: Ports, certs: Certs) -> list[str]:
    return [
        str(lay.binary(APISERVER)),
        f"--etcd-servers=http://127.0.0.1:{ports.etcd_client}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={ports.apiserver}",
        f"--cert-dir={lay.pki / 'apiserver-generated'}",
        f"--tls-cert-file={certs.apiserver.cert}",
        f"--tls-private-key-file={certs.apiserver.key}",
        f"--client-ca-file={certs.ca.cert}",
        f"--requestheader-client-ca-file={certs.front_proxy_ca.cert}",
        f"--requestheader-allowed-names={_FRONT_PROXY_CLIENT}",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={certs.front_proxy_client.cert}",
        f"--proxy-client-key-file={certs.front_proxy_client.key}",
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
        "--disable-admission-plugins=TaintNodesByCondition",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={certs.service_accounts.cert}",
        f"--service-account-signing-key-file={certs.service_accounts.key}",
        "--service-cluster-ip-range=10.96.0.0/16",
        # The `kubernetes` Endpoints cannot hold a loopback address; nothing in-cluster needs it.
        "--endpoint-reconciler-type=none",
        "--allow-privileged=true",
        "--profiling=false",
        *gate_flags(lay),
        *([f"--runtime-config={config}"] if (config := features(lay)["runtimeConfig"]) else []),
        *_audit_flags(lay),
    ]


# The writes a scheduling timeline needs (python -m bench.timeline), at Metadata level (no
# bodies), once each (the ResponseComplete stage: its stageTimestamp is when the answer went).
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived", "ResponseStarted", "Panic"],
    "rules": [
        {"level": "None", "verbs": ["watch", "get", "list"]},
        # A pod made from generateName is named in its answer only.
        {"level": "RequestResponse", "verbs": ["create"], "resources": [{"group": "", "resources": ["pods"]}]},
        {
            "level": "Metadata",
            "resources": [
                {"group": "", "resources": ["pods", "pods/binding", "pods/status"]},
                {"group": "resource.k8s.io"},
            ],
        },
        {"level": "None"},
    ],
}


def _audit_flags(lay: Layout) -> list[str]:
    """The audit log's flags when the cluster was started with one (``AUDIT_LOG_ENV``): written
    as each request ends (blocking mode), so its order is the API server's."""
    path = _audit_log(lay)
    if not path:
        return []
    lay.audit_policy.write_text(json.dumps(AUDIT_POLICY, indent=2) + "\n")
    return [f"--audit-policy-file={lay.audit_policy}", f"--audit-log-path={path}", "--audit-log-mode=blocking"]


def _audit_log(lay: Layout) -> str:
    try:
        return str(json.loads(lay.features.read_text()).get("auditLog") or "")
    except (OSError, ValueError):
        return ""


def _controller_manager_args(lay: Layout, ports: Ports, certs: Certs) -> list[str]:
    kubeconfig = lay.kubeconfig_for(CONTROLLER_MANAGER)
    return [
        str(lay.binary(CONTROLLER_MANAGER)),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={ports.controller_manager}",
        f"--cert-dir={lay.pki / 'controller-manager-generated'}",
        f"--controllers={','.join(running_controllers(lay))}",
        "--use-service-account-credentials=true",
        f"--service-account-private-key-file={certs.service_accounts.key}",
        f"--root-ca-file={certs.ca.cert}",
        f"--client-ca-file={certs.ca.cert}",
        "--leader-elect=false",
        "--profiling=false",
        # scheduler_perf's client rate (test/integration/scheduler_perf/util.go mustSetupCluster:
        # QPS 5000, Burst 5000), which its resourceclaim controller runs with. At the default
        # 20/30 the controller, not the scheduler, set the pace of every claim-template
        # workload (two writes per pod: the claim, the pod's resourceClaimStatuses).
        *CONTROLLER_CLIENT_RATE,
        *gate_flags(lay),
    ]


def _make_operator_identity(lay: Layout, admin: Client, certs: Certs) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OPERATOR_NAMESPACE}}
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": OPERATOR_SERVICE_ACCOUNT}}
    admin.ensure("/api/v1/namespaces", namespace)
    admin.ensure(f"/api/v1/namespaces/{OPERATOR_NAMESPACE}/serviceaccounts", account)
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": _TOKEN_SECONDS},
    }
    path = f"/api/v1/namespaces/{OPERATOR_NAMESPACE}/serviceaccounts/{OPERATOR_SERVICE_ACCOUNT}/token"
    status, answer = admin.request("POST", path, request)
    if status != 201:
        raise RuntimeError(f"TokenRequest for {OPERATOR_USER} -> {status}: {answer}")
    pki.write_kubeconfig(
        lay.operator_kubeconfig,
        server=admin.server,
        ca=certs.ca.cert,
        user=OPERATOR_USER,
        token=answer["status"]["token"],
    )


def down(lay: Layout, *, keep_logs: bool) -> None:
    with locked(lay.root / "cluster.lock"):
        _down(lay, keep_logs=keep_logs)


def _down(lay: Layout, *, keep_logs: bool) -> None:
    for item in tracked(lay):
        if item.alive:
            say(f"stopping {item.name} (pid {item.pid})")
        process.stop(item, lay.pidfile(item.name))
    if keep_logs and lay.logs.is_dir():
        kept = lay.root / "logs"
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(lay.logs, kept)
    shutil.rmtree(lay.run, ignore_errors=True)


def status(lay: Layout) -> dict[str, Any]:
    """What runs, where it listens, and whether all of it is loopback-only."""
    items = tracked(lay)
    sockets = process.listeners(items)
    ports = load_ports(lay)
    running = {item.name for item in items if item.alive}
    return {
        "running": set(layout.CLUSTER_COMPONENTS) <= running,
        "server": server_url(ports) if ports else None,
        "kubeconfig": str(lay.admin_kubeconfig) if lay.admin_kubeconfig.exists() else None,
        "operator_kubeconfig": str(lay.operator_kubeconfig) if lay.operator_kubeconfig.exists() else None,
        "operator_user": OPERATOR_USER,
        **({"features": features(lay)} if lay.features.exists() else {}),
        "processes": [{"name": i.name, "pid": i.pid, "alive": i.alive, "log": str(lay.log(i.name))} for i in items],
        "listeners": [{"process": s.process, "pid": s.pid, "address": s.address, "port": s.port} for s in sockets],
        "loopback_only": all(s.loopback for s in sockets),
        "run_dir": str(lay.run) if lay.run.exists() else None,
    }
