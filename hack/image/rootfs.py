#!/usr/bin/env python3
"""The image's root filesystem, made inside a Debian bookworm system by its own Python.

Both image builds run this: ``hack/image/build.py`` in a ``chroot`` of a debootstrap tree, the
Dockerfile in its build stage. It

1. makes the venv ``/opt/crd-scheduler`` with Debian's ``python3 -m venv``, installs the locked
   runtime dependencies (``requirements/runtime.txt``: hashes required, wheels only), then the
   project's wheel with ``--no-deps``, and takes pip and setuptools out of the venv again;
2. drops what nothing imports at run time: ``kubernetes.aio`` (the client's asyncio twin, 68 MB,
   which neither we nor Kopf import) and the packages' own ``tests`` folders;
3. compiles every module to bytecode (unchecked-hash: valid whatever the files' times, and
   nothing is written at run time on a read-only root filesystem); the venv's third-party
   packages keep only their bytecode (``compileall -b``), which the 200 MB budget needs;
4. copies into ``--out`` only the files of the Debian packages that ``python3`` needs (the
   dependency closure, without the packaging tools its maintainer scripts use: dpkg, debconf,
   perl) and that the wheels' extension modules link to (libstdc++), the CA certificates, the
   venv, a ``/var/lib/dpkg/status`` naming exactly the packages copied (for image scanners)
   and ``/etc/passwd`` with the user 65532. There is no shell, package manager or coreutils
   in the result, as in distroless images.

Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# -- the runtime's facts, shared with build.py and the Dockerfile (tests/unit/test_image_recipe.py)
SUITE = "bookworm"
PYTHON = "3.11"  # bookworm's python3; requirements/runtime.txt is compiled for 3.11
VENV = "/opt/crd-scheduler"
LOCK = "requirements/runtime.txt"
USER = "65532:65532"
USER_NAME = "nonroot"
ENTRYPOINT = ("crd-scheduler",)
CMD = ("run",)
WORKDIR = "/tmp"
ENV = {
    "PATH": f"{VENV}/bin:/usr/local/bin:/usr/bin:/bin",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
}
EXPOSED_PORTS = ("10259/tcp",)  # the HTTPS /metrics, /healthz and /readyz (run --secure-port)
KUBERNETES_VERSION = "v1.36.3"  # the kube-scheduler release the plugins and profiles match
# Debian packages to install before this runs; the image keeps python3's closure and the
# certificates of ca-certificates.
PACKAGES = ("python3", "python3-venv", "ca-certificates", "binutils")  # binutils: strip, build stage only
KEEP = ("python3",)
DATA_ONLY = ("ca-certificates",)  # its files, not its dependencies (openssl, debconf: for update-ca-certificates)
# Dependencies that only maintainer scripts and triggers use.
NOT_AT_RUN_TIME = ("dpkg", "debconf", "perl-base", "openssl")
# Package files nothing reads at run time.
# (and libc's iconv modules, gconv/: Python's codecs are its own).
SKIP_PREFIXES = ("usr/share/doc/", "usr/share/man/", "usr/share/info/", "usr/share/locale/", "usr/share/lintian/")
# The project's own packages: shipped with their sources (the other packages as bytecode only).
OWN_PACKAGES = ("scheduler_core", "scheduler_operator")
# Dropped from the venv: imported by nothing at run time (tests/e2e/test_image.py runs the image).
UNUSED = ("kubernetes/aio",)
# Files the packages' maintainer scripts generate, and the usrmerge links.
GENERATED = ("etc/ssl/certs", "etc/ld.so.cache", "etc/os-release", "etc/debian_version", "etc/nsswitch.conf")
TOP_LINKS = ("bin", "lib", "lib64", "sbin")


def log(message: str) -> None:
    print(f"rootfs: {message}", file=sys.stderr, flush=True)


def run(*argv: str | Path) -> str:
    return subprocess.run([str(a) for a in argv], check=True, text=True, stdout=subprocess.PIPE).stdout


def make_venv(lock: Path, wheel: Path, wheels: Path | None) -> Path:
    python = Path(VENV) / "bin" / "python"
    run(f"/usr/bin/python{PYTHON}", "-m", "venv", VENV)
    pip = (python, "-m", "pip", "--no-cache-dir", "--disable-pip-version-check", "--no-input")
    source = ("--no-index", f"--find-links={wheels}") if wheels else ()
    run(*pip, "install", "--quiet", *source, "--require-hashes", "--only-binary=:all:", "-r", lock)
    run(*pip, "install", "--quiet", "--no-deps", wheel)
    run(*pip, "uninstall", "--quiet", "--yes", "pip", "setuptools")
    site = Path(VENV) / "lib" / f"python{PYTHON}" / "site-packages"
    dropped = [site / name for name in UNUSED] + sorted(site.glob("*/**/tests"))
    for path in dropped:
        if path.is_dir():
            shutil.rmtree(path)
    log(f"dropped {', '.join(str(p.relative_to(site)) for p in dropped)}")
    compile_all(python, site)
    strip_binaries(site)
    return python


def strip_binaries(site: Path) -> None:
    """The wheels' extension modules without their symbol tables (``strip --strip-unneeded``,
    from binutils, which stays in the build stage): about 16 MB of the budget; the code and the
    dynamic symbols they link by are untouched. Not the libraries auditwheel vendors into
    ``<package>.libs/``: patchelf rewrote them, and strip then leaves them unloadable (numpy's
    OpenBLAS: ldd says "not a dynamic executable")."""
    objects = sorted(
        p
        for p in site.rglob("*.so*")
        if p.is_file() and not p.is_symlink() and not any(part.endswith(".libs") for part in p.parts)
    )
    before = sum(p.stat().st_size for p in objects)
    run("strip", "--strip-unneeded", *objects)
    after = sum(p.stat().st_size for p in objects)
    log(f"stripped {len(objects)} shared objects: {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB")


def compile_all(python: Path, site: Path) -> None:
    """Bytecode for every module: beside its source for the standard library and our own
    packages (tracebacks show their lines), in place of the source for the other packages of
    the venv (sourceless, as ``compileall -b``: half their size, which the budget needs)."""
    for cache in [*Path(VENV).rglob("__pycache__"), *Path(f"/usr/lib/python{PYTHON}").rglob("__pycache__")]:
        shutil.rmtree(cache)
    compileall = (python, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash")
    third_party = [p for p in site.iterdir() if p.name not in OWN_PACKAGES and not p.name.endswith(".dist-info")]
    run(*compileall, "/usr/lib/python3", f"/usr/lib/python{PYTHON}", *(site / name for name in OWN_PACKAGES))
    run(*compileall, "-b", *third_party)
    for top in third_party:
        sources = [top] if top.is_file() else [*top.rglob("*.py"), *top.rglob("*.pyi"), *top.rglob("py.typed")]
        for source in sources:
            if source.suffix in (".py", ".pyi") or source.name == "py.typed":
                source.unlink()


def closure(roots: list[str]) -> list[str]:
    """The installed dependency closure of ``roots``, without what only maintainer scripts use."""
    fields = run("dpkg-query", "-W", "-f", "${Package}\t${Depends}, ${Pre-Depends}\n")
    depends: dict[str, list[list[str]]] = {}
    for line in fields.splitlines():
        package, relations = line.split("\t")
        alternatives = [r for r in (r.strip() for r in relations.split(",")) if r]
        depends[package] = [[re.split(r"[ :(]", o.strip())[0] for o in a.split("|")] for a in alternatives]
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        package = todo.pop()
        if package in seen or package in NOT_AT_RUN_TIME:
            continue
        seen.add(package)
        for alternatives in depends[package]:
            installed = next((o for o in alternatives if o in depends), None)
            if installed:
                todo.append(installed)
    return sorted(seen | set(DATA_ONLY))


def linked_packages(site: Path) -> list[str]:
    """The Debian packages whose libraries the venv's extension modules link to (manylinux
    wheels may expect libstdc++ and the like from the system)."""
    libraries: set[str] = set()
    for module in [*site.rglob("*.so"), *site.rglob("*.so.*")]:
        for line in run("ldd", module).splitlines():
            found = re.search(r"=> (/\S+)", line)
            if found and not found[1].startswith(VENV):
                libraries.add(found[1])
    packages = set()
    for library in sorted(libraries):
        owner = subprocess.run(["dpkg-query", "-S", library], capture_output=True, text=True, check=False)
        if owner.returncode:
            owner = subprocess.run(["dpkg-query", "-S", os.path.realpath(library)], capture_output=True, text=True)
        if owner.returncode:
            sys.exit(f"rootfs: {library}, which the venv's extension modules link to, is in no Debian package")
        packages.add(owner.stdout.split(":")[0])
    return sorted(packages)


def package_paths(packages: list[str]) -> list[str]:
    paths: set[str] = set()
    for package in packages:
        for line in run("dpkg-query", "-L", package).splitlines():
            listed = line.strip()
            if not listed or listed == "/.":
                continue
            # usrmerge: /lib/x/y is /usr/lib/x/y; name each file by its real folder.
            relative = os.path.join(os.path.realpath(os.path.dirname(listed)), os.path.basename(listed)).lstrip("/")
            if not relative.startswith(SKIP_PREFIXES) and "/gconv/" not in relative:
                paths.add(relative)
    # ``/usr/lib/python3.11/__pycache__/*.pyc``: the bytecode compileall made, no package lists it.
    for directory in (f"usr/lib/python{PYTHON}", "usr/lib/python3", VENV.lstrip("/"), *GENERATED):
        for current, dirs, files in os.walk("/" + directory):
            paths.update(os.path.join(current, name).lstrip("/") for name in [*dirs, *files])
        paths.add(directory)
    # Every parent folder, so tar creates them with their modes.
    for path in list(paths):
        parent = Path(path).parent
        while str(parent) != ".":
            paths.add(str(parent))
            parent = parent.parent
    return sorted(p for p in paths if os.path.lexists("/" + p))


def copy(paths: list[str], out: Path) -> None:
    listing = "\0".join([*TOP_LINKS, *paths]) + "\0"
    create = ["tar", "--create", "--directory=/", "--no-recursion", "--null", "--files-from=-", "--numeric-owner"]
    packer = subprocess.Popen(create, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    unpacker = subprocess.Popen(["tar", "--extract", f"--directory={out}", "--numeric-owner"], stdin=packer.stdout)
    assert packer.stdin is not None and packer.stdout is not None
    packer.stdout.close()
    packer.stdin.write(listing.encode())
    packer.stdin.close()
    if packer.wait() or unpacker.wait():
        sys.exit("rootfs: copying the package files failed")


def identity(out: Path, packages: list[str]) -> None:
    uid, gid = USER.split(":")
    etc = out / "etc"
    (etc / "passwd").write_text(
        "root:x:0:0:root:/root:/usr/sbin/nologin\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
        f"{USER_NAME}:x:{uid}:{gid}:{USER_NAME}:{WORKDIR}:/usr/sbin/nologin\n"
    )
    (etc / "group").write_text(f"root:x:0:\nnogroup:x:65534:\n{USER_NAME}:x:{gid}:\n")
    for directory, mode in (("tmp", 0o1777), ("root", 0o700), ("proc", 0o555), ("sys", 0o555), ("dev", 0o755)):
        (out / directory).mkdir(exist_ok=True)
        (out / directory).chmod(mode)
    stanzas = Path("/var/lib/dpkg/status").read_text().split("\n\n")
    kept = [s for s in stanzas if (m := re.match(r"Package: (\S+)", s.strip())) and m[1] in packages]
    (out / "var" / "lib" / "dpkg").mkdir(parents=True, exist_ok=True)
    (out / "var" / "lib" / "dpkg" / "status").write_text("\n\n".join(s.strip() for s in kept) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lock", type=Path, required=True, help=LOCK)
    parser.add_argument("--wheel", type=Path, required=True, help="the project's wheel")
    parser.add_argument("--wheels", type=Path, help="the lock's wheels, fetched already (default: from the index)")
    parser.add_argument("--out", type=Path, required=True, help="an empty folder for the image's files")
    args = parser.parse_args()
    python = make_venv(args.lock, args.wheel, args.wheels)
    site = Path(VENV) / "lib" / f"python{PYTHON}" / "site-packages"
    packages = closure([*KEEP, *linked_packages(site)])
    log(f"{len(packages)} Debian packages: {' '.join(packages)}")
    args.out.mkdir(parents=True, exist_ok=True)
    copy(package_paths(packages), args.out)
    identity(args.out, packages)
    version = run(python, "-c", "import importlib.metadata as m; print(m.version('crd-scheduler'))").strip()
    installed = run(python, "-V").split()[-1]
    if not installed.startswith(PYTHON + "."):
        sys.exit(f"rootfs: Debian gave Python {installed}; {LOCK} is compiled for {PYTHON}")
    log(f"crd-scheduler {version} on Python {installed}")
    print(version)  # for build.py


if __name__ == "__main__":
    main()
