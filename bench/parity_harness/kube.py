"""The harness's own dev cluster and a raw JSON client for it.

The parity runs use a dev cluster of their own (state in ``.devcluster/parity`` by default,
binaries shared with the main one in ``.devcluster/bin``): the shared dev cluster holds other
tests' Nodes, which kube-scheduler would consider too, and other sessions may restart its one
kube-scheduler at any time. ``scripts/dev-cluster`` is driven through its command line with
``CRD_SCHEDULER_DEVCLUSTER_DIR``/``_BIN`` set; the cluster is registered for this process
(``up --for-pid``) so that it stops with its last user unless it was started by hand.

:class:`Api` talks JSON to the API server and returns what the server stored, without the
generated client's models (the stored objects are the simulator's input, verbatim).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from kubernetes import client, config

ROOT = Path(__file__).resolve().parents[2]
DEV_CLUSTER = ROOT / "scripts" / "dev-cluster"
DEFAULT_STATE = ROOT / ".devcluster" / "parity"
DEFAULT_BIN = ROOT / ".devcluster" / "bin"
EXIT_TOOLCHAIN_MISSING = 3  # scripts/dev-cluster: no Go to build the binaries with

Json = dict[str, Any]


class ClusterUnavailable(RuntimeError):
    """The dev cluster cannot run here (``toolchain_missing``: no Go to build it)."""

    def __init__(self, message: str, *, toolchain_missing: bool = False) -> None:
        super().__init__(message)
        self.toolchain_missing = toolchain_missing


class ApiError(RuntimeError):
    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {body}")
        self.status = status


def shared_binaries() -> Path:
    """The built binaries to share: ``CRD_SCHEDULER_DEVCLUSTER_BIN``, else those of the dev
    cluster in use (``CRD_SCHEDULER_DEVCLUSTER_DIR``), else this checkout's ``.devcluster/bin``."""
    explicit = os.environ.get("CRD_SCHEDULER_DEVCLUSTER_BIN")
    if explicit:
        return Path(explicit)
    shared = os.environ.get("CRD_SCHEDULER_DEVCLUSTER_DIR")
    return Path(shared) / "bin" if shared else DEFAULT_BIN


class DevCluster:
    def __init__(
        self, state: Path = DEFAULT_STATE, binaries: Path | None = None, env: dict[str, str] | None = None
    ) -> None:
        """``env``: more of ``scripts/dev-cluster``'s settings (e.g. its feature gates)."""
        self.state = state
        self.binaries = binaries if binaries is not None else shared_binaries()
        self.env = dict(env or {})

    def _run(self, *args: str) -> str:
        env = {
            **os.environ,
            "CRD_SCHEDULER_DEVCLUSTER_DIR": str(self.state),
            "CRD_SCHEDULER_DEVCLUSTER_BIN": str(self.binaries),
            **self.env,
        }
        done = subprocess.run(
            [sys.executable, str(DEV_CLUSTER), *args], capture_output=True, text=True, check=False, env=env
        )
        if done.returncode != 0:
            missing = done.returncode == EXIT_TOOLCHAIN_MISSING
            raise ClusterUnavailable(
                f"scripts/dev-cluster {' '.join(args)}: {done.stderr.strip()}", toolchain_missing=missing
            )
        lines = done.stdout.strip().splitlines()
        return lines[-1] if lines else ""

    def up(self, for_pid: int) -> Path:
        """Start or reuse the cluster with ``for_pid`` as a user; the admin kubeconfig."""
        return Path(self._run("up", "--for-pid", str(for_pid)))

    def release(self, pid: int) -> None:
        self._run("release", str(pid))

    def kube_scheduler_up(self, config_path: Path, verbosity: int) -> Path:
        """(Re)start kube-scheduler with ``config_path``; its log file."""
        return Path(self._run("kube-scheduler", "up", "--config", str(config_path), "--v", str(verbosity)))

    def kube_scheduler_down(self) -> None:
        self._run("kube-scheduler", "down")


class Api:
    """JSON in, JSON out, over the generated client's connection handling."""

    def __init__(self, kubeconfig: Path, pool_size: int = 8) -> None:
        configuration = client.Configuration()
        config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)  # type: ignore[no-untyped-call]
        configuration.connection_pool_maxsize = pool_size
        self._client = client.ApiClient(configuration)

    def close(self) -> None:
        self._client.close()  # type: ignore[no-untyped-call]

    def request(
        self,
        method: str,
        path: str,
        body: Json | None = None,
        query: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> Json:
        if query:
            path += "?" + "&".join(f"{key}={quote(value, safe='')}" for key, value in query.items())
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        params = self._client.param_serialize(
            method, path, header_params=headers, body=body, auth_settings=["BearerToken"]
        )
        response = self._client.call_api(*params)
        data: bytes = response.read()  # type: ignore[no-untyped-call]
        if response.status >= 300:
            raise ApiError(method, path, response.status, data.decode("utf-8", "replace"))
        return json.loads(data) if data else {}

    def create(self, manifest: Json) -> Json:
        """POST ``manifest`` to its collection; the stored object."""
        return self.request("POST", collection_path(manifest), manifest)

    def merge_patch(self, path: str, patch: Json) -> Json:
        """A JSON merge patch (RFC 7386) of the object at ``path``; the stored object."""
        return self.request("PATCH", path, patch, content_type="application/merge-patch+json")

    def delete_collection(self, path: str, label_selector: str) -> None:
        self.request(
            "DELETE",
            path,
            {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0},
            {"labelSelector": label_selector},
        )


_GROUPS = {
    "v1": "/api/v1",
    "scheduling.k8s.io/v1": "/apis/scheduling.k8s.io/v1",
    "storage.k8s.io/v1": "/apis/storage.k8s.io/v1",
    "resource.k8s.io/v1": "/apis/resource.k8s.io/v1",
}
_PLURALS = {
    "Node": "nodes",
    "Pod": "pods",
    "Service": "services",
    "Namespace": "namespaces",
    "PriorityClass": "priorityclasses",
    "PersistentVolume": "persistentvolumes",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "StorageClass": "storageclasses",
    "CSINode": "csinodes",
    "DeviceClass": "deviceclasses",
    "ResourceSlice": "resourceslices",
    "ResourceClaimTemplate": "resourceclaimtemplates",
    "ResourceClaim": "resourceclaims",
}


def collection_path(manifest: Json) -> str:
    base = _GROUPS[manifest["apiVersion"]]
    plural = _PLURALS[manifest["kind"]]
    namespace = (manifest.get("metadata") or {}).get("namespace")
    return f"{base}/namespaces/{namespace}/{plural}" if namespace else f"{base}/{plural}"


def object_path(manifest: Json) -> str:
    return f"{collection_path(manifest)}/{manifest['metadata']['name']}"
