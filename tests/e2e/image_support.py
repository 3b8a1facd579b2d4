"""Helpers for tests/e2e/test_image.py (no tests here): the built OCI image, run with ``crun``.

The image is tested, not the tree it came from: ``umoci unpack`` turns the layout that
``make image`` wrote into an OCI runtime bundle, and ``crun`` (Debian's package) runs the image's
own entrypoint with the image's own Python, as the user and in the working folder the image
config names, with the root filesystem read-only and ``/tmp`` a tmpfs (as the Deployment's
emptyDir). The runtime spec umoci derives from the image is kept but for four things: no network
namespace (the dev cluster listens on loopback), no resource limits, the mounts below, and
``root.readonly``.

On a host whose ``/sys/fs/cgroup`` is a cgroup v1/v2 hybrid (this VM), crun refuses to run; it
then runs in a mount namespace of its own where ``/sys/fs/cgroup`` is the plain cgroup2
hierarchy, which changes nothing outside.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import shutil
import signal
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.operator_support import FAST_ELECTION, OperatorProcess, free_port, unique

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "dist" / "image"
KUBE_DIR = "/var/run/crd-scheduler"  # where the kubeconfig is mounted in the container
BUILT_FLAG = "CRD_SCHEDULER_IMAGE_TEST"  # set by `make image-test`: a missing image is a failure


def layout_for(version: str) -> Path:
    return IMAGES / f"crd-scheduler-{version}-oci"


def _blob(layout: Path, digest: str) -> Any:
    algorithm, value = digest.split(":")
    return json.loads((layout / "blobs" / algorithm / value).read_text())


@dataclass(frozen=True)
class Image:
    """An OCI layout's tagged image: its manifest and config, and its unpacked bundle."""

    layout: Path
    tag: str
    manifest: dict[str, Any]
    config: dict[str, Any]
    bundle: Path

    @classmethod
    def unpack(cls, layout: Path, tag: str, into: Path) -> Image:
        index = json.loads((layout / "index.json").read_text())
        descriptors = [
            d for d in index["manifests"] if d.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag
        ]
        assert len(descriptors) == 1, f"{layout}: {len(descriptors)} manifests tagged {tag}"
        manifest = _blob(layout, descriptors[0]["digest"])
        config = _blob(layout, manifest["config"]["digest"])
        bundle = into / "bundle"
        subprocess.run(["umoci", "unpack", "--image", f"{layout}:{tag}", str(bundle)], check=True, capture_output=True)
        return cls(layout, tag, manifest, config, bundle)

    def size(self) -> int:
        """Uncompressed: the sum of the layers' diff sizes, as the files are on disk."""
        return sum(path.lstat().st_size for path in (self.bundle / "rootfs").rglob("*") if not path.is_dir())

    def command(self, *args: str) -> list[str]:
        """The image's entrypoint with ``args`` in place of its CMD (as ``docker run IMAGE args``)."""
        entrypoint: list[str] = self.config["config"].get("Entrypoint") or []
        return [*entrypoint, *(args or self.config["config"].get("Cmd") or [])]

    def spec(self, argv: list[str], env: dict[str, str], mounts: dict[str, Path]) -> dict[str, Any]:
        spec: dict[str, Any] = copy.deepcopy(json.loads((self.bundle / "config.json").read_text()))
        spec["root"] = {"path": str(self.bundle / "rootfs"), "readonly": True}
        process = spec["process"]
        process["terminal"] = False
        process["args"] = argv
        process["env"] = [*process["env"], *(f"{k}={v}" for k, v in env.items())]
        spec["linux"]["namespaces"] = [n for n in spec["linux"]["namespaces"] if n["type"] != "network"]
        spec["linux"].pop("resources", None)
        spec["mounts"].append(
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=1777"]}
        )
        for destination, source in mounts.items():
            spec["mounts"].append(
                {"destination": destination, "type": "bind", "source": str(source), "options": ["rbind", "ro"]}
            )
        return spec

    def start(
        self,
        argv: list[str],
        workdir: Path,
        *,
        env: dict[str, str] | None = None,
        mounts: dict[str, Path] | None = None,
        stdout: Any = subprocess.PIPE,
    ) -> Container:
        name = f"crd-image-{uuid.uuid4().hex[:8]}"
        bundle = workdir / name
        bundle.mkdir()
        (bundle / "config.json").write_text(json.dumps(self.spec(argv, env or {}, mounts or {})))
        process = subprocess.Popen(
            _crun("run", "--bundle", str(bundle), name), stdout=stdout, stderr=subprocess.STDOUT, text=True
        )
        return Container(name, process)

    def run(self, argv: list[str], workdir: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        container = self.start(argv, workdir)
        try:
            out, _ = container.process.communicate(timeout=timeout)
        finally:
            container.stop()
        return subprocess.CompletedProcess(argv, container.process.returncode, out, "")


@dataclass(frozen=True)
class Container:
    name: str
    process: subprocess.Popen[str]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # crun passes it on to the container's process
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                subprocess.run(_crun("kill", self.name, "KILL"), capture_output=True, check=False)
                self.process.wait(10)
        subprocess.run(_crun("delete", "--force", self.name), capture_output=True, check=False)


def crun_missing() -> str | None:
    missing = [tool for tool in ("crun", "umoci", "unshare") if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} not installed (apt-get install crun umoci)"
    if os.geteuid() != 0:
        return "crun runs the image as root here (no rootless setup)"
    return None


def _crun(*args: str) -> list[str]:
    crun = ["crun", "--cgroup-manager=cgroupfs", *args]
    fs_type = subprocess.run(["stat", "-f", "-c", "%T", "/sys/fs/cgroup"], capture_output=True, text=True, check=True)
    if fs_type.stdout.strip() == "cgroup2fs":
        return crun
    remount = 'umount -l /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup && exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-euc", remount, "sh", *crun]


def self_contained_kubeconfig(path: Path, into: Path) -> Path:
    """``path`` with its certificate files inlined, so it works where those paths do not exist."""
    config = yaml.safe_load(path.read_text())
    for cluster in config.get("clusters", []):
        ca = cluster["cluster"].pop("certificate-authority", None)
        if ca:
            cluster["cluster"]["certificate-authority-data"] = base64.b64encode(Path(ca).read_bytes()).decode()
    for user in config.get("users", []):
        for key in ("client-certificate", "client-key", "tokenFile"):
            name = user["user"].pop(key, None)
            if name and key == "tokenFile":
                user["user"]["token"] = Path(name).read_text().strip()
            elif name:
                user["user"][f"{key}-data"] = base64.b64encode(Path(name).read_bytes()).decode()
    into.mkdir(parents=True, exist_ok=True)
    written = into / "config"
    written.write_text(yaml.safe_dump(config))
    written.chmod(0o644)  # the container's user 65532 reads it
    return written


class ImageOperator(OperatorProcess):
    """``crd-scheduler run`` from the image, in crun; the log, binds and stop of OperatorProcess."""

    def __init__(self, image: Image, kubeconfig: Path, home_namespace: str, log_dir: Path, *extra: str) -> None:
        self.identity = unique("image-op")
        self.port = free_port()
        self.metrics_port = free_port()
        self.url = f"http://127.0.0.1:{self.metrics_port}"
        self.log_path = log_dir / f"{self.identity}.log"
        kube = self_contained_kubeconfig(kubeconfig, log_dir / "kube")
        argv = image.command(
            "run", "--home-namespace", home_namespace, "--identity", self.identity,
            "--liveness", f"http://127.0.0.1:{self.port}/healthz", *FAST_ELECTION,
            "--bind-address", "127.0.0.1", "--port", str(self.metrics_port), *extra,
        )  # fmt: skip
        self._log = self.log_path.open("w")
        self.container = image.start(
            argv,
            log_dir,
            env={"KUBECONFIG": f"{KUBE_DIR}/{kube.name}"},
            mounts={KUBE_DIR: kube.parent},
            stdout=self._log,
        )
        self.process = self.container.process  # type: ignore[assignment]  # text mode; only poll/returncode used

    def stop(self) -> None:
        self.container.stop()
        self._log.close()
