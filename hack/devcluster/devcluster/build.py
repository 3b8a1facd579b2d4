"""Build the control-plane binaries from the Go modules pinned in ``hack/devcluster/go.mod``.

Built once into ``.devcluster/bin`` and reused; a stamp holding the hash of go.mod, go.sum and
the build flags triggers a rebuild when any of them changes. Go's own build cache
(``go env GOCACHE``) makes a rebuild after a fresh clone a matter of linking.

``helm`` (for the chart's tests, ``charts/crd-scheduler``) comes from its own module,
``hack/helm/go.mod``, so its Kubernetes libraries never constrain the control plane's; it is
built into the same folder with a stamp of its own (``.stamp-helm``), which a control-plane
rebuild carries over. So are ``kwok`` (fake nodes that run pods, ``hack/kwok/go.mod``, with the
Stage files its module ships in ``kwok-stages/``) and upstream's e2e suite ``e2e.test``
(``go test -c k8s.io/kubernetes/test/e2e`` in ``hack/e2e/go.mod``), for ``scripts/conformance``;
both are built only on demand (``build kwok``, ``build e2e``), never by a plain ``build``.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import layout
from .errors import DevClusterError, ToolchainMissing
from .ui import locked, say, tail

# Main package of each binary; etcd's lives at the root of its server module.
PACKAGES = {
    layout.ETCD: "go.etcd.io/etcd/server/v3",
    layout.APISERVER: "k8s.io/kubernetes/cmd/kube-apiserver",
    layout.CONTROLLER_MANAGER: "k8s.io/kubernetes/cmd/kube-controller-manager",
    layout.SCHEDULER: "k8s.io/kubernetes/cmd/kube-scheduler",
}
# go build names a binary after the last path element that is not a major version suffix.
_BUILT_AS = {layout.ETCD: "server"}
_VERSION_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
STAMP = ".stamp"
MIN_GO = (1, 26)

HELM = "helm"
HELM_MODULE_DIR = layout.REPO_ROOT / "hack" / "helm"
HELM_PACKAGE = "helm.sh/helm/v4/cmd/helm"
HELM_STAMP = ".stamp-helm"


def kubernetes_version() -> str:
    text = (layout.MODULE_DIR / "go.mod").read_text()
    match = re.search(r"^\s*k8s\.io/kubernetes (v\d+\.\d+\.\d+)\b", text, re.MULTILINE)
    if not match:
        raise DevClusterError("hack/devcluster/go.mod does not require k8s.io/kubernetes")
    return match.group(1)


def _ldflags() -> str:
    # Without these the binaries report v0.0.0-master, as `go build` skips hack/lib/version.sh.
    version = kubernetes_version()
    major, minor, _ = version.removeprefix("v").split(".")
    flags = ["-s", "-w"]
    for package in _VERSION_PACKAGES:
        flags += [
            f"-X {package}.gitVersion={version}",
            f"-X {package}.gitMajor={major}",
            f"-X {package}.gitMinor={minor}",
            f"-X {package}.gitTreeState=clean",
        ]
    return " ".join(flags)


def build_command(out_dir: str) -> list[str]:
    return ["go", "build", "-trimpath", f"-ldflags={_ldflags()}", "-o", out_dir + "/", *PACKAGES.values()]


def _stamp() -> str:
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum"):
        digest.update((layout.MODULE_DIR / name).read_bytes())
    digest.update(repr(build_command("OUT")).encode())
    return digest.hexdigest()


def is_current(lay: layout.Layout) -> bool:
    stamp = lay.bin / STAMP
    if not stamp.is_file() or stamp.read_text().strip() != _stamp():
        return False
    return all(os.access(lay.binary(name), os.X_OK) for name in layout.BINARIES)


def _check_go() -> None:
    go = shutil.which("go")
    hint = f"install Go >= {MIN_GO[0]}.{MIN_GO[1]} or set CRD_SCHEDULER_TEST_KUBECONFIG to an existing cluster"
    if go is None:
        raise ToolchainMissing(f"`go` not found on PATH: {hint}")
    found = subprocess.run([go, "env", "GOVERSION"], cwd=layout.MODULE_DIR, capture_output=True, text=True, check=False)
    match = re.match(r"go(\d+)\.(\d+)", found.stdout.strip())
    if found.returncode != 0 or not match or (int(match[1]), int(match[2])) < MIN_GO:
        raise ToolchainMissing(f"unusable Go ({found.stdout.strip() or found.stderr.strip()}): {hint}")


def ensure_built(lay: layout.Layout, *, force: bool = False) -> None:
    if lay.external_bin:
        # Someone else's binaries (e.g. the shared dev cluster's): never rebuild them here.
        if not all(lay.binary(name).is_file() for name in layout.BINARIES):
            raise DevClusterError(f"CRD_SCHEDULER_DEVCLUSTER_BIN={lay.bin} lacks the binaries; build them there first")
        return
    with locked(lay.bin.with_name(lay.bin.name + ".lock")):
        if not force and is_current(lay):
            return
        _check_go()
        staging = lay.bin.with_name(lay.bin.name + ".new")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        command = build_command(str(staging))
        say(f"building {', '.join(layout.BINARIES)} ({kubernetes_version()}) into {lay.bin}")
        say(f"  the first build takes 10-15 min on 2 idle cores, a relink 1-2 min; log: {lay.build_log}")
        started = time.monotonic()
        with lay.build_log.open("w") as log:
            log.write(" ".join(command) + "\n")
            log.flush()
            result = subprocess.run(
                command,
                cwd=layout.MODULE_DIR,
                stdout=log,
                stderr=subprocess.STDOUT,
                check=False,
                env={**os.environ, "GOFLAGS": (os.environ.get("GOFLAGS", "") + " -mod=readonly").strip()},
            )
        if result.returncode != 0:
            raise DevClusterError(f"go build failed; last lines of {lay.build_log}:\n{tail(lay.build_log)}")
        for name, built in _BUILT_AS.items():
            (staging / built).rename(staging / name)
        (staging / STAMP).write_text(_stamp() + "\n")
        kept_files = (HELM, HELM_STAMP, *(name for tool in TOOLS.values() for name in tool.files))
        for kept in kept_files:  # built from their own modules: still current
            if (lay.bin / kept).exists():
                (lay.bin / kept).rename(staging / kept)
        shutil.rmtree(lay.bin, ignore_errors=True)
        staging.rename(lay.bin)
        sizes = ", ".join(f"{name} {lay.binary(name).stat().st_size / 2**20:.0f} MiB" for name in layout.BINARIES)
        say(f"built in {time.monotonic() - started:.0f} s: {sizes}")


def helm_version() -> str:
    text = (HELM_MODULE_DIR / "go.mod").read_text()
    match = re.search(r"^\s*helm\.sh/helm/v4 (v\d+\.\d+\.\d+)\b", text, re.MULTILINE)
    if not match:
        raise DevClusterError("hack/helm/go.mod does not require helm.sh/helm/v4")
    return match.group(1)


def helm_build_command(out: str) -> list[str]:
    # The version flags helm's own Makefile sets; without them `helm version` says v4.x-unreleased.
    prefix = "helm.sh/helm/v4/internal/version"
    ldflags = f"-s -w -X {prefix}.version={helm_version()} -X {prefix}.metadata= -X {prefix}.gitTreeState=clean"
    return ["go", "build", "-trimpath", f"-ldflags={ldflags}", "-o", out, HELM_PACKAGE]


def _helm_stamp() -> str:
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum"):
        digest.update((HELM_MODULE_DIR / name).read_bytes())
    digest.update(repr(helm_build_command("OUT")).encode())
    return digest.hexdigest()


def ensure_helm(lay: layout.Layout, *, force: bool = False) -> None:
    """``helm`` in the bin folder, built from hack/helm/go.mod when missing or stale."""
    binary = lay.bin / HELM
    if lay.external_bin:
        if not os.access(binary, os.X_OK):
            raise DevClusterError(f"CRD_SCHEDULER_DEVCLUSTER_BIN={lay.bin} lacks helm; build it there first")
        return
    stamp = lay.bin / HELM_STAMP
    with locked(lay.bin.with_name(lay.bin.name + ".lock")):
        if not force and os.access(binary, os.X_OK) and stamp.is_file() and stamp.read_text().strip() == _helm_stamp():
            return
        _check_go()
        lay.bin.mkdir(parents=True, exist_ok=True)
        staging = lay.bin / (HELM + ".new")
        command = helm_build_command(str(staging))
        say(f"building helm ({helm_version()}) into {lay.bin}; the first build takes a few minutes")
        started = time.monotonic()
        log_path = lay.build_log.with_name("build-helm.log")
        with log_path.open("w") as log:
            log.write(" ".join(command) + "\n")
            log.flush()
            result = subprocess.run(
                command,
                cwd=HELM_MODULE_DIR,
                stdout=log,
                stderr=subprocess.STDOUT,
                check=False,
                env={
                    **os.environ,
                    "CGO_ENABLED": "0",  # as helm's release builds
                    "GOFLAGS": (os.environ.get("GOFLAGS", "") + " -mod=readonly").strip(),
                },
            )
        if result.returncode != 0:
            raise DevClusterError(f"go build of helm failed; last lines of {log_path}:\n{tail(log_path)}")
        staging.rename(binary)
        stamp.write_text(_helm_stamp() + "\n")
        say(f"built helm in {time.monotonic() - started:.0f} s: {binary.stat().st_size / 2**20:.0f} MiB")


# -- tools built on demand from modules of their own (kwok, e2e.test) ---------------------------

KWOK_MODULE_DIR = layout.REPO_ROOT / "hack" / "kwok"
E2E_MODULE_DIR = layout.REPO_ROOT / "hack" / "e2e"
KSTATUS_MODULE_DIR = layout.REPO_ROOT / "hack" / "kstatus"
KWOK_STAGES = "kwok-stages"
# kwok exits "no stages found" without -c: these Stage files ship in its module (the "fast"
# node and pod lifecycles, a node heartbeat, Job pods completing). Not its pod-delete Stage,
# which deletes by name and at once: devcluster/reaper.py deletes kwok's deleted pods instead.
KWOK_MODULE_STAGES = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat/node-heartbeat.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-complete.yaml",
)


def _go_env(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra, "GOFLAGS": (os.environ.get("GOFLAGS", "") + " -mod=readonly").strip()}


def module_version(module_dir: Path, module: str) -> str:
    text = (module_dir / "go.mod").read_text()
    match = re.search(rf"^\s*{re.escape(module)} (v\d+\.\d+\.\d+)\b", text, re.MULTILINE)
    if not match:
        rel = module_dir.relative_to(layout.REPO_ROOT)
        raise DevClusterError(f"{rel}/go.mod does not require {module}")
    return match.group(1)


def _copy_kwok_stages(staging: Path) -> None:
    found = subprocess.run(
        ["go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kwok"],
        cwd=KWOK_MODULE_DIR,
        capture_output=True,
        text=True,
        check=False,
        env=_go_env(),
    )
    source = Path(found.stdout.strip())
    if found.returncode != 0 or not source.is_dir():
        raise DevClusterError(f"kwok's module is not in the module cache: {found.stderr.strip()}")
    folder = staging / KWOK_STAGES
    folder.mkdir()
    for stage in KWOK_MODULE_STAGES:
        shutil.copyfile(source / stage, folder / Path(stage).name)


@dataclass(frozen=True)
class Tool:
    """A binary built from a Go module of its own, with a stamp of its own (``.stamp-NAME``)."""

    name: str
    module_dir: Path
    command: Callable[[str], list[str]]  # the go command writing the binary to the given path
    minutes: str  # what a first build takes, to tell the user
    env: dict[str, str] = field(default_factory=dict)
    extras: Callable[[Path], None] | None = None  # more files beside the binary, into a staging folder
    extra_files: tuple[str, ...] = ()
    own_code: bool = False  # the module has mains of ours (kstatus): its .go files are in the stamp

    @property
    def stamp_name(self) -> str:
        return f".stamp-{self.name}"

    @property
    def files(self) -> tuple[str, ...]:
        return (self.name, self.stamp_name, *self.extra_files)

    def stamp(self) -> str:
        digest = hashlib.sha256()
        for name in ("go.mod", "go.sum"):
            digest.update((self.module_dir / name).read_bytes())
        for source in sorted(self.module_dir.rglob("*.go")) if self.own_code else ():
            digest.update(str(source.relative_to(self.module_dir)).encode() + source.read_bytes())
        digest.update(repr(self.command("OUT")).encode())
        return digest.hexdigest()


def _kwok_command(out: str) -> list[str]:
    return ["go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "sigs.k8s.io/kwok/cmd/kwok"]


def _e2e_command(out: str) -> list[str]:
    # The control plane's version flags: the suite reports (and checks) the version it was built as.
    # -vet=off: vetting upstream's suite is upstream's business, and takes minutes here.
    return [
        "go", "test", "-c", "-vet=off", "-trimpath", f"-ldflags={_ldflags()}", "-o", out, "k8s.io/kubernetes/test/e2e"
    ]  # fmt: skip


def _kstatus_command(out: str) -> list[str]:
    return ["go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "."]


def _kubectl_command(out: str) -> list[str]:
    return ["go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./kubectl"]


KWOK = "kwok"
E2E = "e2e.test"
KSTATUS = "kstatus"
KUBECTL = "kubectl"
TOOLS = {
    KWOK: Tool(
        KWOK,
        KWOK_MODULE_DIR,
        _kwok_command,
        "5-10 min",
        env={"CGO_ENABLED": "0"},  # as kwok's release builds
        extras=_copy_kwok_stages,
        extra_files=(KWOK_STAGES,),
    ),
    E2E: Tool(E2E, E2E_MODULE_DIR, _e2e_command, "8-15 min (after the control plane's)"),
    KSTATUS: Tool(KSTATUS, KSTATUS_MODULE_DIR, _kstatus_command, "1-2 min", env={"CGO_ENABLED": "0"}, own_code=True),
    KUBECTL: Tool(KUBECTL, KSTATUS_MODULE_DIR, _kubectl_command, "3-6 min", env={"CGO_ENABLED": "0"}, own_code=True),
}


def tool_is_current(lay: layout.Layout, tool: Tool) -> bool:
    stamp = lay.bin / tool.stamp_name
    return (
        os.access(lay.bin / tool.name, os.X_OK)
        and stamp.is_file()
        and stamp.read_text().strip() == tool.stamp()
        and all((lay.bin / name).exists() for name in tool.extra_files)
    )


def ensure_tool(lay: layout.Layout, name: str, *, force: bool = False) -> Path:
    """``name`` (a key of TOOLS) in the bin folder, built when missing or stale; its path."""
    tool = TOOLS[name]
    binary = lay.bin / tool.name
    if lay.external_bin:
        if not os.access(binary, os.X_OK):
            raise DevClusterError(f"CRD_SCHEDULER_DEVCLUSTER_BIN={lay.bin} lacks {tool.name}; build it there first")
        return binary
    with locked(lay.bin.with_name(lay.bin.name + ".lock")):
        if not force and tool_is_current(lay, tool):
            return binary
        _check_go()
        lay.bin.mkdir(parents=True, exist_ok=True)
        staging = lay.bin / f".{tool.name}.new"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        command = tool.command(str(staging / tool.name))
        log_path = lay.build_log.with_name(f"build-{tool.name}.log")
        say(f"building {tool.name} into {lay.bin}; the first build takes {tool.minutes}; log: {log_path}")
        started = time.monotonic()
        with log_path.open("w") as log:
            log.write(" ".join(command) + "\n")
            log.flush()
            result = subprocess.run(
                command,
                cwd=tool.module_dir,
                stdout=log,
                stderr=subprocess.STDOUT,
                check=False,
                env=_go_env(**tool.env),
            )
        if result.returncode != 0:
            raise DevClusterError(f"go build of {tool.name} failed; last lines of {log_path}:\n{tail(log_path)}")
        if tool.extras is not None:
            tool.extras(staging)
        for kept in tool.files[2:]:
            shutil.rmtree(lay.bin / kept, ignore_errors=True)
            (staging / kept).rename(lay.bin / kept)
        (staging / tool.name).rename(binary)
        (lay.bin / tool.stamp_name).write_text(tool.stamp() + "\n")
        shutil.rmtree(staging, ignore_errors=True)
        say(f"built {tool.name} in {time.monotonic() - started:.0f} s: {binary.stat().st_size / 2**20:.0f} MiB")
        return binary
