"""One live process per task: a `filelock` lock beside the state file, and who holds it."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli.children.ledger import alive, start_time
from akira_cli.errors import AkiraError
from akira_cli.fileio import atomic_write

if TYPE_CHECKING:
    from filelock import FileLock


class TaskLock:
    """A `filelock` lock next to the state file; its holder's PID sits in a sidecar file.

    Only a process that runs the task takes the lock. Readers (`status`, `logs`, `progress`, the
    checks before a resume) look at the sidecar and ask the OS whether that process still
    lives; they never touch the lock, so they can never make a real start or resume fail.
    """

    def __init__(self, lock_path: Path) -> None:
        self.lock_path = lock_path
        self.pid_path = lock_path.with_suffix(".pid")
        self._lock: FileLock | None = None

    def acquire(self, what: str) -> None:
        from filelock import FileLock, Timeout  # only a running loop takes a lock

        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(str(self.lock_path))
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            pid = flock_owner(self.lock_path) or self.holder() or "unknown"
            raise AkiraError(
                f"{what} is already being run by process {pid}; wait for it to finish, or stop it "
                "with akira loop stop and its --task-id"
            ) from None
        pid = os.getpid()
        # Whole or not at all: a reader must never take a half-written number for a PID.
        atomic_write(self.pid_path, f"{pid} {start_time(pid)}\n".encode(), durable=False, masked=True)

    def release(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.pid_path.unlink()
        if self._lock is not None:
            self._lock.release()

    def holder(self) -> int | None:
        """The PID of the live process that holds the lock, or None."""
        try:
            fields = self.pid_path.read_text().split()
            pid = int(fields[0])
        except (OSError, ValueError, IndexError, UnicodeDecodeError):
            return None
        started = fields[1] if len(fields) > 1 else ""
        if pid <= 0 or not alive(pid) or (started and start_time(pid) not in ("", started)):
            return None  # dead, or the pid now belongs to another process
        return pid

    def is_held(self) -> bool:
        return self.holder() is not None


def flock_owner(path: Path) -> int | None:
    """The PID whose flock holds `path`, as the kernel records it (`/proc/locks`, Linux), or None.

    The sidecar file is written after the lock is won, so a process that loses a race may find
    it missing or still naming the process before; the kernel's record is the holder itself."""
    try:
        st = os.stat(path)
        with open("/proc/locks", encoding="ascii", errors="replace") as handle:
            table = handle.read()
    except OSError:
        return None
    where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in table.splitlines():
        fields = line.split()  # "1: FLOCK  ADVISORY  WRITE 4242 00:2a:1234 0 EOF"; a waiter has "->"
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == where and fields[4].isdigit():
            return int(fields[4])
    return None
