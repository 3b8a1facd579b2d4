"""Certificates and kubeconfigs, made with the ``openssl`` CLI (ECDSA P-256: fast to generate).

As kubeadm lays it out: one CA signs the apiserver's serving certificate and the client
certificates, whose identities are the usual ones (``system:masters`` for the admin,
``system:kube-controller-manager`` and ``system:kube-scheduler`` for the components, whose
bootstrap RBAC roles give them their rights); a front-proxy CA backs request-header
authentication (the aggregation layer, and what delegated authentication in the components
reads); a separate key pair signs service-account tokens.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import DevClusterError, ToolchainMissing

CLUSTER_NAME = "crd-scheduler-dev"
SERVICE_IP = "10.96.0.1"
_DAYS = "3650"
_SERVING_NAMES = (
    "DNS:localhost",
    "DNS:kubernetes",
    "DNS:kubernetes.default",
    "DNS:kubernetes.default.svc",
    "DNS:kubernetes.default.svc.cluster.local",
    "IP:127.0.0.1",
    f"IP:{SERVICE_IP}",
)


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


def _openssl(*args: str) -> None:
    if shutil.which("openssl") is None:
        raise ToolchainMissing("`openssl` not found on PATH (needed to make the cluster's certificates)")
    result = subprocess.run(["openssl", *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise DevClusterError(f"openssl {args[0]} failed: {result.stderr.strip()}")


def _key(path: Path) -> Path:
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(path))
    path.chmod(0o600)
    return path


class Authority:
    """A CA named ``name`` in ``folder``; issues leaf certificates next to itself."""

    def __init__(self, folder: Path, name: str = "ca") -> None:
        self.folder = folder
        self.name = name
        self.ca = Pair(folder / f"{name}.crt", folder / f"{name}.key")

    def create(self) -> Authority:
        self.folder.mkdir(parents=True, exist_ok=True)
        key = str(_key(self.ca.key))
        subject = f"/CN={CLUSTER_NAME}-{self.name}"
        extensions = ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"]
        addext = [arg for extension in extensions for arg in ("-addext", extension)]
        _openssl(
            "req", "-x509", "-new", "-key", key, "-subj", subject, "-days", _DAYS, *addext, "-out", str(self.ca.cert)
        )
        return self

    def issue(self, name: str, subject: str, *, server: bool = False) -> Pair:
        pair = Pair(self.folder / f"{name}.crt", self.folder / f"{name}.key")
        csr = self.folder / f"{name}.csr"
        extensions = self.folder / f"{name}.ext"
        lines = ["basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment"]
        if server:
            lines += ["extendedKeyUsage=serverAuth", "subjectAltName=" + ",".join(_SERVING_NAMES)]
        else:
            lines += ["extendedKeyUsage=clientAuth"]
        extensions.write_text("\n".join(lines) + "\n")
        _openssl("req", "-new", "-key", str(_key(pair.key)), "-subj", subject, "-out", str(csr))
        ca = ["-CA", str(self.ca.cert), "-CAkey", str(self.ca.key), "-CAcreateserial"]
        _openssl(
            "x509", "-req", "-in", str(csr), *ca, "-days", _DAYS, "-extfile", str(extensions), "-out", str(pair.cert)
        )
        csr.unlink()
        extensions.unlink()
        return pair


def signing_key(folder: Path) -> Pair:
    """The service-account token key pair (``cert`` holds the public key)."""
    pair = Pair(folder / "sa.pub", folder / "sa.key")
    _openssl("pkey", "-in", str(_key(pair.key)), "-pubout", "-out", str(pair.cert))
    return pair


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write_kubeconfig(
    path: Path, *, server: str, ca: Path, user: str, client: Pair | None = None, token: str | None = None
) -> Path:
    """A self-contained kubeconfig (data inlined). JSON is YAML, so no YAML library is needed."""
    credentials: dict[str, str] = {}
    if client is not None:
        credentials = {"client-certificate-data": _b64(client.cert), "client-key-data": _b64(client.key)}
    if token is not None:
        credentials["token"] = token
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CLUSTER_NAME, "cluster": {"server": server, "certificate-authority-data": _b64(ca)}}],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": f"{user}@{CLUSTER_NAME}", "context": {"cluster": CLUSTER_NAME, "user": user}}],
        "current-context": f"{user}@{CLUSTER_NAME}",
        "preferences": {},
    }
    path.write_text(json.dumps(config, indent=2) + "\n")
    path.chmod(0o600)
    return path
