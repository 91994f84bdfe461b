"""Durable file replacement for the state store, reports and backups."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from pathlib import Path

from akira_cli.redaction import redact_bytes

RACY_NS = 20_000_000
"""A file or folder changed less than this before akira last looked at it may have changed
again since with the same size and timestamp (timestamps move in kernel ticks of a few
milliseconds): git's "racily clean" rule."""


def atomic_write(path: Path, data: bytes, *, durable: bool = True, masked: bool = False) -> None:
    """Temp file in the same folder, fsync, os.replace, then fsync of the folder; secrets masked
    (unless the caller did it: `masked`). `durable=False` skips both fsyncs: still all or
    nothing for every reader and after a kill -9, but a power cut may leave the previous version
    (for copies and reports that are rewritten anyway, and for state files, whose save log
    `state.savelog` is durable)."""
    if not masked:
        data = redact_bytes(data)
    # One writer per process and thread: a name of its own, without mkstemp's retries.
    tmp = path.parent / f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    try:
        try:
            view = memoryview(data)
            while view:  # the file object os.fdopen makes costs three syscalls more
                view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if durable:
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


FIXES = {
    errno.ENOSPC: "free some disk space",
    errno.EDQUOT: "free some disk space (the disk quota is used up)",
    errno.EROFS: "the file system is read-only; remount it writable or use another --root",
    errno.EACCES: "make it readable and writable for this user",
    errno.EPERM: "make it readable and writable for this user",
    errno.ENOTDIR: "a file stands where a folder is expected; move that file away",
    errno.EEXIST: "a file stands where a folder is expected; move that file away",
    errno.EISDIR: "a folder stands where a file is expected; move that folder away",
    errno.ENAMETOOLONG: "use a shorter path",
    errno.EFBIG: "the file is over the size limit; free space or raise the limit",
}


def describe_os_error(exc: OSError, then: str = "") -> str:
    """One line: what failed, where, and how to fix it. `then` is the command to run after."""
    where = exc.filename or "a file"
    what = exc.strerror or type(exc).__name__
    fix = FIXES.get(exc.errno or 0, "check that path")
    then = then or "run the command again (a loop's saved state is intact: 'akira loop resume' continues it)"
    return f"{where}: {what}; {fix}, then {then}"
