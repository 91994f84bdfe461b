"""The state file `.state/autonomous_loop_<id>.json`: the seed 004 schema plus akira's additions.

Attempts, failures and reflections render themselves, so the retry prompt, the escalation file
and the log all come from the same objects.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from akira_cli.events import utcnow
from akira_cli.failures import key_line
from akira_cli.state.gitrun import GitRun
from akira_cli.usage import Usage

SCHEMA_VERSION = 2
"""2: bounded lists with counters (`StepRecord.attempts_total`, `LoopState.history`); the full
history lives in the journal (`state/journal.py`). Version 1 files are read and trimmed."""
KEEP_ATTEMPTS = 6
"""Attempts kept per step record; older ones live in the journal."""
KEEP_ENTRIES = 10
"""Completed steps, failures and reflection ids kept in the state file. A list is trimmed back
to this when it reaches twice as many, so trimming is rare."""
KEEP_FINISHED = 3
"""Records of completed steps kept (their lessons feed the next prompts), trimmed at twice."""
Status = Literal["running", "paused", "needs_action", "completed", "failed", "cancelled"]
Outcome = Literal["success", "failure", "interrupted", "collided"]
NOT_COUNTED = ("interrupted", "collided")
"""Outcomes that cost the step no attempt: a forced stop, a parallel step that collided (SPEC 13)."""


class Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class CurrentStep(Model):
    step_id: str
    description: str
    status: str = "in_progress"
    started_at: str = Field(default_factory=utcnow)
    attempt: int = 1
    worktree: str | None = None
    """A parallel step's worktree (SPEC 13)."""


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
    """The step's commit on the task branch (SPEC 12); None when git is off or nothing changed."""

    @property
    def how(self) -> str:
        return DONE_BY_TEXT[(self.done_by, self.verified)]


def breakdown_key(step: CompletedStep) -> str:
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


NOT_EVIDENCE = frozenset({"agent result", "evidence"})
"""Check names that are not deterministic checks: they never make a step verified, and passing
them is no progress."""


class CheckResult(Model):
    name: str
    passed: bool
    detail: str = ""
    advisory: bool = False
    """A project check that already failed before the first step: recorded, not gating."""


class Evaluation(Model):
    complete: bool
    confidence: float
    checks: list[CheckResult] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)
    error: str | None = None

    def failures(self) -> list[CheckResult]:
        return [check for check in self.checks if not check.passed]


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
    """The step's commit, made when this attempt completed it (SPEC 12)."""
    agent_commits: list[str] = Field(default_factory=list)
    """Commits the agent made itself during the attempt (kept, and reported)."""
    patch: str | None = None
    """A failed attempt's changes on a git-native run: `.state/attempts/<task>/<step>-<n>.patch`."""

    @property
    def verified(self) -> bool:
        """At least one deterministic check (not just the agent's word) ran, and all passed."""
        checks = self.evaluation.checks if self.evaluation else []
        deterministic = [check for check in checks if check.name not in NOT_EVIDENCE]
        return bool(deterministic) and all(c.passed for c in checks)

    def summary(self) -> str:
        """The error's most telling line: what a retry prompt lists per failure."""
        return key_line(self.error) if self.error.strip() else "failed"

    def render(self, full: bool = True) -> str:
        """The attempt as a person reads it (full), or as a retry prompt lists it (no error:
        the prompt lists the failure messages once, separately)."""
        lines = [f"- Attempt {self.number} ({self.approach}): {self.outcome}"]
        lines += [f"  - tried: `{action[:200]}`" for action in self.actions]
        if self.error and full:
            lines.append(f"  - error: {self.error}")
        return "\n".join(lines)


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
    approaches: list[str] = Field(default_factory=list)
    """Every approach tried for this step (not interrupted), across resumes."""
    reflections: list[str] = Field(default_factory=list)
    guidance: str | None = None
    collision: str | None = None
    """Set when the step's parallel run collided on the task branch (SPEC 13): it runs again
    after its wave, one at a time, with this in its prompt."""
    post_action: PostActionReflection | None = None
    session_id: str | None = None
    """The agent CLI's conversation for this step (claude's session_id, codex's thread_id)."""

    @model_validator(mode="after")
    def _from_version_1(self) -> StepRecord:
        """A version 1 record holds every attempt and no counters: count them once (the next
        save journals them all, then trims the record)."""
        if self.attempts_total < len(self.attempts):
            self.attempts_total, self.journaled = len(self.attempts), 0
            self.window_count = len(self.window())
            self.approaches = sorted({a.approach for a in self.attempts if a.outcome not in NOT_COUNTED})
        return self

    def add(self, attempt: Attempt) -> None:
        self.attempts.append(attempt)
        self.attempts_total += 1
        if attempt.outcome not in NOT_COUNTED:
            self.window_count += 1
            if attempt.approach not in self.approaches:
                self.approaches.append(attempt.approach)
        self.trim(KEEP_ATTEMPTS)

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
    """The steps of a parallel wave running now, each in its worktree (SPEC 13)."""
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
    stop_reason: str = ""
    include_optional: bool = False
    agent_kind: str | None = None
    task_file_identity: tuple[int, int] | None = None
    """(device, inode) of the task file, to find it again wherever a person moved it."""
    config_file: str | None = None
    """The --config FILE given at start, reused by resume and --detach."""
    elapsed_seconds: float = 0.0
    """Work time summed over runs, for `timeout_seconds`."""
    systemic_issues: list[str] = Field(default_factory=list)
    pending_guidance: str | None = None
    no_progress_streak: int = 0
    """Attempts in a row that changed no file and passed no check."""
    waiting_until: str | None = None
    """When an agent CLI's usage limit resets: the loop waits until then (spending nothing)."""
    moved_from: str | None = None
    """Where akira's move to Done/ took the task from (for the move's commit, SPEC 12)."""
    moving_to_done: bool = False
    """Every step is done and akira is moving the task to Done/: saved before the move, so that a
    crash in the middle is finished on resume as akira's completion, not a person's."""
    advisory_checks: bool = False
    """The project checks failed before the first step: this run records them, they do not gate."""
    history: History = Field(default_factory=History)
    git: GitRun | None = None
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
        counts = {"verified": 0, "unverified": 0, "done_by_person": 0, "done_by_claim": 0}
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
