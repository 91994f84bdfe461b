"""What a step's commit says besides its files: the trailers a reader (and a later run) reads it
by, written (`trailers`) and read back (`commits_of`: akira's commits of a task, after a kill -9 left
one unrecorded), the commit of a step not in the task file (`Message`), and the task file with the
step's tick.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from akira_cli.fileio import read_all
from akira_cli.git.pinned import Git, GitError
from akira_cli.state.git_record import GitRecord
from akira_cli.state.models import LoopState
from akira_cli.state.records import Attempt
from akira_cli.tasks.model import Step, TaskFile
from akira_cli.tasks.source import is_done

OPEN_BOXES = (b"[ ]", b"[-]", b"[~]")
TRAILER_RE = re.compile(r"^Akira-(Task|Step|Verified|Review): *(.+)$", re.MULTILINE)


@dataclass(frozen=True)
class Message:
    """The commit of a step that is not in the task file (a fix after the pull request): its
    subject and its own trailers, and no tick."""

    subject: str
    trailers: dict[str, str]


def trailers(task_id: str, step: Step, attempt: Attempt, message: Message | None) -> dict[str, str]:
    """The step's commit trailers: its task and step, what verified it, its review."""
    checks = [c.name for c in (attempt.evaluation.checks if attempt.evaluation else []) if c.passed]
    said = ", ".join(checked(name, attempt.files_changed) for name in checks if name != "agent result")
    found = {
        "Akira-Task": task_id,
        "Akira-Step": step.id,
        **(message.trailers if message is not None else {}),
        "Akira-Verified": verified(attempt),
        "Akira-Checks": said[:300] or "none",
    }
    exam = attempt.exam
    if exam is not None and exam.changed:
        found["Akira-Exam"] = (
            "accepted by a person"
            if exam.allowed == "person"
            else f"changed as the step asked: {', '.join(exam.changed)}"[:300]
            if exam.changed_exam
            else f"held out, passed: {', '.join(exam.changed)}"[:300]
        )
    if attempt.review is not None:  # approved, disputed or none
        found["Akira-Review"] = attempt.review.verdict
    return found


@dataclass
class Found:
    """A commit of akira's on the task branch, read back by its trailers."""

    sha: str
    task_id: str
    step_id: str
    verified: bool
    review: str | None = None
    """The `Akira-Review` trailer (the reviewer's verdict), when a reviewer looked at the step."""


def commits_of(git: Git, record: GitRecord, task_id: str) -> list[Found]:
    """akira's commits of this task on the branch since its base (or the last undo's revert),
    oldest first, read back by their trailers."""
    try:
        start = record.since or record.base
        log = git.out("log", "--reverse", "--format=%H%x00%B%x01", f"{start}..{record.branch}")
    except GitError:
        return []
    commits = []
    for entry in log.split("\x01"):
        sha, _, body = entry.strip().partition("\x00")
        said = dict(TRAILER_RE.findall(body))
        if sha and said.get("Task") == task_id and "Step" in said:
            commits.append(
                Found(
                    sha,
                    task_id,
                    said["Step"].strip(),
                    said.get("Verified") == "yes",
                    review_trailer(said.get("Review")),
                )
            )
    return commits


def review_trailer(value: str | None) -> str | None:
    word = (value or "").strip()
    return word if word in ("approved", "disputed", "none") else None


def verified(attempt: Attempt) -> str:
    """`Akira-Verified`: yes, no, or changed-exam (its checks pass only with its exam changed)."""
    if attempt.exam is not None and attempt.exam.changed_exam:
        return "changed-exam"
    return "yes" if attempt.verified else "no"


def ticked_bytes(
    path: Path, task: TaskFile, step: Step, state: LoopState, marks: dict[str, str] | None = None
) -> bytes | None:
    """The task file's bytes with `step` ticked, and its parents whose children are then all
    done, as the loop will tick them after its save; the `[-]` of the other running steps
    (`marks`) as their boxes were before (a commit carries ticks only). None when the file
    cannot be read, or is not the task file akira knows (another put at its path, `TaskLocator`)."""
    known = task_bytes(path, state)
    if known is None:
        return None
    data = bytearray(known)
    done = state.completed_ids() | {step.id}
    for other_id, box in (marks or {}).items():
        other = task.get(other_id)
        if (
            other is not None
            and other_id != step.id
            and data[other.box_offset - 1 : other.box_offset + 2] == b"[-]"
        ):
            data[other.box_offset] = ord(box[:1] or " ")
    target: Step | None = step
    while target is not None:
        at = target.box_offset
        if bytes(data[at - 1 : at + 2]) in OPEN_BOXES:
            data[at] = ord("x")
        parent = task.get(target.parent_id) if target.parent_id else None
        target = (
            parent if parent is not None and is_done(task, parent, state.include_optional, done) else None
        )
    return bytes(data)


def task_bytes(path: Path, state: LoopState) -> bytes | None:
    """The task file's bytes; None when it cannot be read, or is not the task file akira knows
    (another put at its path, `TaskLocator`)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or state.task_file_identity not in (
            None,
            (info.st_dev, info.st_ino),
        ):
            return None
        return read_all(fd)
    except OSError:
        return None
    finally:
        os.close(fd)


def checked(name: str, files_changed: list[str]) -> str:
    """A passed check as a reader of the commit understands it: the evidence an unverified
    step passed on is the files its attempt changed."""
    if name != "evidence":
        return name
    count = len(files_changed)
    return f"evidence: {count} file{'' if count == 1 else 's'} changed"
