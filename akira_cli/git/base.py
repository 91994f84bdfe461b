"""`git.base`: where a task branch starts and where its pull request points; and the warning when
a new run would start from an earlier run's task branch (a run leaves HEAD on its branch)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from akira_cli.errors import AkiraError
from akira_cli.git.pinned import Git
from akira_cli.sections import GitSettings
from akira_cli.state.git_record import GitRecord


def task_branch(template: str, feature: str, task_id: str) -> str:
    """`git.branch` filled in, with the feature made branch-safe: a folder named `my feature`
    gives `akira/my-feature` (spaces and what git refuses in a ref name become `-`)."""
    safe = re.sub(r"[\s~^:?*\[\\\x00-\x1f\x7f]+|\.{2,}|@\{", "-", feature)
    safe = re.sub(r"-{2,}", "-", safe).strip("-./")
    safe = safe.removesuffix(".lock").rstrip("-./") or "task"
    return template.replace("{feature}", safe).replace("{task_id}", task_id)


def base_commit(git: Git, settings: GitSettings, shown_root: str) -> str | None:
    """`git.base`'s commit: the local branch, else the push remote's (a fresh clone has only its
    default branch locally); None when git.base is empty."""
    base, push = settings.base, settings.push
    if not base:
        return None
    remote = push if push and not re.search(r"[:/\\]", push) else "origin"
    if git.ok("check-ref-format", "--branch", base):
        for ref in (f"refs/heads/{base}", f"refs/remotes/{remote}/{base}"):
            if sha := git.out("rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False):
                return sha
    branches = ", ".join(git.out("branch", "--format=%(refname:short)", check=False).split()[:8])
    raise AkiraError(
        f"git.base names {base}, which is not a branch of {shown_root} (nor of {remote}); "
        f"its branches: {branches or 'none'}; fix git.base in config/autonomous_loop.yaml"
    )


def refuse_elsewhere(git: Git, settings: GitSettings, base: str | None, task: str, current: str) -> None:
    """A task file committed on HEAD that `git.base`'s commit `base` lacks, or holds otherwise:
    the task branch made from there would not have the task file the person pointed akira at
    (the switch takes it away, or changes it). A task file not committed yet goes along."""
    ours = git.out("rev-parse", "--verify", "-q", f"HEAD:{task}", check=False)
    if base is None or not ours:
        return
    theirs = git.out("rev-parse", "--verify", "-q", f"{base}:{task}", check=False)
    if theirs == ours:
        return
    where = current or "HEAD"
    raise AkiraError(
        f"{task} is committed on {where}, and git.base {settings.base} "
        f"{'holds another version of it' if theirs else 'does not have it'}: a task branch from "
        f"{settings.base} would start without it; merge {where} into {settings.base} first, or set "
        f'git.base: "" in config/autonomous_loop.yaml to start from {where}'
    )


def stacked(current: str, settings: GitSettings, earlier: Iterable[GitRecord]) -> str | None:
    """A warning when the new task branch would start from `current`, an earlier run's task
    branch, because `git.base` is empty: it would carry that run's commits. `earlier`: the runs
    this workspace remembers, for the branch to name."""
    if settings.base or not settings.branch or not current:
        return None
    theirs = {record.branch: record.started_on for record in earlier if record.created}
    pattern = re.escape(settings.branch).replace(r"\{feature\}", ".+").replace(r"\{task_id\}", ".+")
    if current not in theirs and not re.fullmatch(f"{pattern}(-[0-9]+)?", current):
        return None
    base, seen = theirs.get(current) or "<branch>", {current}
    while base in theirs and base not in seen:  # a chain of runs: back to where the first started
        seen.add(base)
        base = theirs[base] or base
    return (
        f"HEAD is on {current}, an earlier run's task branch: the new task branch starts from it "
        f"and carries its commits; to start every run from {base}, set git.base: {base} in "
        "config/autonomous_loop.yaml"
    )
