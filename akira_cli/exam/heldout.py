"""The held-out run's tree: a scratch copy of the step's tree with its exam files as they were
before the step (changed and deleted ones put back, added ones removed). The step's own tree is
never touched; the copy is made and removed by akira, never through a link a step planted."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

SKIPPED = frozenset({".git", ".akira", ".state"})
"""Not copied from the top of the tree: git's own folder (the copy's checks find no repository
above it, `GIT_CEILING_DIRECTORIES`), akira's worktrees and scratch trees, akira's state."""
CACHES = frozenset({"__pycache__", ".pytest_cache"})
"""Not copied anywhere: a cache the step's run left would answer for a file put back within the
same second at the same size (Python's bytecode is checked by those two only)."""


def copy_tree(source: Path, target: Path) -> None:
    """`source` copied to `target` (made here) as `cp -a` copies (links as links, modes kept; a
    third of Python's `copytree` time on 10,000 files), then its caches removed."""
    target.mkdir(parents=True)
    entries = sorted(str(path) for path in source.iterdir() if path.name not in SKIPPED)
    if entries:  # what cannot be read is left out: the checks then fail held out, never pass
        subprocess.run(["cp", "-a", "--", *entries, str(target)], capture_output=True, check=False)
    for folder, dirs, _ in os.walk(target):
        for name in [name for name in dirs if name in CACHES]:
            dirs.remove(name)
            shutil.rmtree(Path(folder) / name, ignore_errors=True)


def put_back(tree: Path, files: dict[str, bytes | None]) -> None:
    """Each of `files` (relative to `tree`) as it was: its bytes, or gone when it did not exist.
    What stands in the way (a link, a file where a folder goes) is removed, never followed."""
    for name, data in files.items():
        parts = name.split("/")
        folder = tree
        for part in parts[:-1]:
            folder = folder / part
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                folder.unlink()
            folder.mkdir(exist_ok=True)
        target = folder / parts[-1]
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            shutil.rmtree(target)
        if data is not None:
            target.write_bytes(data)


def remove_tree(tree: Path) -> None:
    """The scratch tree removed (links in it removed as links)."""
    with contextlib.suppress(FileNotFoundError):
        for folder, dirs, _ in os.walk(tree):
            for name in dirs:
                path = Path(folder) / name
                with contextlib.suppress(OSError):
                    if not path.is_symlink():  # a check may leave a folder it cannot be emptied of
                        os.chmod(path, 0o700)
        shutil.rmtree(tree, ignore_errors=True)
