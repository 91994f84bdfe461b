"""Which files an attempt changed: a bounded mtime/size snapshot of the work folder, before and after.

Tool caches, virtualenvs, VCS data and akira's own state are skipped; a tree too large to
snapshot cheaply records nothing rather than slowing every iteration down.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from pathlib import Path

from akira_cli.fileio import RACY_NS

SKIPPED = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "node_modules",
        "__pycache__",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".tox",
        ".state",
        ".hooks",
    }
)
MAX_FILES = 20_000
AKIRA_AREAS = frozenset({"config", "Logs", "Done", "Needs_Action"})
"""akira's own folders at the top of a workspace: its settings and what it writes. An agent's
writes there are never evidence of work (the control plane reports them on its own)."""
Snapshot = dict[str, tuple[int, int]]


def snapshot(
    root: Path,
    skip_top: frozenset[str] = frozenset(),
    walker: Walker | None = None,
    git_view: Callable[[], bytes | None] | None = None,
) -> Snapshot | None:
    """Relative path -> (mtime_ns, size): git's view (`git_view`, the output of `git status
    --porcelain=v1 -z --untracked-files=all` in `root`) when `root` is a repository's top, else
    every file. `skip_top`: folder names skipped at the top level of the walk; `walker`: one
    that remembers the folders it listed, for a walk repeated every iteration."""
    if git_view is not None:
        listed = git_view()
        if listed is not None:
            return git_snapshot(root, listed)
    return (walker or Walker()).walk(root, skip_top)


def git_snapshot(root: Path, listed: bytes) -> Snapshot:
    """The files git sees as changed or new (ignored ones are not the work), with their stats,
    so that a file changed again during the attempt still shows."""
    found: Snapshot = {}
    entries = listed.decode("utf-8", "replace").split("\0")
    for entry in entries:
        if len(entry) < 4:
            continue  # a rename's second path, or the end
        path = entry[3:]
        if path.split("/", 1)[0] in SKIPPED:
            continue
        try:
            info = (root / path).lstat()
            found[path] = (info.st_mtime_ns, info.st_size)
        except OSError:
            found[path] = (-1, -1)
    return found


class Walker:
    """Walks a tree again and again, listing only the folders that changed.

    A folder's modification time moves when an entry is added, removed or renamed, not when a
    file in it is edited: files are always looked at, but a folder whose time has not moved
    since a listing taken well after that time (RACY_NS: timestamps move in ticks) holds the
    same entries, and is not listed again."""

    def __init__(self) -> None:
        self._folders: dict[str, tuple[int, int, int, list[str], list[str]]] = {}
        """folder -> (inode, mtime_ns, when it was listed, its files, its folders)"""

    def walk(self, root: Path, skip_top: frozenset[str] = frozenset()) -> Snapshot | None:
        """Relative path -> (mtime_ns, size) for every file, or None past MAX_FILES."""
        found: Snapshot = {}
        top = str(root)
        prefix = len(top) + 1
        folders, kept = [top], {}
        while folders:
            folder = folders.pop()
            listed = self._listing(folder, skip_top if folder is top else frozenset(), folder is top)
            if listed is None:
                continue  # gone since its parent was listed
            kept[folder] = listed
            for name in listed[3]:
                path = f"{folder}/{name}"
                try:
                    info = os.lstat(path)
                except FileNotFoundError:
                    continue
                if stat.S_ISREG(info.st_mode):
                    found[path[prefix:]] = (info.st_mtime_ns, info.st_size)
                    if len(found) > MAX_FILES:
                        return None
            folders += [f"{folder}/{name}" for name in listed[4]]
        self._folders = kept
        return found

    def _listing(
        self, folder: str, skip: frozenset[str], top: bool
    ) -> tuple[int, int, int, list[str], list[str]] | None:
        try:
            info = os.stat(folder) if top else os.lstat(folder)
        except FileNotFoundError:
            if top:
                raise
            return None
        known = self._folders.get(folder)
        unmoved = known is not None and known[:2] == (info.st_ino, info.st_mtime_ns)
        if known is not None and unmoved and known[2] - info.st_mtime_ns > RACY_NS:
            return known  # listed well after its last change, and unchanged since
        listed_at = time.time_ns()
        files, dirs = [], []
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIPPED and entry.name not in skip:
                        dirs.append(entry.name)
                elif entry.is_file(follow_symlinks=False):
                    files.append(entry.name)
        return (info.st_ino, info.st_mtime_ns, listed_at, files, dirs)


def changed(before: Snapshot | None, after: Snapshot | None, limit: int = 200) -> list[str]:
    """Files added, removed or modified between two snapshots (sorted, at most `limit`)."""
    if before is None or after is None:
        return []
    paths = {path for path in before.keys() | after.keys() if before.get(path) != after.get(path)}
    return sorted(paths)[:limit]
