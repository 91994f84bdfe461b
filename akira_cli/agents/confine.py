"""Confinement of the `llm` agent's file tools to one folder, with no check-then-use window.

A path is never resolved first and opened later. It is walked one component at a time from a
descriptor of the root (`nofollow.locate`, the walk akira's own reads use too), each component
opened relative to the last with `O_NOFOLLOW`, so a symlink swapped in at any moment is met as
a symlink, never followed by the kernel. Symlinks are followed by hand (like
`openat2(RESOLVE_BENEATH)`): a target outside the root, or `..` above it, is refused. Only
regular files with one link are read or written; FIFOs, devices and hard links to other files
are refused, and every open is non-blocking and every size bounded. Writes go to a temp file in
the same folder and are renamed over the name, which replaces a directory entry and never
writes through whatever was there.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath

from akira_cli import nofollow
from akira_cli.nofollow import Located

RefuseCheck = Callable[[str, os.stat_result | None], str | None]
"""Says why a write to a path (relative to the root) must be refused, or None."""

MAX_PATH = 1024
MAX_READ = 2_000_000
MAX_WRITE = 5_000_000


class ConfinementError(Exception):
    """The path is refused; the message is what the model reads."""


class Confined:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    # -- public operations ------------------------------------------------------------------

    def read(self, raw: str, limit: int = MAX_READ) -> tuple[str, bytes]:
        """(relative path, up to `limit` bytes) of a regular file."""
        place = self.locate(raw)
        try:
            fd = self._open_leaf(place, os.O_RDONLY)
            try:
                info = os.fstat(fd)
                self._regular(info, place.relative)
                data = os.read(fd, min(limit, max(info.st_size, 1)))
            finally:
                os.close(fd)
        finally:
            os.close(place.dir_fd)
        return place.relative, data

    def write(self, raw: str, data: bytes, *, refuse: RefuseCheck | None = None) -> str:
        """Replaces (or creates) a regular file with `data`; returns its relative path."""
        if len(data) > MAX_WRITE:
            raise ConfinementError(f"content is {len(data)} bytes; the limit is {MAX_WRITE}")
        place = self.locate(raw, create_dirs=True)
        try:
            if place.name is None:
                raise ConfinementError(f"'{raw}' is a folder; give a file path")
            existing = self._lstat(place) if not place.missing else None
            if existing is not None:
                if stat.S_ISDIR(existing.st_mode):
                    raise ConfinementError(f"'{place.relative}' is a folder; give a file path")
                self._regular(existing, place.relative)
            if refuse is not None and (reason := refuse(place.relative, existing)):
                raise ConfinementError(reason)
            if not place.missing:
                self._replace(place, data)
                return place.relative
            created = self.create(place)
            try:
                self._replace(created, data)
            finally:
                os.close(created.dir_fd)
            return place.relative
        finally:
            os.close(place.dir_fd)

    def listing(self, raw: str, limit: int) -> Iterator[str]:
        """Relative names under a folder, folders with a trailing '/'; symlinks not descended."""
        place = self.locate(raw, want_dir=True)
        fd = place.dir_fd
        yield from self._walk(fd, place.parts, limit, [0])

    # -- walking ----------------------------------------------------------------------------

    def locate(self, raw: str, *, create_dirs: bool = False, want_dir: bool = False) -> Located:
        """Walks `raw` from the root (`nofollow.locate`): the last component is left unopened (as
        `name`) unless `want_dir`, links are followed by hand while they stay in, and missing
        folders are created (with `create_dirs`) only once the whole path is known to stay in."""
        try:
            return nofollow.locate(self.root, self._components(raw), create=create_dirs, want_dir=want_dir)
        except nofollow.Outside:
            raise self._outside(raw) from None
        except nofollow.TooManyLinks:
            raise ConfinementError(f"'{raw}': too many levels of symbolic links") from None
        except FileNotFoundError:
            raise ConfinementError(f"'{raw}' does not exist") from None
        except IsADirectoryError:
            raise ConfinementError(f"'{raw}' is a folder; give a file path") from None
        except OSError as exc:
            raise self._os_error(raw, exc) from None

    create = staticmethod(nofollow.create)

    def _components(self, raw: str) -> list[str]:
        if "\x00" in raw:
            raise ConfinementError("the path holds a NUL byte")
        if len(raw) > MAX_PATH:
            raise ConfinementError(f"the path is {len(raw)} characters long; the limit is {MAX_PATH}")
        path = PurePosixPath(os.path.expanduser(raw) if raw.startswith("~") else raw)
        if not path.is_absolute():
            return list(path.parts)
        root = self.root.parts
        if path.parts[: len(root)] != root:
            raise self._outside(raw)
        return list(path.parts[len(root) :])

    def _open_leaf(self, place: Located, flags: int) -> int:
        if place.name is None:
            raise ConfinementError(f"'{place.relative}' is a folder, not a file")
        try:
            return os.open(
                place.name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=place.dir_fd
            )
        except OSError as exc:
            raise self._os_error(place.relative, exc) from None

    @staticmethod
    def _lstat(place: Located) -> os.stat_result | None:
        assert place.name is not None
        try:
            return os.stat(place.name, dir_fd=place.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    @staticmethod
    def _regular(info: os.stat_result, shown: str) -> None:
        if stat.S_ISDIR(info.st_mode):
            raise ConfinementError(f"'{shown}' is a folder, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise ConfinementError(f"'{shown}' is not a regular file (a FIFO, socket or device)")
        if info.st_nlink > 1:
            raise ConfinementError(f"'{shown}' is a hard link shared with another file; refused")

    @staticmethod
    def _replace(place: Located, data: bytes) -> None:
        assert place.name is not None
        nofollow.replace_at(place.dir_fd, place.name, data)

    def _walk(self, fd: int, parts: tuple[str, ...], limit: int, count: list[int]) -> Iterator[str]:
        try:
            with os.scandir(fd) as entries:
                found = sorted(entries, key=lambda entry: entry.name)
            for entry in found:
                if count[0] >= limit:
                    return
                count[0] += 1
                shown = "/".join((*parts, entry.name))
                is_dir = entry.is_dir()
                yield f"{shown}/" if is_dir else shown
                if is_dir and not entry.is_symlink() and entry.name not in SKIPPED_DIRS:
                    try:
                        child = os.open(entry.name, nofollow.DIR_FLAGS, dir_fd=fd)
                    except OSError:
                        continue
                    yield from self._walk(child, (*parts, entry.name), limit, count)
        finally:
            os.close(fd)

    def _outside(self, raw: str) -> ConfinementError:
        return ConfinementError(
            f"'{raw}' is outside the workspace ({self.root}); "
            "use a path relative to the workspace root, without '..'"
        )

    @staticmethod
    def _os_error(shown: str, exc: OSError) -> ConfinementError:
        if exc.errno == errno.ENOENT:
            return ConfinementError(f"'{shown}' does not exist; use list_files to see what exists")
        if exc.errno == errno.ENOTDIR:
            return ConfinementError(f"'{shown}': a part of the path is not a folder")
        return ConfinementError(f"'{shown}': {exc.strerror or exc}")


SKIPPED_DIRS = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", ".state", ".mypy_cache"})
"""Noise `list_files` does not descend into (they are still listed)."""
