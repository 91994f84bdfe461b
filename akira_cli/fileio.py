"""Durable file replacement for the state store, reports and backups, and the state file's swap."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from pathlib import Path
from typing import Any

from akira_cli import nofollow
from akira_cli.redaction import redact_bytes

RACY_NS = 20_000_000
"""A file or folder changed less than this before akira last looked at it may have changed
again since with the same size and timestamp (timestamps move in kernel ticks of a few
milliseconds): git's "racily clean" rule."""


def atomic_write(
    path: Path, data: bytes, *, durable: bool = True, masked: bool = False, root: Path | None = None
) -> None:
    """Temp file in the same folder, fsync, os.replace, then fsync of the folder; secrets masked
    (unless the caller did it: `masked`). `durable=False` skips both fsyncs: still all or
    nothing for every reader and after a kill -9, but a power cut may leave the previous version
    (for copies and reports that are rewritten anyway, and for state files, whose save log
    `state.savelog` is durable). With `root` (a folder a step may have written in, such as the
    work tree), the folders below it are opened without following a link (`nofollow.write`:
    a planted one is `nofollow.Refused`, and nothing is written)."""
    if not masked:
        data = redact_bytes(data)
    if root is not None:
        try:
            nofollow.write(root, path.relative_to(root), data, durable=durable, mode=0o600)
        except nofollow.Refused:
            raise
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        return
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
            write_all(fd, data)
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


_swap: Any = None
"""libc's renameat2 once looked up, or False where there is none (see `swap_in`)."""
AT_FDCWD, RENAME_EXCHANGE = -100, 2
CANNOT_SWAP = frozenset({errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV})


def spare_of(path: Path) -> Path:
    """Where `swap_in` writes a new file for `path`, and leaves the old one with `keep_old`."""
    return path.parent / f".{path.name}.swap"


def swap_in(path: Path, data: bytes, *, keep_old: bool = False) -> bool:
    """Puts `data` at `path` all at once, like `atomic_write(durable=False)`: every reader and a
    kill -9 see the old file or the new one whole. The new bytes go into a file of their own
    beside `path`, the two names are swapped in one step (renameat2's RENAME_EXCHANGE) and the
    old file is unlinked. A rename over a file makes ext4 start writing the new file's data
    there and then (its `auto_da_alloc`), 0.2-0.4 ms on a small VM; a swap does not, and a file
    unlinked before the disk saw it is never written at all. The price: a power cut may leave
    `path` empty or cut short, so this is only for files whose bytes are durable elsewhere (the
    state file's save log, `state.savelog`). Every file is written once and never changed, so a
    reader that opened the old one still reads it whole. Data is already masked. With
    `keep_old`, the old file stays at `spare_of(path)` for the caller to unlink when it waits
    anyway (the next swap unlinks it too). Returns False, having written nothing at `path`,
    where there is no file to swap with or the system or the file system cannot swap: the
    caller replaces instead."""
    global _swap
    swap = _renameat2()
    if swap is None:
        return False
    import ctypes

    spare = spare_of(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    try:
        try:
            fd = os.open(spare, flags, 0o600)
        except FileExistsError:  # kept, left by a kill -9, or put there: never written through
            os.unlink(spare)
            fd = os.open(spare, flags, 0o600)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        if swap(AT_FDCWD, os.fsencode(spare), AT_FDCWD, os.fsencode(path), RENAME_EXCHANGE):
            code = ctypes.get_errno()
            if code not in CANNOT_SWAP and code != errno.ENOENT:
                raise OSError(code, os.strerror(code), str(path))
            if code != errno.ENOENT:
                _swap = False  # this system or file system cannot: replace from now on
            os.unlink(spare)
            return False
        if not keep_old:
            os.unlink(spare)  # the old file
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(spare)
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    return True


def _renameat2() -> Any:
    global _swap
    if _swap is None:
        import ctypes  # only a running loop swaps

        _swap = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", False)
        if _swap:
            _swap.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    return _swap or None


def write_all(fd: int, data: bytes) -> None:
    """All of `data` to `fd` (the file object os.fdopen makes costs three syscalls more)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_all(fd: int) -> bytes:
    """Everything left in an open file."""
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


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


def name_path(exc: OSError, path: Path | str) -> None:
    """Names `path` in an error that names no file: a write or a sync on a descriptor (a full
    disk's ENOSPC) names none, and a fault line must say where it failed."""
    if exc.filename is None:
        exc.filename = str(path)


def describe_os_error(exc: OSError, then: str = "") -> str:
    """One line: what failed, where, and how to fix it. `then` is the command to run after."""
    where = exc.filename or "a file"
    what = exc.strerror or type(exc).__name__
    fix = FIXES.get(exc.errno or 0, "check that path")
    then = then or "run the command again (a loop's saved state is intact: 'akira loop resume' continues it)"
    return f"{where}: {what}; {fix}, then {then}"
