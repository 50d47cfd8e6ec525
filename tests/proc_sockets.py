"""The listening TCP sockets of a set of processes, read from Linux's /proc (never from Ray), and a command
run in a process group of its own whose whole process tree is watched while it runs and stopped, pid by
pid, whatever happens."""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import struct
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

LISTEN = "0A"


def _stat(pid: int) -> tuple[str, int, int, int] | None:
    """(state, parent pid, process group, start time) of ``pid``, or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1]), int(fields[2]), int(fields[19])


def pids_in_group(pgid: int) -> list[int]:
    """Live processes of process group ``pgid``."""
    return [p for p, st in _all_stats().items() if st[2] == pgid and st[0] != "Z"]


def _all_stats() -> dict[int, tuple[str, int, int, int]]:
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st is not None:
                out[int(entry)] = st
    return out


def process_tree(root: int) -> dict[int, int]:
    """pid -> start time of ``root``, its descendants (by parent pid) and the members of its process group."""
    stats = _all_stats()
    children: dict[int, list[int]] = {}
    for pid, st in stats.items():
        children.setdefault(st[1], []).append(pid)
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid in found or pid not in stats:
            continue
        found.add(pid)
        todo.extend(children.get(pid, []))
    found.update(pid for pid, st in stats.items() if st[2] == root)
    return {pid: stats[pid][3] for pid in found if stats[pid][0] != "Z"}


def socket_inodes(pid: int) -> set[str]:
    """Inodes of the sockets ``pid`` holds open."""
    inodes = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        pass
    return inodes


def _address(hex_ip: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address as /proc/net/tcp{,6} writes it (32-bit words in host byte order)."""
    raw = bytes.fromhex(hex_ip)
    words = struct.unpack(f"<{len(raw) // 4}I", raw)
    packed = b"".join(struct.pack(">I", w) for w in words)
    return ipaddress.ip_address(socket.inet_ntop(socket.AF_INET if len(packed) == 4 else socket.AF_INET6, packed))


def listening_addresses_of(pids) -> list[str]:
    """``ip:port`` of every listening TCP socket (IPv4 and IPv6) held by one of ``pids``."""
    inodes = set().union(set(), *(socket_inodes(pid) for pid in pids))
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == LISTEN and inode in inodes:
                ip, port = local.split(":")
                found.append(f"{_address(ip)}:{int(port, 16)}")
    return found


def listening_addresses(pgid: int) -> list[str]:
    """``ip:port`` of every listening TCP socket of the processes in process group ``pgid``."""
    return listening_addresses_of(pids_in_group(pgid))


def is_loopback(address: str) -> bool:
    """Whether ``ip:port`` is on the loopback interface (an IPv4-mapped 127.x counts).

    >>> is_loopback("127.0.0.1:80"), is_loopback("::ffff:7f00:1:80"), is_loopback(":::80"), is_loopback("0.0.0.0:80")
    (True, True, False, False)
    """
    ip = ipaddress.ip_address(address.rsplit(":", 1)[0])
    return ip.is_loopback or bool(getattr(ip, "ipv4_mapped", None) and ip.ipv4_mapped.is_loopback)


@dataclass
class Watched:
    """What :func:`run_watched` saw: the exit code (None: stopped at the time limit), the output, every
    listening address of the process tree, how many processes it had at most and any left running."""

    returncode: int | None
    output: str
    addresses: set[str] = field(default_factory=set)
    most_processes: int = 0
    left: list[int] = field(default_factory=list)  # processes still running after the stop (should be none)


def same_live(pid: int, start: int) -> bool:
    """Whether ``pid`` is still the process that started at ``start`` and not a zombie."""
    st = _stat(pid)
    return st is not None and st[3] == start and st[0] != "Z"


def _stop(seen: dict[int, int]) -> None:
    """SIGTERM, then SIGKILL, every process seen that is still the same process (same start time)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = [pid for pid, start in seen.items() if same_live(pid, start)]
        for pid in alive:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline and any(same_live(pid, seen[pid]) for pid in alive):
            time.sleep(0.1)


def run_watched(cmd: list[str], env: dict[str, str], timeout_s: float, poll_s: float = 0.1) -> Watched:
    """Run ``cmd`` in a new session; every ``poll_s`` seconds until it ends (or ``timeout_s``) record the
    listening TCP sockets of its process tree; then stop every process of that tree still running, pid by
    pid (never by name), whatever happens."""
    import tempfile

    watched = Watched(None, "")
    seen: dict[int, int] = {}
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                tree = process_tree(proc.pid)
                seen.update(tree)
                watched.most_processes = max(watched.most_processes, len(tree))
                watched.addresses.update(listening_addresses_of(tree))
                if proc.poll() is not None:
                    break
                time.sleep(poll_s)
            watched.returncode = proc.poll()
        finally:
            seen.update(process_tree(proc.pid))
            _stop(seen)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - killed above
                pass
            log.seek(0)
            watched.output = log.read()
    watched.left = [pid for pid, start in seen.items() if same_live(pid, start)]
    return watched


__all__ = ["LISTEN", "Watched", "is_loopback", "listening_addresses", "listening_addresses_of", "pids_in_group",
           "process_tree", "run_watched", "socket_inodes"]
