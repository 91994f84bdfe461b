"""Reading a task file: its raw bytes, read again while an editor is saving it."""

from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import Path

from akira_cli.errors import AkiraError
from akira_cli.tasks import lease

BOM = b"\xef\xbb\xbf"


class TaskFileError(AkiraError):
    """A task file that cannot be read or parsed; the message is one line with the fix."""


SETTLE_SECONDS = 1.0
"""How long a task file that reads empty, changes while it is read, or is open for writing is
read again: an editor that saves by truncating and then writing leaves it empty for a moment."""


def read_task_bytes(path: Path) -> bytes:
    """The raw bytes of a task file, or a `TaskFileError` that says how to fix the path. The
    file is read under a read lease (`tasks.lease`), so never between two chunks of a person's
    save; one that reads empty, changes while it is read or is open for writing is read again,
    for up to `SETTLE_SECONDS`. One still open for writing then is not read at all: a part of a
    save is never taken for the file."""
    deadline = 0.0
    while True:
        data, steady = _read_once(path)
        if data is not None and steady and data.removeprefix(BOM).strip():
            return data
        now = time.monotonic()
        deadline = deadline or now + SETTLE_SECONDS
        if now >= deadline and data is not None:
            return data
        if now >= deadline:
            raise TaskFileError(
                f"{path}: another process has it open for writing; akira reads it once that "
                "process has closed it (an editor that keeps the file open: save and close it)"
            )
        time.sleep(0.02)


def _read_once(path: Path) -> tuple[bytes | None, bool]:
    """The bytes, and whether the file was the same (inode, size, time) before and after; None
    while another process has it open for writing. Opened without blocking, so a FIFO is
    refused, never waited on."""
    try:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except BlockingIOError:
            return None, False  # another process holds a lease on it (akira's own writing a box)
        try:
            before = os.fstat(fd)
            if stat.S_ISDIR(before.st_mode):
                raise IsADirectoryError(errno.EISDIR, "is a directory")
            if not stat.S_ISREG(before.st_mode):
                raise TaskFileError(f"{path}: not a regular file; pass the path of a tasks.md")
            try:
                lease.hold(fd)
            except lease.Busy:
                return None, False
            chunks = []
            while chunk := os.read(fd, max(before.st_size + 1, 65536)):
                chunks.append(chunk)
        finally:
            os.close(fd)
        after = path.stat()
    except FileNotFoundError:
        raise TaskFileError(f"{path}: task file not found; check the path or run 'akira init'") from None
    except IsADirectoryError:
        raise TaskFileError(
            f"{path}: is a directory, not a task file; pass the path of its tasks.md"
        ) from None
    except OSError as exc:
        raise TaskFileError(
            f"{path}: cannot read the task file ({exc.strerror or exc}); check its permissions"
        ) from None
    data = b"".join(chunks)
    key = (before.st_ino, before.st_size, before.st_mtime_ns)
    return data, key == (after.st_ino, after.st_size, after.st_mtime_ns) and len(data) == before.st_size
