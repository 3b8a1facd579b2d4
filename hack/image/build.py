#!/usr/bin/env python3
"""Build crd-scheduler's OCI image from Debian packages: no registry, no daemon (root needed).

The steps, each with a Debian tool:

1. ``debootstrap --variant=minbase bookworm`` with Debian's Python 3.11 (``python3``,
   ``python3-venv``, ``ca-certificates``), cached in the git-ignored ``.cache/image/`` under a
   key of the suite, mirror and package list, so a rebuild skips it (about 2 minutes).
2. The wheel (``python -m build --wheel`` into ``dist/``, or ``--wheel``) and the lock's wheels
   for the image's platform (this machine's ``pip download``, hashes required, cached in
   ``.cache/image/wheels``).
3. ``rootfs.py`` in a ``chroot`` of a copy of that tree, with the image's own Python: the venv
   ``/opt/crd-scheduler`` from the lock and the wheel, and a tree with only what it needs
   (rootfs.py says what and why).
4. One layer (``tar --sort=name``, times clamped to the commit's), added with ``umoci`` to an
   OCI image layout ``dist/image/crd-scheduler-<version>-oci`` (tag ``<version>``), whose
   config carries the user, entrypoint, environment and the labels; the manifest carries the
   same keys as OCI annotations. ``--archive`` also writes the layout as an ``oci-archive`` tar.

The Dockerfile runs the same rootfs.py for users with a registry; tests/unit/test_image_recipe.py
checks that both agree on the runtime's facts. tests/e2e/test_image.py runs the built image.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

# Run as a script: its folder is on sys.path.
from rootfs import (
    CMD,
    ENTRYPOINT,
    ENV,
    EXPOSED_PORTS,
    KUBERNETES_VERSION,
    LOCK,
    PACKAGES,
    PYTHON,
    SUITE,
    USER,
    WORKDIR,
)  # fmt: skip

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

SIZE_BUDGET = 200 * 1000 * 1000  # bytes, uncompressed (docs/deploy.md)
# org.opencontainers.image.source: --source, else the git remote ``origin``; left out when neither.
SOURCE_ENV = "CRD_SCHEDULER_IMAGE_SOURCE"

DEFAULT_MIRROR = "http://deb.debian.org/debian"
CACHE = ROOT / ".cache" / "image"
OUT = ROOT / "dist" / "image"


def log(message: str) -> None:
    print(f"image: {message}", file=sys.stderr, flush=True)


def run(*argv: str | Path, stdout: int | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], check=True, text=True, stdout=stdout)


def need_tools() -> None:
    if os.geteuid() != 0:
        sys.exit("image: needs root (debootstrap, chroot and the layer's file owners)")
    missing = [tool for tool in ("debootstrap", "umoci", "unshare", "chroot", "tar") if shutil.which(tool) is None]
    if missing:
        sys.exit(f"image: missing {', '.join(missing)}: apt-get install debootstrap umoci")


# -- 1. the Debian base, cached ---------------------------------------------------------------


def base_rootfs(mirror: str) -> Path:
    key = hashlib.sha256(json.dumps([SUITE, "minbase", mirror, sorted(PACKAGES)]).encode()).hexdigest()[:12]
    target = CACHE / f"debootstrap-{SUITE}-{key}"
    if (target / "etc" / "debian_version").exists():
        log(f"debootstrap: cached {target.relative_to(ROOT)}")
        return target
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    log(f"debootstrap --variant=minbase {SUITE} from {mirror} (about 2 minutes)")
    run("debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE, partial, mirror)
    partial.rename(target)
    return target


# -- 2. the wheels; 3. the tree --------------------------------------------


def build_wheel() -> Path:
    """``python -m build --wheel`` into dist/ (the dev lock has build, setuptools and wheel)."""
    before = set((ROOT / "dist").glob("*.whl"))
    started = time.time()
    build = ("-m", "build", "--wheel", "--no-isolation", "--outdir", ROOT / "dist", ROOT)
    run(sys.executable, *build, stdout=subprocess.DEVNULL)
    wheels = [w for w in (ROOT / "dist").glob("crd_scheduler-*.whl") if w not in before or w.stat().st_mtime >= started]
    if len(wheels) != 1:
        sys.exit(f"image: expected one new wheel in dist/, found {sorted(w.name for w in wheels)}")
    return wheels[0]


def in_chroot(rootfs: Path, *argv: str) -> str:
    """Run ``argv`` inside ``rootfs``, in a mount namespace of its own (so /proc and /dev go
    away with it); returns its standard output."""
    outer = 'mount -t proc proc "$0/proc" && mount --rbind /dev "$0/dev" && exec chroot "$0" "$@"'
    environment = ("/usr/bin/env", "-i", "HOME=/root", "LANG=C.UTF-8", "PATH=/usr/sbin:/usr/bin:/sbin:/bin")
    unshare = ("unshare", "--mount", "--propagation", "private")
    return run(*unshare, "sh", "-euc", outer, rootfs, *environment, *argv, stdout=subprocess.PIPE).stdout


def download(stage: Path) -> Path:
    """The lock's wheels for the image's platform, fetched by this machine's pip (its index and
    certificates) into a cache; the image's pip installs them with no network, checking the
    hashes again and the wheel tags against its own Python."""
    arch = platform.machine()
    ldd = run("chroot", stage, "/usr/bin/ldd", "--version", stdout=subprocess.PIPE).stdout.splitlines()[0]
    glibc_minor = int(ldd.rsplit(".", 1)[-1])  # "ldd (Debian GLIBC 2.36-9+deb12u14) 2.36"
    wheels = CACHE / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    platforms = [f"manylinux_2_{minor}_{arch}" for minor in range(glibc_minor, 4, -1)]
    platforms += [f"manylinux2014_{arch}", f"manylinux2010_{arch}", f"manylinux1_{arch}", f"linux_{arch}"]
    run(
        sys.executable, "-m", "pip", "download", "--quiet", "--require-hashes", "--only-binary=:all:",
        f"--python-version={PYTHON}", "--implementation=cp", f"--abi=cp{PYTHON.replace('.', '')}",
        *(f"--platform={tag}" for tag in platforms), "--dest", wheels, "-r", ROOT / LOCK,
    )  # fmt: skip
    return wheels


def make_rootfs(stage: Path, wheel: Path) -> tuple[Path, str]:
    """rootfs.py in a chroot of ``stage``: the image's files in ``stage/tmp/image-root``."""
    wheels = download(stage)
    staging = stage / "tmp" / "image-build"
    staging.mkdir(parents=True)
    shutil.copy2(ROOT / LOCK, staging / "runtime.txt")
    shutil.copy2(wheel, staging / wheel.name)
    shutil.copy2(HERE / "rootfs.py", staging / "rootfs.py")
    shutil.copytree(wheels, staging / "wheels")
    inside = "/tmp/image-build"
    output = in_chroot(
        stage, f"/usr/bin/python{PYTHON}", f"{inside}/rootfs.py", "--lock", f"{inside}/runtime.txt",
        "--wheel", f"{inside}/{wheel.name}", "--wheels", f"{inside}/wheels", "--out", "/tmp/image-root",
    )  # fmt: skip
    return stage / "tmp" / "image-root", output.split()[-1]


# -- 4. the OCI layout ------------------------------------------------------------------------


def git(*args: str) -> str:
    return run("git", "-C", ROOT, *args, stdout=subprocess.PIPE).stdout.strip()


def revision() -> str:
    """The commit, ``-dirty`` when what goes into the image differs from it."""
    commit = git("rev-parse", "HEAD")
    changed = git("status", "--porcelain", "--", "scheduler_core", "scheduler_operator", "pyproject.toml", LOCK)
    return f"{commit}-dirty" if changed else commit


def source() -> str:
    found = subprocess.run(["git", "-C", str(ROOT), "remote", "get-url", "origin"], capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else ""


def labels_for(version: str, created: str, source: str) -> dict[str, str]:
    labels = {
        "org.opencontainers.image.title": "crd-scheduler",
        "org.opencontainers.image.description": (
            "A Kubernetes scheduler in Python: the scheduling framework as a Kopf operator"
            " with profiles as custom resources."
        ),
        "org.opencontainers.image.version": version,
        "org.opencontainers.image.revision": revision(),
        "org.opencontainers.image.created": created,
        "org.opencontainers.image.licenses": "Apache-2.0",
        "io.crd-scheduler.kubernetes-version": KUBERNETES_VERSION,
    }
    if source:
        labels["org.opencontainers.image.source"] = source
    return labels


def layer(rootfs: Path, tarball: Path, epoch: int) -> int:
    run(
        "tar", "--create", f"--file={tarball}", f"--directory={rootfs}", "--sort=name", "--numeric-owner",
        "--one-file-system", f"--mtime=@{epoch}", "--clamp-mtime", "--xattrs", "--xattrs-include=security.capability",
        ".",
    )  # fmt: skip
    return tarball.stat().st_size


def oci_layout(rootfs: Path, version: str, source: str, archive: bool) -> Path:
    epoch = int(git("log", "-1", "--format=%ct"))
    created = datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    layout = OUT / f"crd-scheduler-{version}-oci"
    shutil.rmtree(layout, ignore_errors=True)
    layout.parent.mkdir(parents=True, exist_ok=True)
    image = f"{layout}:{version}"
    tarball = CACHE / "layer.tar"
    size = layer(rootfs, tarball, epoch)
    log(f"layer: {size / 1e6:.1f} MB uncompressed (budget {SIZE_BUDGET / 1e6:.0f} MB)")
    if size > SIZE_BUDGET:
        sys.exit(f"image: the layer is {size} bytes, over the budget of {SIZE_BUDGET}")
    run("umoci", "init", "--layout", layout)
    run("umoci", "new", "--image", image)
    history = ("--history.created", created, "--history.author", "hack/image/build.py")
    made_by = ("--history.created_by", f"debootstrap {SUITE} + {LOCK}")
    run("umoci", "raw", "add-layer", *history, *made_by, "--image", image, tarball)
    tarball.unlink()
    labels = labels_for(version, created, source)
    config = [
        "--config.user", USER, "--config.workingdir", WORKDIR,
        *(arg for word in ENTRYPOINT for arg in ("--config.entrypoint", word)),
        *(arg for word in CMD for arg in ("--config.cmd", word)),
        *(arg for key, value in ENV.items() for arg in ("--config.env", f"{key}={value}")),
        *(arg for port in EXPOSED_PORTS for arg in ("--config.exposedports", port)),
        *(arg for key, value in labels.items() for arg in ("--config.label", f"{key}={value}")),
        *(arg for key, value in labels.items() for arg in ("--manifest.annotation", f"{key}={value}")),
        "--created", created, "--author", "crd-scheduler",
    ]  # fmt: skip
    run("umoci", "config", *config, *history, "--history.created_by", "hack/image/build.py: config", "--image", image)
    run("umoci", "gc", "--layout", layout)
    (layout.parent / f"crd-scheduler-{version}-size.json").write_text(json.dumps({"uncompressed_bytes": size}) + "\n")
    if archive:
        tar = layout.with_name(layout.name + ".tar")
        run("tar", "--create", f"--file={tar}", f"--directory={layout}", "--sort=name", "--numeric-owner", ".")
        log(f"oci-archive: {tar.relative_to(ROOT)} (podman load -i, skopeo copy oci-archive:...)")
    return layout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mirror", default=os.environ.get("DEBIAN_MIRROR", DEFAULT_MIRROR), help="Debian mirror")
    parser.add_argument("--wheel", type=Path, help="an already built wheel (default: python -m build --wheel)")
    parser.add_argument("--source", default=os.environ.get(SOURCE_ENV) or source(), help="source repository URL")
    parser.add_argument("--archive", action="store_true", help="also write an oci-archive tar of the layout")
    args = parser.parse_args()
    need_tools()
    started = time.monotonic()
    base = base_rootfs(args.mirror)
    wheel = args.wheel.resolve() if args.wheel else build_wheel()
    stage = CACHE / "stage"
    shutil.rmtree(stage, ignore_errors=True)
    run("cp", "-a", "--reflink=auto", base, stage)
    tree, version = make_rootfs(stage, wheel)
    if not args.source:
        log("no git remote origin and no --source: the image has no org.opencontainers.image.source")
    layout = oci_layout(tree, version, args.source, args.archive)
    shutil.rmtree(stage)
    log(f"{layout.relative_to(ROOT)} tag {version} in {time.monotonic() - started:.0f} s")
    print(layout)


if __name__ == "__main__":
    main()
