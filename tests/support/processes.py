"""Processes as the tests see them from outside: alive or not, a task's reapers, and a kill -9
that takes the reaper too."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path


def alive(pid: int) -> bool:
    """A live process (a zombie nobody reaped yet counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def reapers(task_id: str, root: Path | None = None) -> list[int]:
    """The live reaper processes of a task (`python -m akira_cli.children.reaper ... TASK_ID ROOT`). With
    `root`, only this workspace's: a task id is a start's second, and other test runs on the
    same machine start tasks too."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        ours = root is None or str(root).encode() in argv
        if b"akira_cli.children.reaper" in argv and task_id.encode() in argv and ours and alive(int(name)):
            found.append(int(name))
    return found


def kill_with_its_reaper(
    process: subprocess.Popen[str] | subprocess.Popen[bytes], task_id: str, root: Path | None = None
) -> None:
    """A kill -9 that takes the reaper too (the OOM killer, a machine's reboot of a container):
    then only the next resume can kill the leftovers."""
    for pid in reapers(task_id, root):
        os.kill(pid, signal.SIGKILL)
    process.kill()
