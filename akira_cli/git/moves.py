"""A person's move of the spec while a run goes on: the branch keeps the task file where `loop
start` found it (its home), and the folders a person moved the spec between hold nothing a
step's commit takes (their files show as deleted at home and new where it went)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from akira_cli.changes import Snapshot
from akira_cli.state.models import LoopState
from akira_cli.workspace import Workspace


def home(workspace: Path, state: LoopState) -> Path:
    """Where the task file lies on the task branch."""
    return Workspace(workspace).home(state)


def placed(
    workspace: Path, state: LoopState, workdir: Path, files: Snapshot | None
) -> tuple[Path, list[Path]]:
    """Where the task file is now, and, when a person moved it away from its home, the folders
    they moved the spec between. A move during the step is not in the state yet: the file is
    found among the files git shows (`files`, relative to `workdir`), by its inode."""
    where = Workspace(workspace)
    start, now = where.home(state), Path(state.task_path)
    if now == start and start.is_file():
        return start, []
    if not now.is_file():
        now = found_by_inode(state, workdir, files) or now
    return now, [where.spec_folder(start), where.spec_folder(now)]


def found_by_inode(state: LoopState, workdir: Path, files: Snapshot | None) -> Path | None:
    identity = state.task_file_identity
    if identity is None or files is None:
        return None
    for name in files:
        if name.endswith(".md"):
            with contextlib.suppress(OSError):
                info = (workdir / name).lstat()  # a link is never the task file
                if (info.st_dev, info.st_ino) == tuple(identity):
                    return workdir / name
    return None


def outside(paths: list[Path], folders: list[Path]) -> list[Path]:
    """`paths` without those in `folders` (or that are one of them)."""
    if not folders:
        return paths
    names = tuple(str(folder) for folder in folders)
    inside = tuple(f"{name}{os.sep}" for name in names)
    return [path for path in paths if not (str(path) in names or str(path).startswith(inside))]
