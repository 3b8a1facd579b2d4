"""A read-only identity and a loopback proxy that counts what it asks of the API server.

``read_only_identity`` creates a ServiceAccount bound to a ClusterRole with get/list/watch on
every resource (nothing else), and a kubeconfig for it whose server is a
:class:`CountingProxy` on 127.0.0.1: plain HTTP in, TLS (with the cluster's CA) out, so the proxy
sees every request's method and path and counts the writes (anything but GET/HEAD/OPTIONS).
"""

from __future__ import annotations

import base64
import http.client
import http.server
import ssl
import tempfile
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from kubernetes import client

from tests.e2e import eventually

READS = frozenset({"GET", "HEAD", "OPTIONS"})


class CountingProxy:
    def __init__(self, server: str, ca_file: str) -> None:
        target = urlsplit(server)
        context = ssl.create_default_context(cafile=ca_file)
        self.requests: Counter[str] = Counter()  # "METHOD path"
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                proxy.requests[f"{self.command} {self.path.split('?')[0]}"] += 1
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                host = target.hostname or "127.0.0.1"
                upstream = http.client.HTTPSConnection(host, target.port, context=context, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                data = answer.read()
                self.send_response(answer.status, answer.reason)
                for key, value in answer.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                upstream.close()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _forward

            def log_message(self, *args: Any) -> None:
                return None

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> CountingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def writes(self) -> Counter[str]:
        return Counter({k: v for k, v in self.requests.items() if k.split()[0] not in READS})

    @property
    def reads(self) -> int:
        return sum(v for k, v in self.requests.items() if k.split()[0] in READS)


def _admin(kubeconfig: Path) -> tuple[str, str]:
    """The server and a CA file of the admin kubeconfig's current context."""
    config = yaml.safe_load(kubeconfig.read_text())
    current = next(c for c in config["contexts"] if c["name"] == config["current-context"])["context"]
    cluster = next(c for c in config["clusters"] if c["name"] == current["cluster"])["cluster"]
    ca = cluster.get("certificate-authority")
    if ca is None:
        handle = tempfile.NamedTemporaryFile("wb", suffix=".crt", delete=False)  # noqa: SIM115
        handle.write(base64.b64decode(cluster["certificate-authority-data"]))
        handle.close()
        ca = handle.name
    elif not Path(ca).is_absolute():
        ca = str(kubeconfig.parent / ca)
    return cluster["server"], ca


@contextmanager
def read_only_identity(
    api: client.ApiClient, kubeconfig: Path, namespace: str, tmp: Path
) -> Iterator[tuple[Path, CountingProxy]]:
    """A kubeconfig for a get/list/watch-only ServiceAccount, through a counting proxy."""
    core: Any = client.CoreV1Api(api)
    rbac: Any = client.RbacAuthorizationV1Api(api)
    name = f"e2e-read-only-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
    rbac.create_cluster_role({
        "metadata": {"name": name},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}],
    })  # fmt: skip
    rbac.create_cluster_role_binding({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    })  # fmt: skip
    try:
        token = core.create_namespaced_service_account_token(
            name, namespace, {"spec": {"expirationSeconds": 3600}}
        ).status.token
        server, ca = _admin(kubeconfig)
        with CountingProxy(server, ca) as proxy:
            path = tmp / "kubeconfig-read-only"
            path.write_text(yaml.safe_dump({
                "apiVersion": "v1", "kind": "Config", "current-context": "ro",
                "clusters": [{"name": "ro", "cluster": {"server": proxy.url}}],
                "users": [{"name": "ro", "user": {"token": token}}],
                "contexts": [{"name": "ro", "context": {"cluster": "ro", "user": "ro"}}],
            }))  # fmt: skip
            authz: Any = client.AuthorizationV1Api(api)

            def rbac_ready() -> None:  # the RBAC cache settles asynchronously
                review = authz.create_subject_access_review({"spec": {
                    "user": f"system:serviceaccount:{namespace}:{name}",
                    "resourceAttributes": {"verb": "list", "resource": "nodes"},
                }})  # fmt: skip
                assert review.status.allowed

            eventually(rbac_ready)
            yield path, proxy
    finally:
        rbac.delete_cluster_role_binding(name)
        rbac.delete_cluster_role(name)
        core.delete_namespaced_service_account(name, namespace)
