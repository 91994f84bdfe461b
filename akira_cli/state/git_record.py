"""A git-native run's part of the state file (docs/design.md): the task branch and where it started."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, field_validator


class GitRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")

    """A git-native run (one commit per completed step): the task branch and where it started."""

    branch: str
    base: str
    """The commit HEAD was at when the loop started: `<base>..<branch>` is the night's work."""
    started_on: str = ""
    """Where the work is merged back and its pull request points: `git.base`, else the branch
    HEAD was on at the start ("" when detached)."""
    created: bool = True
    """akira created the branch (else `git.branch: ""` commits on the branch that was current)."""
    done_commit: str | None = None
    """The commit of the move to Done/, once made."""
    since: str | None = None
    """The last `akira loop undo`'s last revert: commits before it are never adopted again."""
    pr_url: str | None = None
    """The pull request opened for the task branch (the morning review's hand-off), once opened."""
    pr_draft: bool = False
    """It was opened as a draft (a completed run with `git.pr: ready` marks it ready)."""
    root: str | None = None
    """The repository's top folder, found at the start: a resume runs git there, and never
    looks for a repository again (a step could have made a `.git` on the way)."""

    @field_validator("branch", "started_on")
    @classmethod
    def _branch_name(cls, value: str) -> str:
        """A name read from a file goes to git as an argument: never an option, never odd bytes."""
        if value.startswith("-") or any(ch.isspace() or ord(ch) < 32 for ch in value):
            raise ValueError("must be a plain branch name")
        return value

    @field_validator("base", "done_commit", "since")
    @classmethod
    def _commit_id(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[0-9a-f]{40}([0-9a-f]{24})?", value):
            raise ValueError("must be a full commit id")
        return value
