"""The worktree hint (parallel steps): a wave step that failed in its worktree slot because something
the main work tree has was not there.

A worktree holds tracked files only. When a failed attempt's output names a path that is
missing (a file, a command, a Python or Node module) and that path exists in the main work
tree and git ignores it, the step's error gets one line naming `.worktreeinclude` (copied) and
`git.worktree_link` (linked). Anything else (a module the step has not written yet, a command
installed nowhere) is not the worktree's doing, and gets no hint.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from akira_cli.git.run import GitRun
from akira_cli.git.worktrees import INCLUDE_FILE

LOOKED_AT = 8000
"""The tail of the output that is searched (the error is at the end)."""
MISSING = (
    re.compile(r"([^\s:'\"`]+): No such file or directory"),  # cat: .env: ..., bash: x/y: ...
    re.compile(r"No such file or directory: '([^']+)'"),  # Python's FileNotFoundError
    re.compile(r"can't open file '([^']+)'"),  # python missing.py
)
MODULE = re.compile(r"No module named '([^']+)'")
NODE_MODULE = re.compile(r"Cannot find module '([^']+)'")
COMMAND = re.compile(r"([^\s:'\"`]+): command not found")
BIN_FOLDERS = (".venv/bin", "venv/bin", "node_modules/.bin")


def worktree_hint(run: GitRun, slot: Path, workdir: Path, text: str, links: list[str]) -> str:
    """The hint for a failed attempt's `text` in the worktree `slot` (its commands ran in
    `workdir`), or "" when nothing it misses is a path the main work tree has and git ignores."""
    for name in candidates(text[-LOOKED_AT:], slot, workdir):
        if os.path.lexists(run.root / name) and ignored(run, name):
            top = name.split("/", 1)[0]
            linkable = "/" in name and (run.root / top).is_dir() and top not in links
            where = (
                f"add {top} to git.worktree_link (linked) or name {name} in {INCLUDE_FILE} (copied)"
                if linkable
                else f"name it in {INCLUDE_FILE} (copied), or its folder in git.worktree_link (linked)"
            )
            return (
                f"this step ran in a worktree, which holds tracked files only: {name} is in the main "
                f"work tree, where git ignores it; {where}"
            )
    return ""


def candidates(text: str, slot: Path, workdir: Path) -> list[str]:
    """Repository-relative paths the output says are missing, in the order found."""
    here = Path(os.path.relpath(workdir, slot))
    found: list[str] = []

    def add(name: str, upward: bool = False) -> None:
        """`name` from where the commands ran; `upward`: from each folder above it too (where
        Node looks for `node_modules`, and a project keeps its `.venv`)."""
        path = Path(name)
        if path.is_absolute():
            try:
                paths = [path.relative_to(slot)]
            except ValueError:
                return  # outside the worktree: not what it lacks
        else:
            paths = [folder / path for folder in ([here, *here.parents] if upward else [here])]
        for each in paths:
            normal = os.path.normpath(each.as_posix())
            if not normal.startswith("..") and normal != "." and normal not in found:
                found.append(normal)

    for pattern in MISSING:
        for match in pattern.finditer(text):
            add(match.group(1))
    for match in MODULE.finditer(text):
        top = match.group(1).split(".")[0]
        add(top)
        add(f"{top}.py")
    for match in NODE_MODULE.finditer(text):
        name = match.group(1)
        if name.startswith((".", "/")):
            add(name)
        else:
            add(f"node_modules/{name}", upward=True)
    for match in COMMAND.finditer(text):
        name = match.group(1)
        for folder in () if "/" in name else BIN_FOLDERS:
            add(f"{folder}/{name}", upward=True)
        if "/" in name:
            add(name)
    return found[:20]


def ignored(run: GitRun, name: str) -> bool:
    """Whether git ignores `name` in the main work tree (a parent folder's pattern counts)."""
    return run.git.run("check-ignore", "-q", "--", name, check=False).returncode == 0
