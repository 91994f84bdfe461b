"""After a kill -9 between a step's commit and the update of the person's index: the index still
holds, at that commit's paths, what the commit's parent had, so `git status` shows akira's own
work as staged reversions. Only the latest commit can be cut short this way."""

from __future__ import annotations

from akira_cli.git.pinned import Git
from akira_cli.git.plumbing import parse_listing


def repair_index(git: Git, task_id: str) -> list[str]:
    """When HEAD is a commit of `task_id`, sets the index to HEAD at those of its paths where
    the index still holds the parent's entry; returns them. Nothing else is touched."""
    body = git.out("log", "-1", "--format=%B", "HEAD", check=False)
    if f"Akira-Task: {task_id}" not in body.splitlines():
        return []
    listed = git.run("diff-tree", "--no-commit-id", "--name-only", "-r", "-z", "HEAD", check=False).stdout
    paths = [name for name in listed.decode("utf-8", "replace").split("\0") if name]
    if not paths:
        return []
    index = parse_listing(git.run("ls-files", "-s", "-z", "--", *paths, check=False).stdout, stage=True)
    parent = parse_listing(
        git.run("ls-tree", "-r", "-z", "HEAD^", "--", *paths, check=False).stdout, stage=False
    )
    stale = [path for path in paths if index.get(path) == parent.get(path)]
    if stale:
        git.run("reset", "-q", "HEAD", "--", *stale, check=False)
    return stale
