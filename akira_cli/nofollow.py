"""akira's own file work under a folder a step may have written: never through a planted link.

What a step wrote is data for akira, never a place akira is sent to. A path under a root (the
work tree, a spec folder, a worktree slot) is walked one component at a time from a descriptor
of the root, each component opened relative to the last with `O_NOFOLLOW`, so a symbolic link
is met as a link, never followed by the kernel, and swapping one in later changes nothing.

- Writes, moves and removals (`open_folder`, `write`, `move`, `remove`) refuse a link anywhere
  on the way (`Refused`, naming it); a link in the last place is replaced or removed, never
  written through.
- Reads (`locate`, `read`) follow a link by hand while it stays under the root, as
  `openat2(RESOLVE_BENEATH)` does, and refuse one that leads out (or `..` above the root).
  Only a regular file is read: opened without blocking and size-capped, so a FIFO or a device
  fails the read and never hangs akira.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePath

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
MAX_LINKS = 40


class Refused(OSError):
    """A link (or a path out of the root, or a file that is not a regular one) where akira reads
    or writes for itself: refused, never followed. The message names the path and the fix."""

    def __init__(self, path: str, message: str, code: int = errno.ELOOP) -> None:
        super().__init__(code, message, path)

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


class Outside(Refused):
    """`..` above the root, or a link whose target lies outside it."""


class TooManyLinks(Refused):
    """More than `MAX_LINKS` links on one walk (a loop)."""


def link_refused(shown: str, target: str) -> Refused:
    return Refused(
        shown,
        f"is a symbolic link (to {target}); akira never follows a link in the work tree (a step "
        "may have planted it): delete the link",
    )


@dataclass(frozen=True)
class Located:
    """An open folder under the root, and one name in it (None for the folder itself)."""

    dir_fd: int
    parts: tuple[str, ...]
    """The folder's real components below the root."""
    name: str | None
    missing: tuple[str, ...] = ()
    """Folders between `parts` and `name` that do not exist yet (see `create`)."""

    @property
    def relative(self) -> str:
        parts = (*self.parts, *self.missing, self.name) if self.name else self.parts
        return "/".join(parts) or "."


def locate(root: Path, parts: list[str], *, create: bool = False, want_dir: bool = False) -> Located:
    """Walks `parts` from `root`. The last component is left unopened (as `name`) unless
    `want_dir`; every folder on the way is opened without following a link, and a link is
    followed by hand while it stays under `root` (`Outside` otherwise). Missing folders are
    listed in `missing` (with `create`) only once the whole path is known to stay in, else they
    are a `FileNotFoundError`. The caller closes `dir_fd`.

    Kept whole on purpose, although it branches more than any other function: it is a security
    walk, and every way out of `root` (`..`, a link, absolute or relative, a folder still to be
    made) is easier to audit in one place than spread over helpers."""
    pending, shown = list(parts), "/".join(parts)
    stack: list[str] = []
    missing: list[str] = []
    fd = os.open(root, DIR_FLAGS)
    links = 0
    try:
        while pending:
            name = pending.pop(0)
            if name in ("", "."):
                continue
            if name == "..":
                if missing:
                    missing.pop()
                    continue
                if not stack:
                    through = " through a symbolic link" if links else ""
                    raise Outside(shown, f"leads out of {root}{through}; akira does not follow it")
                stack.pop()
                os.close(fd)
                fd = _reopen(root, stack)
                continue
            last = not pending and not want_dir
            if missing:  # below a folder that does not exist yet: no links to meet
                if last:
                    return Located(fd, tuple(stack), name, tuple(missing))
                missing.append(name)
                continue
            target = _link_target(fd, name)
            if target is None and last:
                return Located(fd, tuple(stack), name)
            if target is None:
                try:
                    child = os.open(name, DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise FileNotFoundError(errno.ENOENT, "does not exist", shown) from None
                    missing.append(name)
                    continue
                os.close(fd)
                fd = child
                stack.append(name)
                continue
            links += 1
            if links > MAX_LINKS:
                raise TooManyLinks(shown, "too many levels of symbolic links")
            if target.startswith("/"):
                pending = under(root, target, shown) + pending
                stack = []
                os.close(fd)
                fd = os.open(root, DIR_FLAGS)
            else:
                pending = target.split("/") + pending
        if missing and want_dir:
            raise FileNotFoundError(errno.ENOENT, "does not exist", shown)
        if missing:
            raise IsADirectoryError(errno.EISDIR, "is a folder", shown)
        return Located(fd, tuple(stack), None)
    except BaseException:
        os.close(fd)
        raise


def under(root: Path, target: str, shown: str) -> list[str]:
    """An absolute path's (or link target's) components below `root`; `Outside` elsewhere."""
    real = root.resolve().parts
    path = PurePath(target).parts
    if path[: len(real)] != real:
        raise Outside(shown, f"leads to {target}, outside {root}; akira does not follow it")
    return list(path[len(real) :])


def create(place: Located) -> Located:
    """Makes the missing folders one by one, each opened without following a link. The returned
    place has a descriptor of its own; `place`'s stays open."""
    fd, stack = os.dup(place.dir_fd), list(place.parts)
    try:
        for folder in place.missing:
            with contextlib.suppress(FileExistsError):
                os.mkdir(folder, 0o777, dir_fd=fd)
            child = os.open(folder, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
            stack.append(folder)
    except BaseException:
        os.close(fd)
        raise
    return Located(fd, tuple(stack), place.name)


def read(root: Path, relative: str | PurePath, limit: int) -> bytes:
    """At most `limit` bytes of the regular file `relative` under `root` (links followed by hand
    while they stay under it; an absolute path must lie under it too). A FIFO, socket or device
    is `Refused`, never opened to wait."""
    path = PurePath(relative)
    place = locate(root, under(root, str(path), str(path)) if path.is_absolute() else list(path.parts))
    try:
        if place.name is None:
            raise IsADirectoryError(errno.EISDIR, "is a folder", str(relative))
        return read_at(place.dir_fd, place.name, limit, place.relative)
    finally:
        os.close(place.dir_fd)


def read_at(dir_fd: int, name: str, limit: int, shown: str) -> bytes:
    """At most `limit` bytes of the regular file `name` in the open folder."""
    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    regular(info, shown)  # before the open: opening a device can do something on its own
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise link_refused(shown, _link_target(dir_fd, name) or "?") from None
        raise
    try:
        opened = os.fstat(fd)
        regular(opened, shown)
        if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            raise Refused(shown, "was replaced while akira opened it", errno.EAGAIN)
        chunks, left = [], limit
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def regular(info: os.stat_result, shown: str) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise Refused(shown, "is a symbolic link; akira reads only regular files there")
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", shown)
    if not stat.S_ISREG(info.st_mode):
        raise Refused(shown, "is not a regular file (a FIFO, socket or device); akira does not read it")


def open_folder(root: Path, parts: tuple[str, ...] | list[str], *, create: bool = False) -> int:
    """A descriptor of the folder `root/parts…`, no link followed on the way (`Refused` names
    one), missing folders made with `create`. The caller closes it."""
    fd = os.open(root, DIR_FLAGS)
    try:
        for index, name in enumerate(parts):
            if name in ("", ".", "..") or "/" in name:
                raise Refused("/".join(parts), "is not a plain path below the work tree", errno.EINVAL)
            try:
                child = os.open(name, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise FileNotFoundError(errno.ENOENT, "does not exist", "/".join(parts)) from None
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=fd)
                child = os.open(name, DIR_FLAGS, dir_fd=fd)  # a link swapped in meanwhile: refused
            except OSError as exc:
                target = _link_target(fd, name) if exc.errno in (errno.ENOTDIR, errno.ELOOP) else None
                if target is not None:
                    raise link_refused("/".join(parts[: index + 1]), target) from None
                raise OSError(exc.errno, exc.strerror, "/".join(parts[: index + 1])) from None
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


@contextlib.contextmanager
def folder(root: Path, parts: tuple[str, ...] | list[str], *, create: bool = False) -> Iterator[int]:
    fd = open_folder(root, parts, create=create)
    try:
        yield fd
    finally:
        os.close(fd)


def write(root: Path, relative: PurePath, data: bytes, *, durable: bool = True, mode: int = 0o644) -> None:
    """`data` in place of `root/relative`, all at once: its folders opened (or made) without
    following a link, a temp file beside it renamed over the name (a link there is replaced,
    never written through); with `durable`, the file and the folder synced."""
    with folder(root, relative.parent.parts, create=True) as fd:
        replace_at(fd, relative.name, data, durable=durable, mode=mode)


def replace_at(dir_fd: int, name: str, data: bytes, *, durable: bool = False, mode: int = 0o644) -> None:
    """`data` in place of `name` in the open folder: a temp file beside it, renamed over it."""

    def fill(fd: int) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]

    _replace_with(dir_fd, name, fill, durable=durable, mode=mode)


def _replace_with(
    dir_fd: int, name: str, fill: Callable[[int], None], *, durable: bool = False, mode: int = 0o644
) -> None:
    temp = f".{name[:100]}.{os.urandom(6).hex()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, mode, dir_fd=dir_fd)
    try:
        try:
            fill(fd)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    if durable:
        os.fsync(dir_fd)


def copy(source: Path, target: Path, relative: PurePath) -> None:
    """`source/relative` to `target/relative`, its folders made: a regular file's bytes, mode and
    times, a link as a link (never followed); no link followed on either way."""
    parts, name = relative.parent.parts, relative.name
    with folder(source, parts) as from_fd, folder(target, parts, create=True) as to_fd:
        info = os.stat(name, dir_fd=from_fd, follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            remove(to_fd, name)
            os.symlink(os.readlink(name, dir_fd=from_fd), name, dir_fd=to_fd)
            return
        regular(info, str(relative))
        fd = os.open(name, FILE_FLAGS, dir_fd=from_fd)
        try:
            regular(os.fstat(fd), str(relative))

            def fill(out: int) -> None:
                while os.sendfile(out, fd, None, 1 << 24):
                    pass

            _replace_with(to_fd, name, fill, mode=stat.S_IMODE(info.st_mode))
        finally:
            os.close(fd)
        os.utime(name, ns=(info.st_atime_ns, info.st_mtime_ns), dir_fd=to_fd, follow_symlinks=False)


def exists_at(dir_fd: int, name: str) -> bool:
    """Whether anything (a link included) stands at `name` in the open folder."""
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def move(root: Path, source: PurePath, target: PurePath) -> None:
    """Renames `root/source` to `root/target` (its folders made), with no link followed on
    either way; `FileExistsError` when something stands at the target already."""
    with folder(root, source.parent.parts) as source_fd, folder(root, target.parent.parts, create=True) as fd:
        if (link := _link_target(fd, target.name)) is not None:
            raise link_refused(str(target), link)
        if exists_at(fd, target.name):
            raise FileExistsError(errno.EEXIST, "exists already", str(target))
        try:
            os.rename(source.name, target.name, src_dir_fd=source_fd, dst_dir_fd=fd)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            # Another file system mounted in the tree: copied (links as links), then removed.
            shutil.move(str(root / source), str(root / target))


def remove(dir_fd: int, name: str) -> bool:
    """Removes `name` from the open folder: a folder with all it holds, anything else (a link
    included) by itself, no link followed. True when it was a link."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(name, dir_fd=dir_fd)
        return False
    os.unlink(name, dir_fd=dir_fd)
    return stat.S_ISLNK(info.st_mode)


def _reopen(root: Path, stack: list[str]) -> int:
    fd = os.open(root, DIR_FLAGS)
    for name in stack:
        try:
            child = os.open(name, DIR_FLAGS, dir_fd=fd)
        finally:
            os.close(fd)
        fd = child
    return fd


def _link_target(dir_fd: int, name: str) -> str | None:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return None
