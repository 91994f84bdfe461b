"""The state file `.state/autonomous_loop_<id>.json`: the seed 004 schema plus akira's additions.

Attempts, failures and reflections render themselves, so the retry prompt, the escalation file
and the log all come from the same objects.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from akira_cli.events import utcnow
from akira_cli.failures import key_line
from akira_cli.usage import Usage

SCHEMA_VERSION = 1
Status = Literal["running", "paused", "needs_action", "completed", "failed", "cancelled"]
Outcome = Literal["success", "failure", "interrupted"]


class Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class CurrentStep(Model):
    step_id: str
    description: str
    status: str = "in_progress"
    started_at: str = Field(default_factory=utcnow)
    attempt: int = 1


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

    @property
    def how(self) -> str:
        return DONE_BY_TEXT[(self.done_by, self.verified)]


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
    attempts: list[Attempt] = Field(default_factory=list)
    window_start: int = 0
    """Attempts before this index belong to an earlier run (before a resume) and are not counted."""
    reflections: list[str] = Field(default_factory=list)
    guidance: str | None = None
    post_action: PostActionReflection | None = None
    session_id: str | None = None
    """The agent CLI's conversation for this step (claude's session_id, codex's thread_id)."""

    def window(self) -> list[Attempt]:
        return [a for a in self.attempts[self.window_start :] if a.outcome != "interrupted"]

    def tried(self) -> set[str]:
        """Every approach tried for this step, across resumes: each Fallback: gets its turn."""
        return {attempt.approach for attempt in self.attempts if attempt.outcome != "interrupted"}


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
    iteration: int = 0
    max_iterations: int = 100
    consecutive_failures: int = 0
    failure_threshold: int = 3
    total_failures: int = 0
    total_successes: int = 0
    current_step: CurrentStep | None = None
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
    advisory_checks: bool = False
    """The project checks failed before the first step: this run records them, they do not gate."""

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
        steps = self.completed_steps
        return {
            "verified": sum(1 for s in steps if s.done_by == "akira" and s.verified),
            "unverified": sum(1 for s in steps if s.done_by == "akira" and not s.verified),
            "done_by_person": sum(1 for s in steps if s.done_by == "person"),
            "done_by_claim": sum(1 for s in steps if s.done_by == "claim"),
        }

    def completed_ids(self) -> set[str]:
        return {step.step_id for step in self.completed_steps}

    @property
    def success_rate(self) -> float:
        total = self.total_successes + self.total_failures
        return self.total_successes / total if total else 0.0
