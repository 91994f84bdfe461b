"""After a kill -9 between a step's commit and the update of the person's index: the index still
holds, at that commit's paths, what the commit's parent had, so `git status` shows akira's own
work as staged reversions. Only the latest commit can be cut short this way."""

from __future__ import annotations

from akira_cli.git.cli import Git


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
    index = _entries(git.run("ls-files", "-s", "-z", "--", *paths, check=False).stdout, stage=True)
    parent = _entries(git.run("ls-tree", "-r", "-z", "HEAD^", "--", *paths, check=False).stdout, stage=False)
    stale = [path for path in paths if index.get(path) == parent.get(path)]
    if stale:
        git.run("reset", "-q", "HEAD", "--", *stale, check=False)
    return stale


def _entries(listing: bytes, *, stage: bool) -> dict[str, str]:
    """path -> blob id, from `ls-files -s` ("mode sha stage\tpath") or `ls-tree` ("mode type sha\tpath")."""
    found = {}
    for entry in listing.decode("utf-8", "replace").split("\0"):
        head, _, name = entry.partition("\t")
        fields = head.split(" ")
        if name and len(fields) == 3:
            found[name] = fields[1] if stage else fields[2]
    return found
