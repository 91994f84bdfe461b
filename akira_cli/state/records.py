"""A step's record in the state file: its attempts, their evaluation, and the lessons kept.

Attempts, failures and reflections render themselves, so the retry prompt, the escalation file
and the log all come from the same objects.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from akira_cli.events import utcnow
from akira_cli.failures import key_line
from akira_cli.usage import Usage

KEEP_ATTEMPTS = 6
"""Attempts kept per step record; older ones live in the journal."""
KEEP_ENTRIES = 10
"""Completed steps, failures and reflection ids kept in the state file. A list is trimmed back
to this when it reaches twice as many, so trimming is rare."""
Outcome = Literal["success", "failure", "interrupted", "collided"]
NOT_COUNTED = ("interrupted", "collided")
"""Outcomes that cost the step no attempt: a forced stop, a parallel step that collided on the task branch."""


class Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


NOT_EVIDENCE = frozenset({"agent result", "evidence"})
"""Check names that are not deterministic checks: they never make a step verified, and passing
them is no progress."""


class CheckResult(Model):
    name: str
    passed: bool
    detail: str = ""
    advisory: bool = False
    """A project check that already failed before the first step: recorded, not gating."""
    output: str = Field("", exclude=True)
    """The tail of the check's output, passed or not: for the reviewer's prompt, never saved."""


class Evaluation(Model):
    complete: bool
    confidence: float
    checks: list[CheckResult] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)
    error: str | None = None

    def failures(self) -> list[CheckResult]:
        return [check for check in self.checks if not check.passed]


ReviewVerdict = Literal["approved", "changes", "disputed", "none"]


class ReviewResult(Model):
    """A reviewer's verdict on an attempt whose checks passed (the morning review): approved, changes
    (the attempt failed with `reasons`), disputed (rejected `review.max_rounds` times: completed
    for a person to look at), or none (the reviewer failed: not reviewed)."""

    verdict: ReviewVerdict
    reasons: str = ""
    reviewer: str = ""
    round: int = 1
    usage: Usage = Field(default_factory=Usage)
    """The reviewer's own usage, apart from the implementing agent's (`Attempt.usage`)."""


ExamVerdict = Literal["passed", "failed"]


class ExamResult(Model):
    """What an attempt that passed did to its exam (docs/design.md, the exam)."""

    changed: list[str] = Field(default_factory=list)
    """Exam files it changed or deleted that existed before the step, and those it added that are
    no plain new test (a hook, a runner config, a shadowing module, CI configuration)."""
    own_tests: list[str] = Field(default_factory=list)
    """New test files the step wrote (its own: they stay in the held-out run)."""
    held_out: ExamVerdict | None = None
    """The checks run again with `changed` as they were before the step; None: not needed."""
    allowed: Literal["step", "person"] | None = None
    """Who let the step change its exam: its own text asked, or a person (`--accept-exam`)."""
    failing: str = ""
    """The held-out checks' failing lines."""
    diff: str = ""
    """The exam files' diff against the step's start, cut."""

    @property
    def changed_exam(self) -> bool:
        """Passed only with its exam changed."""
        return self.held_out == "failed"


CHANGED_EXAM = "changed_exam"
"""The failure reason (and signature) of an attempt that passed only with its exam changed."""


class Attempt(Model):
    step_id: str
    number: int
    iteration: int
    approach: str
    """What was tried: 'Run', 'Fallback 1', 'command agent', ..."""
    actions: list[str] = Field(default_factory=list)
    started_at: str = Field(default_factory=utcnow)
    finished_at: str | None = None
    duration_seconds: float = 0.0
    outcome: Outcome = "failure"
    evaluation: Evaluation | None = None
    error: str = ""
    error_signature: str = ""
    output_tail: str = ""
    files_changed: list[str] = Field(default_factory=list)
    transient_retries: int = 0
    usage: Usage = Field(default_factory=Usage)
    commit: str | None = None
    """The step's commit, made when this attempt completed it (git-native runs)."""
    agent_commits: list[str] = Field(default_factory=list)
    """Commits the agent made itself during the attempt (kept, and reported)."""
    patch: str | None = None
    """A failed attempt's changes on a git-native run: `.state/attempts/<task>/<step>-<n>.patch`."""
    review: ReviewResult | None = None
    """The reviewer's verdict (the morning review), when a reviewer looked at this attempt."""
    refused: list[str] = Field(default_factory=list)
    """What the sandbox refused a failed attempt, each with the line that allows it: in `error`
    too, what stopped it first, the rest after."""
    exam: ExamResult | None = None
    """What a passing attempt did to its exam; None when it touched none."""

    @property
    def verified(self) -> bool:
        """At least one deterministic check (not just the agent's word) ran, and all passed, on
        the exam as it stood before the step."""
        if self.exam is not None and self.exam.changed_exam:
            return False
        checks = self.evaluation.checks if self.evaluation else []
        deterministic = [check for check in checks if check.name not in NOT_EVIDENCE]
        return bool(deterministic) and all(c.passed for c in checks)

    def summary(self) -> str:
        """The error's most telling line: what a retry prompt lists per failure. What the sandbox
        refused, when that stopped the attempt, comes first in the error and is that line."""
        if self.refused and self.error.startswith(self.refused[0]):
            return self.refused[0]
        return key_line(self.error) if self.error.strip() else "failed"

    def render(self, full: bool = True) -> str:
        """The attempt as a person reads it (full), or as a retry prompt lists it (no error:
        the prompt lists the failure messages once, separately)."""
        lines = [f"- Attempt {self.number} ({self.approach}): {self.outcome}"]
        lines += [f"  - tried: `{action[:200]}`" for action in self.actions]
        if self.error and full:
            lines.append(f"  - error: {self.error}")
        return "\n".join(lines)


def passed_checks(attempt: Attempt) -> list[str]:
    """The deterministic checks that passed in an attempt, by name."""
    checks = attempt.evaluation.checks if attempt.evaluation else []
    return [check.name for check in checks if check.passed and check.name not in NOT_EVIDENCE]


class PostActionReflection(Model):
    outcome: Literal["success", "partial", "blocked", "unknown"] = "success"
    what_worked: str = Field("", max_length=100)
    what_to_improve: str = Field("", max_length=100)
    lesson_learned: str = Field("", max_length=150)


class StepRecord(Model):
    step_id: str
    description: str
    undone_by: Literal["person"] | None = None
    """Set when `akira loop undo` reverted the step's commit: it runs again on resume."""
    attempts: list[Attempt] = Field(default_factory=list)
    """The last KEEP_ATTEMPTS attempts; every one is in the journal."""
    attempts_total: int = 0
    """Attempts ever recorded for this step, including those only in the journal."""
    journaled: int = 0
    """How many of them the journal holds already."""
    window_start: int = 0
    """Attempts before this index belong to an earlier run (before a resume) and are not counted."""
    window_count: int = 0
    """Attempts (not interrupted ones) since the window started: the next attempt's number - 1."""
    tries: int = 0
    """Attempts that count (not interrupted, not collided) over every window, across resumes: the
    step's attempts as `loop progress` and the completion report give them."""
    approaches: list[str] = Field(default_factory=list)
    """Every approach tried for this step (not interrupted), across resumes."""
    reflections: list[str] = Field(default_factory=list)
    guidance: str | None = None
    collision: str | None = None
    """Set when the step's parallel run collided on the task branch (parallel steps): it runs again
    after its wave, one at a time, with this in its prompt."""
    post_action: PostActionReflection | None = None
    session_id: str | None = None
    """The agent CLI's conversation for this step (claude's session_id, codex's thread_id)."""
    exam_base: str | None = None
    """What the step's exam is judged against, fixed before its first attempt: the commit it
    started from (git-native runs), or "copy" (its exam files copied under `.state/exam/`)."""
    exam_asked: str | None = None
    """The step's text at its first attempt: what decides whether it asked to change its exam (an
    agent that can write the task file cannot rename its step into asking)."""
    exam_programs: dict[str, str] = Field(default_factory=dict)
    """The files the step's checks run as their program, as they were then (`exam.judge.programs`)."""
    exam_accepted: bool = False
    """A person let the step change its exam (`loop resume --accept-exam STEP`)."""

    @model_validator(mode="after")
    def _from_version_1(self) -> StepRecord:
        """A version 1 record holds every attempt and no counters: count them once (the next
        save journals them all, then trims the record)."""
        if self.attempts_total < len(self.attempts):
            self.attempts_total, self.journaled = len(self.attempts), 0
            self.window_count = self.tries = len(self.window())
            self.approaches = sorted({a.approach for a in self.attempts if a.outcome not in NOT_COUNTED})
        return self

    def add(self, attempt: Attempt) -> None:
        self.attempts.append(attempt)
        self.attempts_total += 1
        if attempt.outcome not in NOT_COUNTED:
            self.window_count += 1
            self.tries += 1
            if attempt.approach not in self.approaches:
                self.approaches.append(attempt.approach)
        self.trim(KEEP_ATTEMPTS)

    def uncount(self) -> None:
        """The last attempt turned out to cost the step nothing (a collision, found after it was
        added): it no longer counts in the window nor in `tries`."""
        self.window_count, self.tries = max(0, self.window_count - 1), max(0, self.tries - 1)

    def trim(self, keep: int) -> None:
        excess = len(self.attempts) - keep
        if excess > 0:
            del self.attempts[:excess]
            self.window_start = max(0, self.window_start - excess)
        del self.reflections[: max(0, len(self.reflections) - KEEP_ENTRIES)]

    def new_window(self) -> None:
        """A person stepped in: the attempts so far no longer count against the step."""
        self.window_start, self.window_count = len(self.attempts), 0

    def window(self) -> list[Attempt]:
        """The kept attempts of the current window (at most KEEP_ATTEMPTS)."""
        return [a for a in self.attempts[self.window_start :] if a.outcome not in NOT_COUNTED]

    def tried(self) -> set[str]:
        """Every approach tried for this step, across resumes: each Fallback: gets its turn."""
        return set(self.approaches)
