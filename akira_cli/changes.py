"""Which files an attempt changed: a bounded mtime/size snapshot of the work folder, before and after.

Tool caches, virtualenvs, VCS data and akira's own state are skipped; a tree too large to
snapshot cheaply records nothing rather than slowing every iteration down.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

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


def snapshot(root: Path, skip_top: frozenset[str] = frozenset()) -> Snapshot | None:
    """Relative path -> (mtime_ns, size): git's view in a repository, else every file.
    `skip_top`: folder names skipped at the top level of the walk."""
    if (root / ".git").exists():
        found = git_snapshot(root)
        if found is not None:
            return found
    return walk_snapshot(root, skip_top)


def git_snapshot(root: Path) -> Snapshot | None:
    """The files git sees as changed or new (ignored ones are not the work), with their stats,
    so that a file changed again during the attempt still shows. None when git cannot answer."""
    try:
        done = subprocess.run(
            ["git", "status", "--porcelain=v1", "-z", "--untracked-files=all"],
            cwd=root,
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    found: Snapshot = {}
    entries = done.stdout.decode("utf-8", "replace").split("\0")
    for entry in entries:
        if len(entry) < 4:
            continue  # a rename's second path, or the end
        path = entry[3:]
        if path.split("/", 1)[0] in SKIPPED:
            continue
        try:
            stat = (root / path).lstat()
            found[path] = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            found[path] = (-1, -1)
    return found


def walk_snapshot(root: Path, skip_top: frozenset[str] = frozenset()) -> Snapshot | None:
    """Relative path -> (mtime_ns, size) for every file, or None past MAX_FILES."""
    found: Snapshot = {}
    top = str(root)
    prefix = len(top) + 1
    folders = [top]
    while folders:
        folder = folders.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIPPED and not (folder is top and entry.name in skip_top):
                        folders.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    stat = entry.stat(follow_symlinks=False)
                    found[entry.path[prefix:]] = (stat.st_mtime_ns, stat.st_size)
                    if len(found) > MAX_FILES:
                        return None
    return found


def changed(before: Snapshot | None, after: Snapshot | None, limit: int = 200) -> list[str]:
    """Files added, removed or modified between two snapshots (sorted, at most `limit`)."""
    if before is None or after is None:
        return []
    paths = {path for path in before.keys() | after.keys() if before.get(path) != after.get(path)}
    return sorted(paths)[:limit]
