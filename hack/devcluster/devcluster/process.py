"""Detached processes tracked by pid files, and the TCP sockets they listen on.

A pid file holds the pid and the process start time (field 22 of ``/proc/PID/stat``), so a
recycled pid is never mistaken for ours and ``down`` stops exactly what ``up`` started.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .ui import say

_STOP_GRACE_SECONDS = 20.0


def free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 now (all held open together, so they differ)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces; it is wrapped in the last parentheses.
    return raw[raw.rindex(")") + 2 :].split()


def start_time(pid: int) -> str | None:
    fields = _stat(pid)
    return fields[19] if fields else None


def _alive(pid: int, start_time: str) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z" and fields[19] == start_time


@dataclass(frozen=True)
class Tracked:
    """A process started by us, as recorded in its pid file."""

    name: str
    pid: int
    start_time: str

    @property
    def alive(self) -> bool:
        return _alive(self.pid, self.start_time)


def read_pidfile(name: str, path: Path) -> Tracked | None:
    try:
        pid, start_time = path.read_text().split()
    except (OSError, ValueError):
        return None
    return Tracked(name, int(pid), start_time)


def start(
    name: str, argv: Sequence[str], *, log: Path, pidfile: Path, cwd: Path, env: Mapping[str, str] | None = None
) -> Tracked:
    log.parent.mkdir(parents=True, exist_ok=True)
    pidfile.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        child = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group: no terminal signals, outlives the script
        )
    started_at = start_time(child.pid)
    if started_at is None:
        raise RuntimeError(f"{name} exited at once; see {log}")
    pidfile.write_text(f"{child.pid} {started_at}\n")
    # The child is reparented to init when we exit; Popen must not reap or warn about it.
    child.returncode = 0
    return Tracked(name, child.pid, started_at)


def _reap(pid: int) -> None:
    # Our own children (started in this invocation) turn into zombies until waited for.
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def stop(tracked: Tracked, pidfile: Path) -> None:
    if tracked.alive:
        os.kill(tracked.pid, signal.SIGTERM)
        deadline = time.monotonic() + _STOP_GRACE_SECONDS
        while time.monotonic() < deadline:
            _reap(tracked.pid)
            if not tracked.alive:
                break
            time.sleep(0.1)
        else:
            say(f"{tracked.name} (pid {tracked.pid}) ignored SIGTERM; killing it")
            os.kill(tracked.pid, signal.SIGKILL)
            while tracked.alive:
                _reap(tracked.pid)
                time.sleep(0.05)
    pidfile.unlink(missing_ok=True)


@dataclass(frozen=True)
class Listener:
    process: str
    pid: int
    address: str
    port: int

    @property
    def loopback(self) -> bool:
        return ipaddress.ip_address(self.address).is_loopback


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    return inodes


def _decode(hex_address: str) -> str:
    raw = bytes.fromhex(hex_address)
    # /proc/net/tcp* stores each 32-bit word in host (little-endian) order.
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words))


def listeners(processes: Iterable[Tracked]) -> list[Listener]:
    """TCP sockets in LISTEN state owned by ``processes``, read from /proc (no ss needed)."""
    owners = {inode: p for p in processes if p.alive for inode in _socket_inodes(p.pid)}
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as rows:
            next(rows)
            for row in rows:
                fields = row.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state == "0A" and inode in owners:
                    address, port = local.split(":")
                    owner = owners[inode]
                    found.append(Listener(owner.name, owner.pid, _decode(address), int(port, 16)))
    return sorted(found, key=lambda item: (item.process, item.port))
