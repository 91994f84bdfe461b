"""Runs shell commands in their own process group, so a timeout or a forced stop kills the whole tree."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

OUTPUT_LIMIT = 64_000


@dataclass
class CommandResult:
    command: str
    exit_code: int | None
    output: str
    duration: float
    timed_out: bool = False
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.interrupted

    def describe(self) -> str:
        if self.interrupted:
            return f"`{self.command}` was interrupted by a forced stop"
        if self.timed_out:
            return f"`{self.command}` timed out after {self.duration:.0f}s"
        if self.exit_code == 127:
            return f"`{self.command}` exited 127: command not found"
        return f"`{self.command}` exited {self.exit_code}"


def tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "…" + text[-limit:]


class CommandRunner:
    """One command at a time; `kill()` from another thread ends the running one's process group."""

    def __init__(self, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.cwd = cwd
        self.env = env
        self._current: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self.killed = False

    def run(
        self,
        command: str,
        timeout: float,
        *,
        stdin: str | None = None,
        env: dict[str, str] | None = None,
    ) -> CommandResult:
        started = time.monotonic()
        merged = {**os.environ, **(self.env or {}), **(env or {})}
        process = subprocess.Popen(
            ["bash", "-c", command],
            cwd=self.cwd,
            env=merged,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        with self._lock:
            self._current = process
        # A timer kills the group on expiry: communicate(timeout=...) polls with sleeps and
        # costs about a millisecond per command, which is most of akira's overhead on fast steps.
        expired = threading.Event()
        timer = threading.Timer(timeout, self._expire, args=(process, expired))
        timer.daemon = True
        timer.start()
        try:
            out, _ = process.communicate(stdin.encode() if stdin is not None else None)
        finally:
            timer.cancel()
            with self._lock:
                self._current = None
        timed_out = expired.is_set()
        text = tail(out.decode("utf-8", "replace"), OUTPUT_LIMIT)
        interrupted = self.killed and not timed_out and process.returncode != 0
        return CommandResult(
            command, process.returncode, text, time.monotonic() - started, timed_out, interrupted
        )

    def kill(self) -> None:
        """Forced stop: kill the running command's whole process group."""
        self.killed = True
        with self._lock:
            if self._current is not None:
                self._kill_group(self._current)

    def _expire(self, process: subprocess.Popen[bytes], expired: threading.Event) -> None:
        expired.set()
        self._kill_group(process)

    @staticmethod
    def _kill_group(process: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
