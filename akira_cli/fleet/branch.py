"""A fleet run's task branch (the fleet): the name a local run of the task would get, from
`git.branch` in the clone's configuration (default `akira/{feature}`), with `-2`, `-3` when the
name is taken on the remote or by another live run. The worker that first takes the run chooses
it and records it with the run's progress, so a worker recovering the run finds the branch."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli.fleet.runs import git_out

if TYPE_CHECKING:
    from akira_cli.config import Config

DEFAULT = "akira/{feature}"


def workspace_of(clone: Path, task: str) -> Path:
    """The akira workspace the task lies in: the nearest folder upward from the task file that
    holds akira's configuration file, else the clone's top."""
    from akira_cli.config import CONFIG_RELPATH

    folder = (clone / task).parent
    while folder != clone and clone in folder.parents:
        if (folder / CONFIG_RELPATH).is_file():
            return folder
        folder = folder.parent
    return clone


def clone_config(clone: Path, task: str) -> Config:
    """The configuration the run's loop reads: the clone's, with the push to `origin` a worker
    gives its loop (so that `git.pr` finds the `git.push` it needs)."""
    from akira_cli.config import load_config

    return load_config(workspace_of(clone, task), overrides={"git.push": "origin"})


def wanted(template: str, task: str, run_id: str) -> str:
    """`git.branch` filled in as a local run fills it in; {task_id} is the run's id, since the
    loop's own id is made later. An empty `git.branch` (commit on the current branch) is the
    default here: a fleet run never pushes onto the branch it started from."""
    path = Path(task)
    feature = path.parent.name if path.name.lower() == "tasks.md" else path.stem
    from akira_cli.git.base import task_branch

    return task_branch(template or DEFAULT, feature, run_id)


def free(repo: str, name: str, reserved: Iterable[str]) -> str:
    """`name`, or `name-2`, `name-3`… : the first taken by no branch on the remote and no other
    live run."""
    heads = git_out("ls-remote", "--heads", repo).stdout.splitlines()
    taken = {line.split("\t", 1)[-1].removeprefix("refs/heads/") for line in heads} | set(reserved)
    chosen, number = name, 1
    while chosen in taken:
        number += 1
        chosen = f"{name}-{number}"
    return chosen
