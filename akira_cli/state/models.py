"""The state file `.state/autonomous_loop_<id>.json`: the loop's state schema and akira's additions.

Attempts, failures and reflections render themselves, so the retry prompt, the escalation file
and the log all come from the same objects.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator

from akira_cli.events import utcnow
from akira_cli.state.follow import PullRequestWatch
from akira_cli.state.git_record import GitRecord
from akira_cli.state.records import Attempt, ExamResult, Model, StepRecord, passed_checks
from akira_cli.usage import Usage

SCHEMA_VERSION = 2
"""2: bounded lists with counters (`StepRecord.attempts_total`, `LoopState.history`); the full
history lives in the journal (`state/journal.py`). Version 1 files are read and trimmed."""
KEEP_FINISHED = 3
"""Records of completed steps kept (their lessons feed the next prompts), trimmed at twice."""
Status = Literal["running", "following", "paused", "needs_action", "completed", "failed", "cancelled"]


class CurrentStep(Model):
    step_id: str
    description: str
    status: str = "in_progress"
    started_at: str = Field(default_factory=utcnow)
    attempt: int = 1
    worktree: str | None = None
    """The worktree slot a parallel step runs in; None in the main work tree."""


DONE_BY_TEXT = {
    ("akira", True): "verified by its checks",
    ("akira", False): "unverified: no check ran, the attempt changed files",
    ("person", True): "ticked by a person",
    ("person", False): "ticked by a person",
    ("claim", True): "ticked by the agent; its checks confirmed it",
    ("claim", False): "ticked by the agent; unverified, the step has no check",
}


class CompletedStep(Model):
    step_id: str
    description: str
    completed_at: str = Field(default_factory=utcnow)
    duration_seconds: float = 0.0
    attempts: int = 1
    done_by: Literal["akira", "person", "claim"] = "akira"
    """akira (after its evaluation), a person (a tick made while no attempt ran), or a claim (a
    tick made during an attempt, decided by the step's checks)."""
    verified: bool = True
    """At least one deterministic check ran for the step and all passed."""
    commit: str | None = None
    """The step's commit on the task branch (git-native runs); None when git is off or nothing changed."""
    earlier_run: str | None = None
    """The earlier run of akira's on the same task file that completed it (its box was ticked
    at this run's start): that run has its commit."""
    review: Literal["approved", "disputed", "none"] | None = None
    """The reviewer's verdict (the morning review); None when no reviewer looked at the step."""
    review_note: str = ""
    """The reviewer's summary (approved) or its last reasons (disputed, none)."""
    checks: list[str] = Field(default_factory=list)
    """The deterministic checks that passed for it (shown in the criteria table)."""
    exam: ExamResult | None = None
    """What it did to its exam (changed exam files, its own new tests), when anything."""

    @classmethod
    def of(cls, step_id: str, description: str, attempt: Attempt, tries: int | None = None) -> CompletedStep:
        """The record of a step that `attempt` completed; `tries`: the attempts that counted
        over every window, across resumes (`StepRecord.tries`), else the attempt's number."""
        review = attempt.review
        return cls(
            step_id=step_id,
            description=description,
            duration_seconds=attempt.duration_seconds,
            attempts=tries or attempt.number,
            verified=attempt.verified,
            commit=attempt.commit,
            review=review.verdict if review is not None else None,
            review_note=review.reasons[:500] if review is not None else "",
            checks=passed_checks(attempt),
            exam=attempt.exam,
        )

    @property
    def changed_exam(self) -> bool:
        """Its checks passed only with its exam changed, as its text or a person allowed."""
        return self.exam is not None and self.exam.changed_exam

    @property
    def how(self) -> str:
        if self.changed_exam:
            return "CHANGED ITS EXAM: its checks pass only with the exam files it changed"
        if self.earlier_run:
            return f"done by the earlier run {self.earlier_run}"
        return DONE_BY_TEXT[(self.done_by, self.verified)]


def breakdown_key(step: CompletedStep) -> str:
    if step.changed_exam:
        return "changed_exam"
    if step.done_by == "akira":
        return "verified" if step.verified else "unverified"
    return f"done_by_{step.done_by}"


class FailedStep(Model):
    step_id: str
    description: str
    failed_at: str = Field(default_factory=utcnow)
    error: str
    retry_count: int = 0
    recovered: bool = False


class Context(Model):
    last_prompt: str = ""
    last_response: str = ""
    environment: dict[str, Any] = Field(default_factory=dict)
    last_reinjected_iteration: int = 0
    last_reinjected_at: str | None = None


class StopConditions(Model):
    task_in_done: bool = False
    max_iterations_reached: bool = False
    failure_threshold_exceeded: bool = False
    stop_hook_triggered: bool = False
    manual_intervention: bool = False
    persistent_failure: bool = False
    budget_exceeded: bool = False
    timeout_reached: bool = False
    task_file_deleted: bool = False

    def clear(self) -> None:
        for name in type(self).model_fields:
            setattr(self, name, False)


class Metrics(Model):
    total_duration_seconds: float = 0.0
    average_step_duration: float = 0.0
    success_rate: float = 0.0
    first_attempt_success_rate: float = 0.0
    final_success_rate: float = 0.0
    iterations_per_step: dict[str, int] = Field(default_factory=dict)
    reflections_generated: int = 0
    reflection_tokens: int = 0


class History(Model):
    """Where the state file's bounded lists stand against the journal's full ones."""

    completed_sealed: int = 0
    """The oldest completed steps, this many, live only in the journal's sealed batches."""
    completed_journaled: int = 0
    failed_dropped: int = 0
    failed_journaled: int = 0
    reflections_dropped: int = 0
    reflections_journaled: int = 0
    sealed_by: dict[str, int] = Field(default_factory=dict)
    """`done_breakdown` of the sealed steps."""
    sealed_seconds: float = 0.0
    sealed_first_attempt: int = 0
    """Sealed steps done on their first attempt (for `first_attempt_success_rate`)."""


TASK_ID_PATTERN = r"^task_\d{8}_\d{6}(_\d{1,6})?$"
"""A task id read from a file names files under .state/: it can never hold a path."""


class LoopState(Model):
    schema_version: int = SCHEMA_VERSION
    task_id: str = Field(pattern=TASK_ID_PATTERN)
    task_path: str
    feature: str = ""
    """One folder name (it names Done/<feature>/), never a path."""
    home: str | None = None
    """The task file's path at `loop start` (see `Workspace.home`)."""
    status: Status = "running"
    started_at: str = Field(default_factory=utcnow)
    updated_at: str = Field(default_factory=utcnow)
    saves: int = 0
    """Counts the saves; the save log (`state.savelog`) numbers its records with it."""
    iteration: int = 0
    max_iterations: int = 100
    consecutive_failures: int = 0
    failure_threshold: int = 3
    total_failures: int = 0
    total_successes: int = 0
    current_step: CurrentStep | None = None
    current_steps: list[CurrentStep] = Field(default_factory=list)
    """The steps of a parallel wave running now, each in its worktree."""
    parallel: int = Field(1, ge=1)
    """How many `[P]` steps may run at once (`--parallel`, kept for resumes)."""
    completed_steps: list[CompletedStep] = Field(default_factory=list)
    failed_steps: list[FailedStep] = Field(default_factory=list)
    context: Context = Field(default_factory=Context)
    stop_conditions: StopConditions = Field(default_factory=StopConditions)
    metrics: Metrics = Field(default_factory=Metrics)
    steps: dict[str, StepRecord] = Field(default_factory=dict)
    reflections: list[str] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    review_usage: Usage = Field(default_factory=Usage)
    """The reviewer's part of `usage` (the morning review): counted toward the budgets, reported apart."""
    reviews: dict[str, int] = Field(default_factory=dict)
    """Completed steps by their review (approved, disputed, none), for `status`."""
    stop_reason: str = ""
    include_optional: bool = False
    agent_kind: str | None = None
    task_file_identity: tuple[int, int] | None = None
    """(device, inode) of the task file, to find it again wherever a person moved it."""
    config_file: str | None = None
    """The --config FILE given at start, reused by resume and --detach."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """The dotted config keys `api.start(settings=...)` gave over the files', reused by every
    resume and by a detached run's own process (`loop resume`), which reads the files again."""
    elapsed_seconds: float = 0.0
    """Work time summed over runs, for `timeout_seconds`."""
    systemic_issues: list[str] = Field(default_factory=list)
    pending_guidance: str | None = None
    no_progress_streak: int = 0
    """Attempts in a row that changed no file and passed no check."""
    waiting_until: str | None = None
    """When an agent CLI's usage limit resets: the loop waits until then (spending nothing)."""
    moved_from: str | None = None
    """Where akira's move to Done/ took the task from (for the move's commit on a git-native run)."""
    moving_to_done: bool = False
    """Every step is done and akira is moving the task to Done/: saved before the move, so that a
    crash in the middle is finished on resume as akira's completion, not a person's."""
    advisory_checks: bool = False
    """The project checks failed before the first step: this run records them, they do not gate."""
    history: History = Field(default_factory=History)
    git: GitRecord | None = None
    sandboxed: bool | None = None
    """Whether the last run's steps ran in the sandbox (docs/sandbox.md); None before a run."""
    sandbox_flag: bool | None = None
    """`--sandbox` (True) or `--no-sandbox` (False) as given at start, kept for resumes."""
    sandbox_refused: list[str] = Field(default_factory=list)
    """What the sandbox refused steps that failed, each with the line that allows it (the last
    `KEEP_ENTRIES`), for `akira doctor`."""
    follow: bool = False
    """`--follow` given at start (or `akira pr follow`): follow the pull request, kept for resumes."""
    pull_request: PullRequestWatch | None = None
    """The pull request followed after the push, once following began."""
    _sealed: set[str] = PrivateAttr(default_factory=set)
    """Ids of the completed steps sealed into the journal (read back by the store on load)."""
    _done: tuple[int, set[str]] = PrivateAttr(default=(-1, set()))

    def __eq__(self, other: object) -> bool:
        """Equal fields and the same sealed steps (the caches do not count)."""
        if not isinstance(other, LoopState):
            return NotImplemented
        return self.__dict__ == other.__dict__ and self._sealed == other._sealed

    __hash__ = None  # type: ignore[assignment]

    @model_validator(mode="after")
    def _bounded(self) -> LoopState:
        self.schema_version = SCHEMA_VERSION  # a version 1 file is read as it is, trimmed on save
        return self

    @field_validator("feature")
    @classmethod
    def _one_folder_name(cls, value: str) -> str:
        if value in (".", "..") or any(char in value for char in "/\\\x00"):
            raise ValueError("feature must be one folder name, not a path")
        return value

    def record(self, step_id: str, description: str) -> StepRecord:
        if step_id not in self.steps:
            self.steps[step_id] = StepRecord(step_id=step_id, description=description)
        return self.steps[step_id]

    def done_breakdown(self) -> dict[str, int]:
        """Completed steps by how they were decided: checked by akira, or taken on trust."""
        counts = {"verified": 0, "unverified": 0, "changed_exam": 0, "done_by_person": 0, "done_by_claim": 0}
        counts.update(self.history.sealed_by)
        for step in self.completed_steps:
            counts[breakdown_key(step)] += 1
        return counts

    def completed_ids(self) -> set[str]:
        """Every completed step, the sealed ones too. Kept up to date as the list grows, so the
        loop can ask at every iteration without going over the whole list."""
        counted, ids = self._done  # ids of the first `counted` completed steps (sealed or not)
        steps, total = self.completed_steps, self.completed_total
        new = total - counted
        if counted < 0 or not 0 <= new <= len(steps):  # a new state, or a list replaced
            ids = set(self._sealed).union(step.step_id for step in steps)
        else:  # sealing moves steps out of the list, not out of this set: no copy
            ids.update(step.step_id for step in steps[len(steps) - new :])
        self._done = (total, ids)
        return ids

    @property
    def completed_total(self) -> int:
        return self.history.completed_sealed + len(self.completed_steps)

    @property
    def success_rate(self) -> float:
        total = self.total_successes + self.total_failures
        return self.total_successes / total if total else 0.0
