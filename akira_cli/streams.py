"""A started command's standard streams (`runner.CommandRunner`): opened before it starts, its
output read until it exits or its deadline passes (then its process group is killed), and closed."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from akira_cli.live_output import communicate

if TYPE_CHECKING:
    from akira_cli.live_output import LiveWriter

_OPENING = threading.Lock()
_DEVNULL: list[int] = []
"""/dev/null, opened once per process for every command's stdin (subprocess opens it per spawn)."""


def _devnull() -> int:
    with _OPENING:
        if not _DEVNULL:
            _DEVNULL.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
        return _DEVNULL[0]


@dataclass
class Pipes:
    """A command's standard streams and its confinement's status pipe. Without input to feed,
    stdin is /dev/null and the output goes to a pipe of akira's own, read in one poll loop (the
    hot path): Popen's would come wrapped in a file object (three syscalls more) that only
    communicate(), which feeds input (an agent's prompt), needs."""

    feed: bytes | None
    split: bool
    out: int = -1
    out_w: int = -1
    status: int = -1
    """Where the confinement reports the command's exit (`CommandWrapper.wrap`)."""
    status_w: int = -1

    @classmethod
    def open(cls, stdin: str | None, split: bool, *, confined: bool) -> Pipes:
        pipes = cls(None if stdin is None else stdin.encode(), split)
        if confined:
            pipes.status, pipes.status_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        if stdin is None:
            pipes.out, pipes.out_w = os.pipe2(os.O_CLOEXEC)
        return pipes

    def popen(self) -> dict[str, Any]:
        """Popen's `stdin`, `stdout`, `stderr` and `pass_fds`."""
        fed, passed = self.feed is not None, (self.status_w,) if self.status_w >= 0 else ()
        out = subprocess.PIPE if fed else self.out_w
        err = subprocess.PIPE if fed and self.split else subprocess.STDOUT
        return {
            "stdin": subprocess.PIPE if fed else _devnull(),
            "stdout": out,
            "stderr": err,
            "pass_fds": passed,
        }

    def spawned(self) -> None:
        """The write ends closed: the child has its copies, and the reader sees the end with them."""
        self.out_w, self.status_w = _close(self.out_w), _close(self.status_w)

    def read(
        self, process: subprocess.Popen[bytes], timeout: float, live: LiveWriter | None
    ) -> tuple[bytes, bytes, bool]:
        """The output, the stderr (when `split` with input) and whether the command timed out."""
        if self.feed is None:
            out, timed_out = _collect(process, self.out, timeout, live)
            return out, b"", timed_out
        return communicate(process, self.feed, timeout, live, kill_group)  # agent prompts: not a hot path

    def ran(self) -> bool:
        """Whether the command ran: the confinement, if any, reported its exit."""
        if self.status < 0:
            return True
        chunks = []
        try:
            with contextlib.suppress(BlockingIOError):
                while chunk := os.read(self.status, 4096):
                    chunks.append(chunk)
        finally:
            self.status = _close(self.status)
        return b'"exit-code"' in b"".join(chunks)

    def close(self) -> None:
        self.out, self.status = _close(self.out), _close(self.status)


def _close(fd: int) -> int:
    if fd >= 0:
        os.close(fd)
    return -1


def _collect(
    process: subprocess.Popen[bytes], out_fd: int, timeout: float, live: LiveWriter | None = None
) -> tuple[bytes, bool]:
    """Reads output until the command exits or the deadline passes, in one poll loop.

    communicate(timeout=...) polls with sleeps and a timer thread costs a thread start; on a
    fast command either is most of akira's per-step overhead. A pidfd makes the exit
    pollable, so a background child that keeps the pipe open cannot hold the step.
    """
    pid_fd = os.pidfd_open(process.pid)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    timed_out = exited = False
    poller = select.poll()
    poller.register(out_fd, select.POLLIN)
    poller.register(pid_fd, select.POLLIN)
    reading = True
    while reading:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            kill_group(process)
            break
        ready = poller.poll(0 if exited else remaining * 1000)
        if not ready and exited:
            break  # nothing more is waiting in the pipe (a background child may hold it)
        for fd, _ in ready:
            if fd == pid_fd:
                exited = True
                poller.unregister(pid_fd)
            elif data := os.read(out_fd, 65536):
                chunks.append(data)
                if live is not None:
                    live.write(data)
            else:
                reading = False
    os.close(pid_fd)
    process.wait()
    return b"".join(chunks), timed_out


def kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
