"""What the reviewer reads of a step's work: on a git-native run, the step's whole diff against
the commit it started from (every attempt's files, as its commit will hold them), in the main
work tree or in a parallel step's worktree; the whole branch for `review.when: last`; the files
the witness saw change otherwise."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli.git.nested import outside_nested
from akira_cli.git.pinned import Git, GitError
from akira_cli.git.worktrees import slot_git

if TYPE_CHECKING:
    from akira_cli.git.steps import StepCommits
    from akira_cli.loop.partners import Where
    from akira_cli.state.records import Attempt, StepRecord

MAX_DIFF_CHARS = 60_000
"""The most of a diff a reviewer is sent; the rest is named by its `--stat`."""
MAX_FILE_CHARS = 4_000
"""Without git: the most of each changed file shown."""


class StepDiffs:
    """The diff of a step, wherever it ran. `commits`: the main work tree's step commits on a
    git-native run (None without git)."""

    def __init__(self, commits: StepCommits | None, base: str | None = None) -> None:
        self.commits = commits
        self.base = base
        """The commit the task branch started from, for the whole branch's diff."""

    def text(self, changed: list[str], where: Where, whole_branch: bool = False) -> str:
        names = list(changed)
        try:
            if where.path is not None and self.commits is not None:
                git = slot_git(self.commits.run.git, where.path)
                return bounded(*slot_diff(git, where.workdir, names))
            if self.commits is not None:
                paths = [self.commits.workdir / name for name in names]
                patch, stat = self.commits.step_diff(paths)
                branch = self.branch_diff() if whole_branch else ""
                return branch + bounded(patch.decode("utf-8", "replace"), stat)
        except (GitError, OSError) as exc:
            return f"(the diff could not be taken: {exc}; files changed: {', '.join(names) or 'none'})"
        return files_view(where.workdir, names)

    def branch_diff(self) -> str:
        """The steps already committed on the task branch, for a review of the whole branch."""
        if self.commits is None or not self.base:
            return ""
        git = self.commits.run.git
        patch = git.out("diff", "--no-color", self.base, "HEAD", check=False)
        stat = git.out("diff", "--stat", self.base, "HEAD", check=False)
        if not patch:
            return ""
        head = "### The steps committed on the branch before this one"
        return f"{head}\n{bounded(patch, stat)}\n\n### This step\n"


def step_files(record: StepRecord, attempt: Attempt) -> list[str]:
    """What every attempt of the step changed, this one's included: what its commit will hold
    (a retry after `git.failed_attempt: keep` builds on the files the first attempt left)."""
    return list(dict.fromkeys(name for done in [*record.attempts, attempt] for name in done.files_changed))


def slot_diff(git: Git, workdir: Path, names: list[str]) -> tuple[str, str]:
    """A parallel step's changes in its worktree (`git`'s) against the worktree's HEAD (the
    wave's base, where the attempt started), through a temporary index: the slot's own index is
    untouched. A repository the step made inside is not looked into."""
    wanted = outside_nested(
        git.root, [Path(os.path.relpath(workdir / name, git.root)).as_posix() for name in names]
    )
    if not wanted:
        return "", ""
    with tempfile.TemporaryDirectory(prefix="akira-review-") as folder:
        env = {"GIT_INDEX_FILE": os.path.join(folder, "index")}
        git.run("read-tree", "HEAD", env=env)
        git.run("add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul", env=env, stdin=_z(wanted))
        patch = git.out("diff", "--cached", "--no-color", "HEAD", env=env)
        stat = git.out("diff", "--cached", "--stat", "HEAD", env=env)
    return patch, stat


def bounded(patch: str, stat: str) -> str:
    if not patch.strip():
        return "(no change to any file)"
    if len(patch) <= MAX_DIFF_CHARS:
        return f"```diff\n{patch.rstrip()}\n```"
    return (
        f"The diff is {len(patch)} characters; its first {MAX_DIFF_CHARS} follow, after its summary:\n"
        f"```\n{stat.rstrip()}\n```\n```diff\n{patch[:MAX_DIFF_CHARS].rstrip()}\n```"
    )


def files_view(workdir: Path, names: list[str]) -> str:
    """Without git: the files the attempt changed, each with its beginning."""
    if not names:
        return "(no file changed)"
    parts = [f"Files the attempt changed (no git here, so no diff): {', '.join(names[:50])}"]
    budget = MAX_DIFF_CHARS
    for name in names[:50]:
        path = workdir / name
        try:
            text = path.read_bytes()[: MAX_FILE_CHARS + 1].decode("utf-8", "replace")
        except OSError:
            parts.append(f"\n#### {name}\n(gone)")
            continue
        cut = text[:MAX_FILE_CHARS] + ("\n…" if len(text) > MAX_FILE_CHARS else "")
        if budget - len(cut) < 0:
            break
        budget -= len(cut)
        parts.append(f"\n#### {name}\n```\n{cut}\n```")
    return "\n".join(parts)


def _z(names: list[str]) -> bytes:
    return b"".join(name.encode() + b"\0" for name in names)
