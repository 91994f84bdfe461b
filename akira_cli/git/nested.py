"""A repository a step made inside the work tree (`sub/.git`, a folder or a `gitdir:` file).

Committed, git would record it as a gitlink, and from then on every `git status` or `git diff`
would look inside it, with that repository's own configuration (its `core.fsmonitor`, its
hooks). akira never commits it, nor anything in it: it is named in a warning and left out.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from pathlib import Path

from akira_cli.errors import AkiraError
from akira_cli.git.pinned import Repository, find


def nested_repositories(top: Path, names: Iterable[str]) -> list[str]:
    """The folders among `names` (relative to `top`) and above them that hold a `.git` of their
    own, `top`'s excepted."""
    seen: dict[str, bool] = {}
    found: list[str] = []
    for name in names:
        holder = _holder(top, name, seen)
        if holder is not None and holder not in found:
            found.append(holder)
    return sorted(found)


def refuse_nested_start(repo: Repository, workspace: Path, task: Path) -> None:
    """At a run's start: a task whose repository lies inside the workspace's own repository
    (`Specs/<feature>/.git`) may be one that a step of another task made; akira does not run
    git there."""
    if repo.top == workspace or not repo.top.is_relative_to(workspace):
        return
    outer = find(workspace)
    if outer is not None and outer.top != repo.top:
        dot = shlex.quote(str(repo.top / ".git"))
        raise AkiraError(
            f"{shlex.quote(str(task))} lies in a git repository of its own, {shlex.quote(str(repo.top))}, "
            f"inside the workspace's repository {shlex.quote(str(outer.top))} (a step may have made it); "
            f"look at it, remove {dot} if it is not yours, or run with --no-git"
        )


def left_out(nested: list[str]) -> str:
    """The warning that names them."""
    return (
        f"left out of the commit: {', '.join(nested[:10])}, a git repository the step made inside "
        "the work tree (akira never commits one, nor runs git in it)"
    )


def outside_nested(top: Path, names: Iterable[str]) -> list[str]:
    """`names` without those that are, or lie in, a nested repository."""
    seen: dict[str, bool] = {}
    return [name for name in names if _holder(top, name, seen) is None]


def _holder(top: Path, name: str, seen: dict[str, bool]) -> str | None:
    parts = [part for part in name.split("/") if part and part != "."]
    for end in range(1, len(parts) + 1):
        folder = "/".join(parts[:end])
        if folder not in seen:
            seen[folder] = os.path.lexists(os.path.join(top, folder, ".git"))
        if seen[folder]:
            return folder
    return None
