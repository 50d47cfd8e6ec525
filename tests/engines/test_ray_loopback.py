"""The Ray cluster the tests start listens on the loopback interface only (read from /proc, not from Ray)."""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
from pathlib import Path

import pytest

LISTEN = "0A"


def _pids_in_group(pgid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    pids.append(int(entry.name))
            except ProcessLookupError:
                continue
    return pids


def _socket_inodes(pid: int) -> set[str]:
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


def _address(hex_ip: str) -> ipaddress._BaseAddress:
    """An address as /proc/net/tcp{,6} writes it (32-bit words in host byte order)."""
    raw = bytes.fromhex(hex_ip)
    words = struct.unpack(f"<{len(raw) // 4}I", raw)
    packed = b"".join(struct.pack(">I", w) for w in words)
    return ipaddress.ip_address(socket.inet_ntop(socket.AF_INET if len(packed) == 4 else socket.AF_INET6, packed))


def listening_addresses(pgid: int) -> list[str]:
    """``ip:port`` of every listening TCP socket of the processes in process group ``pgid``."""
    inodes = set().union(*(_socket_inodes(pid) for pid in _pids_in_group(pgid)))
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == LISTEN and inode in inodes:
                ip, port = local.split(":")
                found.append(f"{_address(ip)}:{int(port, 16)}")
    return found


def _loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address.rsplit(":", 1)[0])
    return ip.is_loopback or bool(getattr(ip, "ipv4_mapped", None) and ip.ipv4_mapped.is_loopback)


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc")
def test_the_ray_cluster_listens_on_loopback_only(ray_cluster):
    addresses = listening_addresses(ray_cluster.pgid)
    assert addresses, "found no listening socket of the Ray cluster"
    assert all(_loopback(a) for a in addresses), addresses
