"""A lease on the task file (Linux `F_SETLEASE`): what keeps a person's save and akira's own
read or checkbox write from interleaving.

A person writes tasks.md while the loop runs: an editor or `cat >` truncates the file and
writes it in chunks, and a read between two chunks is the first part of the file only. A read
lease is granted only while no process has the file open for writing, and while akira holds
it, a process that opens the file to write (or truncates it) waits until akira lets go. A write
lease is granted only while no other process has the file open at all. So a read under a read
lease sees a whole save, and a checkbox written under a write lease lands in the bytes it was
checked against. The lease is held for one read or one checkbox, microseconds. (A pager kept
open on the file refuses akira a write lease; `writeback._patch` says what it does then.)

Where the system gives no lease (another user's file, a network file system, a filter that
forbids it), akira reads and writes without one, as it did before, and `hold` says so.
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
from pathlib import Path

BREAK_SIGNAL = signal.SIGURG
"""The signal a lease holder gets when another process wants the file: SIGIO by default, whose
default action ends the process. SIGURG's default is to ignore it, and akira sets no handler."""


class Busy(Exception):
    """Another process has the task file open (for writing; or at all, for a write lease)."""


def hold(fd: int, *, write: bool = False) -> bool:
    """Takes a lease on the file open at `fd`, released when `fd` is closed; False when this
    system gives none. Raises `Busy` when another process has the file open."""
    setlease = getattr(fcntl, "F_SETLEASE", None)
    if setlease is None:
        return False
    try:
        fcntl.fcntl(fd, fcntl.F_SETSIG, BREAK_SIGNAL)
        fcntl.fcntl(fd, setlease, fcntl.F_WRLCK if write else fcntl.F_RDLCK)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
            raise Busy from None
        return False  # EACCES (not the file's owner), EINVAL (no leases there), EPERM, ENOLCK
    return True


def written_to(path: Path) -> bool:
    """Whether another process has the file open for writing (a read lease is refused then)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except BlockingIOError:
        return True  # another process holds a lease on it
    try:
        hold(fd)
    except Busy:
        return True
    finally:
        os.close(fd)
    return False
