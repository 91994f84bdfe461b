"""No orphans (docs/guarantees.md): every command akira starts runs in its own process group, and the group
ids of the running ones are kept in `.state/autonomous_loop_<id>.pgid`. After a `kill -9` of
akira the next run of the task kills the groups still listed there before any step runs, so a
step never runs twice at once.

The file is written without fsync on purpose: a `kill -9` does not lose the page cache, and a
machine crash takes the children with it. Each line is `pgid start_time`; the start time (from
/proc, where there is one) keeps a reused pid from ever being mistaken for the old group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path

from akira_cli.fileio import name_path


def stat_fields(pid: int) -> list[bytes]:
    """The fields of /proc/<pid>/stat after the command name (state, ppid, ...), or [] when
    there is no such process or no /proc."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return []
    try:
        data = os.read(fd, 4096)
    except OSError:
        return []
    finally:
        os.close(fd)
    return data.rsplit(b")", 1)[-1].split()


def start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot, or '' where /proc has none."""
    fields = stat_fields(pid)
    return fields[19].decode() if len(fields) > 19 else ""


_BOOT_CLOCK = getattr(time, "CLOCK_BOOTTIME", None)
_TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0


def boot_tick() -> int | None:
    """Now, in /proc's unit for start times (clock ticks since boot), or None."""
    if _BOOT_CLOCK is None or _TICK_NS <= 0:
        return None
    return time.clock_gettime_ns(_BOOT_CLOCK) // _TICK_NS


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ChildLedger:
    """The process groups of the commands running now, on disk."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._groups: dict[int, str] = {}
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._size = 0
        self._before = threading.local()
        """Per thread: parallel steps spawn from several threads at once."""
        self._clock: bool | None = None
        """Whether the boot clock gives /proc's start times here (checked once against /proc)."""

    def spawning(self) -> None:
        """Called just before a spawn: the clock tick the child cannot have started before."""
        self._before.tick = boot_tick()

    def started(self, pgid: int) -> None:
        with self._lock:
            self._groups[pgid] = self._start_time(pgid)
            self._write()

    def _start_time(self, pgid: int) -> str:
        """The child's start time. When the spawn began and ended within one clock tick, that
        tick is it, without reading /proc (a read that waits while the new process still maps
        its libraries); the boot clock is trusted so only once a read agreed with it."""
        before, self._before.tick = getattr(self._before, "tick", None), None
        if before is None or self._clock is False or boot_tick() != before:
            return start_time(pgid)
        if self._clock:
            return str(before)
        read = start_time(pgid)
        self._clock = read == str(before)
        return read

    def ended(self, pgid: int) -> None:
        with self._lock:
            self._groups.pop(pgid, None)
            self._write()

    def _write(self) -> None:
        """Rewritten in place by one write, padded with spaces to the file's length: whenever a
        `kill -9` lands, the file lists every running group. It never shrinks: a truncate is a
        journaled metadata change, twice per command."""
        data = "".join(f"{pgid} {started}\n" for pgid, started in self._groups.items()).encode()
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            self._size = os.fstat(self._fd).st_size
        try:
            os.pwrite(self._fd, data.ljust(self._size), 0)
        except OSError as exc:
            name_path(exc, self.path)
            raise
        self._size = max(self._size, len(data))

    def close(self) -> None:
        """At the end of a run: nothing runs any more, so the file goes."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            if not self._groups:
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()

    def reap(self, task_id: str | None = None, workspace: Path | None = None) -> list[int]:
        """Kills the groups a dead akira left running; returns their ids.

        The sidecar lists a group once akira has written it, a moment after the spawn; a kill -9
        in that moment leaves a command it does not list. So the groups of live processes that
        carry the task's `AKIRA_TASK_ID` and the workspace's `AKIRA_WORKSPACE` (every command
        akira runs has both from its first instruction) are killed too."""
        try:
            lines = self.path.read_text().splitlines()
        except (OSError, UnicodeDecodeError):
            lines = []
        killed = []
        for line in lines:
            fields = line.split()
            if not fields or not fields[0].isdigit():
                continue
            pgid, started = int(fields[0]), fields[1] if len(fields) > 1 else ""
            if pgid <= 1 or pgid == os.getpgrp():
                continue
            now = start_time(pgid)
            if alive(pgid) and started and now and now != started:
                continue  # the pid was reused: the old group is gone (a live group keeps its id)
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
            killed.append(pgid)
        leftover = marked(task_id, workspace) if task_id and workspace else set()
        for pgid in leftover - set(killed):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
                killed.append(pgid)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        return killed


def marked(task_id: str, workspace: Path) -> set[int]:
    """Process groups of live processes whose environment holds AKIRA_TASK_ID=<task_id> and
    AKIRA_WORKSPACE=<workspace> (ids are unique within a workspace only; a parallel step's
    AKIRA_WORKSPACE is the same folder in its worktree, under the workspace's `.akira/`), other
    than this process's own group and the groups of its ancestors (the shell that started it)."""
    task = f"AKIRA_TASK_ID={task_id}".encode()
    own, slots = f"AKIRA_WORKSPACE={workspace}".encode(), f"AKIRA_WORKSPACE={workspace}/.akira/".encode()
    spared = {os.getpgrp()}
    for pid in ancestors():
        with contextlib.suppress(OSError):
            spared.add(os.getpgid(pid))
    groups: set[int] = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return groups  # no /proc: the sidecar is all there is
    for name in entries:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                env = handle.read().split(b"\0")
            if task not in env or not any(item == own or item.startswith(slots) for item in env):
                continue
            pgid = os.getpgid(int(name))
        except OSError:
            continue
        if pgid > 1 and pgid not in spared:
            groups.add(pgid)
    return groups


def ancestors() -> list[int]:
    found: list[int] = []
    pid = os.getppid()
    while pid > 1 and len(found) < 64:
        found.append(pid)
        fields = stat_fields(pid)
        if len(fields) < 2 or not fields[1].isdigit():
            break
        pid = int(fields[1])
    return found
