"""The reaper (a child never outlives akira): a small process, started with each run, that kills the run's
command groups as soon as akira dies, a `kill -9` included, with no resume needed.

akira holds the write end of a pipe that is the reaper's standard input; no command inherits it
(the pipe is close-on-exec and commands start with `close_fds`). A run that ends as it should
writes `done` before it closes the pipe, and the reaper exits. When the pipe closes without it,
akira died: the reaper takes the task's lock, so that a run started since (which kills the
leftovers itself before its first step) is never touched, kills every group the pgid sidecar
lists or whose processes carry the run's marks (`ChildLedger.reap`), and exits.
`PR_SET_PDEATHSIG` would not do: it reaches a child, never the child's own children.

    python -m akira_cli.children.reaper LOCK_FILE PGID_FILE TASK_ID WORKSPACE
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

DONE = b"done"
LOCK_WAIT_SECONDS = 5.0
"""A dead process's lock is freed as its files close, maybe a moment after the pipe."""


class Reaper:
    """akira's side: starts the reaper, and tells it at a clean end that there is nothing to do."""

    def __init__(self, lock_path: Path, children_path: Path, task_id: str, workspace: Path) -> None:
        self.args = [str(lock_path), str(children_path), task_id, str(workspace)]
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "akira_cli.children.reaper", *self.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C or a closed terminal signals akira, not the reaper
        )

    def stop(self) -> None:
        """At the end of a run, once its commands are gone: the reaper exits without killing."""
        process, self.process = self.process, None
        if process is None or process.stdin is None:
            return
        with contextlib.suppress(OSError):
            process.stdin.write(DONE)
        with contextlib.suppress(OSError):
            process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)


def main(argv: list[str]) -> int:
    lock_path, children_path, task_id, workspace = argv
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    said = b""
    while chunk := os.read(0, 64):
        said = (said + chunk)[-len(DONE) :]
    if said == DONE:
        return 0
    from filelock import FileLock, Timeout

    from akira_cli.children.ledger import ChildLedger

    lock = FileLock(lock_path)
    try:
        lock.acquire(timeout=LOCK_WAIT_SECONDS)
    except Timeout:
        return 0  # a new run holds the task: it kills what is left before its first step
    try:
        ChildLedger(Path(children_path)).reap(task_id, Path(workspace))
    finally:
        lock.release()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
