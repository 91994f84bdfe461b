"""Durable file replacement for the state store, reports and backups."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path

from akira_cli.redaction import redact_bytes


def atomic_write(path: Path, data: bytes) -> None:
    """Temp file in the same folder, fsync, os.replace, then fsync of the folder; secrets masked."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = redact_bytes(data)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform can open a directory
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def read_bounded(path: Path, limit: int) -> bytes:
    """At most `limit` bytes of a regular file; a FIFO, device or folder is an OSError, never
    a hang (the open does not block and nothing but a regular file is read)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        return os.read(fd, limit)
    finally:
        os.close(fd)
