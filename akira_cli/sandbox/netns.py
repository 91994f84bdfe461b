"""A step's network under `network: allow`, made once per work tree and kept for the run: a
private network namespace (its own loopback, no route out) where akira's proxy itself listens
on 127.0.0.1:PORT. A one-shot helper under `bwrap --unshare-user --unshare-net` binds that
socket, hands it to akira over a socket pair and exits. akira keeps the socket, and with it the
namespace; each command's `bwrap` starts through `nsenter` into that namespace, in PID, mount and
IPC namespaces of its own as before. No process stays in the namespace between commands, so
none can outlive akira: closing the socket ends it.

A parallel step's slot is a work tree of its own, so it gets its own namespace: two `[P]` steps
never share a loopback port. Where this cannot work (no `nsenter`, a kernel without the ioctls
below, a `bwrap` that will not nest), `Rooms.enter` answers None and the sandbox starts the
forwarder (`forward.py`) in front of each command instead: slower, the same confinement."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from akira_cli.sandbox.bwrap import isolation
from akira_cli.sandbox.probe import PROBE_FLAGS

SIOCGSKNS = 0x894C
"""A socket's network namespace, as a new descriptor (Linux 4.9)."""
NS_GET_USERNS = 0xB701
"""A namespace's owning user namespace, as a new descriptor (Linux 4.9)."""
SETUP_SECONDS = 30.0

HELPER = """
import socket, sys
channel = socket.socket(fileno=int(sys.argv[1]))
server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
server.bind(("127.0.0.1", int(sys.argv[2])))
server.listen(512)
socket.send_fds(channel, [b"."], [server.fileno()])
"""
"""Runs once per namespace, inside it: binds the proxy's port there and hands the socket over."""


class Listening(Protocol):
    """The proxy: serves the connections of a listening socket, until it closes."""

    def listen(self, server: socket.socket) -> None: ...


@dataclass
class Room:
    """One private network namespace: akira's listening socket in it, and the descriptors that
    name it (and its user namespace) for `nsenter`, through /proc/<akira>/fd/N."""

    server: socket.socket
    net: int
    user: int

    def prefixes(self, nsenter: str) -> list[list[str]]:
        """The ways in, the cheapest first: root may join the network namespace alone (and keep
        its own user); an ordinary user, or a root without CAP_SYS_ADMIN, joins the user
        namespace that owns it first."""
        fds = f"/proc/{os.getpid()}/fd"
        net = f"--net={fds}/{self.net}"
        joined = [nsenter, f"--user={fds}/{self.user}", net, "--preserve-credentials"]
        return [[nsenter, net], joined] if os.geteuid() == 0 else [joined]

    def close(self) -> None:
        self.server.close()
        for fd in (self.net, self.user):
            with contextlib.suppress(OSError):
                os.close(fd)


class Rooms:
    """The run's rooms, one per work tree, made on a command's first start there (any thread)."""

    def __init__(self, bwrap: str, port: int, proxy: Listening) -> None:
        self.bwrap = bwrap
        self.port = port
        self.proxy = proxy
        self.nsenter = shutil.which("nsenter")
        self._rooms: dict[Path, list[str] | None] = {}
        self._made: list[Room] = []
        self._lock = threading.Lock()
        self._closed = False

    def enter(self, tree: Path) -> list[str] | None:
        """The command line prefix that puts a command into `tree`'s room; None where rooms cannot
        work here (then a forwarder runs in front of each command)."""
        with self._lock:
            if tree not in self._rooms:
                self._rooms[tree] = None if self._closed else self._make()
            return self._rooms[tree]

    def close(self) -> None:
        """Ends the rooms; a command started after this gets none (their descriptors' numbers
        may name other files by then)."""
        with self._lock:
            self._closed = True
            self._rooms.clear()
            for room in self._made:
                room.close()
            self._made.clear()

    def _make(self) -> list[str] | None:
        if self.nsenter is None or not sys.platform.startswith("linux"):
            return None
        try:
            room = _open(self.bwrap, self.port)
        except (OSError, subprocess.SubprocessError, ValueError):
            return None
        for prefix in room.prefixes(self.nsenter):
            if _works(prefix, self.bwrap):
                self.proxy.listen(room.server)
                self._made.append(room)
                return prefix
        room.close()
        return None


def _open(bwrap: str, port: int) -> Room:
    """Runs the helper in a new user and network namespace; its listening socket, and the
    namespaces that socket belongs to."""
    mine, theirs = socket.socketpair()
    with mine, theirs:
        mine.settimeout(SETUP_SECONDS)
        helper = subprocess.Popen(
            [bwrap, "--unshare-user", "--unshare-net", "--die-with-parent", "--ro-bind", "/", "/", "--",
             sys.executable, "-I", "-S", "-c", HELPER, str(theirs.fileno()), str(port)],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        theirs.close()
        try:
            _, fds, _, _ = socket.recv_fds(mine, 1, 1)
        finally:
            _reap(helper)
    if len(fds) != 1:
        raise ValueError("the helper handed over no socket")
    server = socket.socket(fileno=fds[0])
    try:
        net = fcntl.ioctl(server.fileno(), SIOCGSKNS)
        user = fcntl.ioctl(net, NS_GET_USERNS)
    except OSError:
        server.close()
        raise
    for fd in (server.fileno(), net, user):
        os.set_inheritable(fd, False)
    return Room(server, net, user)


def _reap(helper: subprocess.Popen[bytes]) -> None:
    try:
        helper.wait(SETUP_SECONDS)
    except subprocess.TimeoutExpired:
        helper.kill()
        helper.wait()


def _works(prefix: list[str], bwrap: str) -> bool:
    """Whether a sandbox starts in the room here, with the probe's flags (its own network aside)."""
    flags = [*(flag for flag in PROBE_FLAGS if flag != "--unshare-net"), *isolation()]
    try:
        done = subprocess.run(
            [*prefix, "--", bwrap, *flags, "true"],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=SETUP_SECONDS, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0
