"""The payloads of a run's events: the loop, a step and its attempts, reflection, git, the
pull request and the follow loop."""

from __future__ import annotations

from pydantic import BaseModel, Field

from akira_cli.event_payloads.kinds import STRICT, EventType, Payload

# -- the loop ---------------------------------------------------------------------------------


class LoopStarted(Payload):
    kind = EventType.LOOP_STARTED
    task_path: str
    pid: int
    iteration: int
    max_iterations: int
    steps_total: int


class LoopPaused(Payload):
    kind = EventType.LOOP_PAUSED
    reason: str
    waiting: bool


class LoopResumed(Payload):
    kind = EventType.LOOP_RESUMED
    by: str


class Figures(BaseModel):
    """The run's metrics as the state holds them (`state/models.py`'s `Metrics`), less the
    iterations per step."""

    model_config = STRICT
    total_duration_seconds: float
    average_step_duration: float
    success_rate: float
    first_attempt_success_rate: float
    final_success_rate: float
    reflections_generated: int
    reflection_tokens: int


class LoopCompleted(Payload):
    kind = EventType.LOOP_COMPLETED
    task_path: str
    iterations: int
    metrics: Figures


class StopReached(Payload):
    kind = EventType.STOP_CONDITION
    condition: str
    status: str
    message: str
    exit_code: int
    report: str | None = None
    """The file written for a person: `escalation`, `intervention` or `completion`."""


class StepMetrics(Payload, Figures):
    kind = EventType.METRICS
    step_iterations: int


class UsageLimitWait(Payload):
    kind = EventType.USAGE_LIMIT
    message: str
    waiting_until: str
    """When the limit resets (ISO 8601 UTC)."""
    seconds: float


class Warned(Payload):
    kind = EventType.WARNING
    message: str
    nested: list[str] | None = None
    """The repositories a step made inside the work tree, left out of its commit."""
    branches: list[str] | None = None
    """The branches but the task's that moved during an attempt."""


class LedgerEntry(Payload):
    """What the ledger of steps did (`action`: accepted, reticked, claim_deferred, collided,
    undone, ...); each action carries the fields it names."""

    kind = EventType.LEDGER
    action: str
    reason: str | None = None
    done_by: str | None = None
    verified: bool | None = None
    by: str | None = None
    steps: list[str] | None = None
    landed: list[str] | None = None
    patch: str | None = None
    worktrees: int | None = None
    """How many stale worktrees were removed."""


class ControlPlaneChanged(Payload):
    kind = EventType.CONTROL_PLANE_CHANGED
    paths: list[str]
    count: int


# -- a step and its attempts ------------------------------------------------------------------


class IterationStarted(Payload):
    kind = EventType.ITERATION_STARTED
    attempt: int
    worktree: str | None = None
    """The wave's worktree the step runs in; none for a step run in the work tree."""


class StepStarted(Payload):
    kind = EventType.STEP_STARTED
    title: str


class WaveStarted(Payload):
    kind = EventType.WAVE_STARTED
    steps: list[str]
    parallel: int


class StepCompleted(Payload):
    kind = EventType.STEP_COMPLETED
    attempts: int
    duration_seconds: float | None = None
    """Left out by a follow round's fix, which is timed by its round."""
    commit: str | None = None
    """A follow round's fix names its commit; a step's commit is a `commit` event."""


class StepFailed(Payload):
    kind = EventType.STEP_FAILED
    attempt: int
    approach: str
    signature: str
    mechanism: str
    refused: list[str] = Field(default_factory=list)
    """What the sandbox refused, when it refused anything."""


class AttemptStarted(Payload):
    kind = EventType.ATTEMPT_STARTED
    attempt: int
    agent: str


class AttemptInterrupted(Payload):
    kind = EventType.ATTEMPT_INTERRUPTED
    attempt: int


class TransientRetry(Payload):
    """A retry that costs no attempt: the agent's backoff, the provider's, the LLM client's,
    or (`mechanism: reflection`) the end of the retries."""

    kind = EventType.TRANSIENT_RETRY
    mechanism: str
    wait_seconds: float | None = None
    error: str | None = None
    retry: int | None = None
    retries: int | None = None
    reason: str | None = None
    status: int | None = None
    attempt: int | None = None
    purpose: str | None = None


class Evaluated(Payload):
    kind = EventType.EVALUATION
    attempt: int
    complete: bool
    confidence: float
    reasons: list[str]
    error: str | None = None


class Reinjected(Payload):
    kind = EventType.REINJECTED
    reason: str


class ExamTaken(Payload):
    kind = EventType.EXAM
    attempt: int
    changed: list[str]
    held_out: str | None


class Reviewed(Payload):
    kind = EventType.REVIEW
    attempt: int
    verdict: str
    round: int
    reviewer: str
    reasons: str
    tokens: int
    cost_usd: float


class SandboxDenied(Payload):
    kind = EventType.SANDBOX_DENIED
    host: str
    port: int
    fix: str
    """The config line that allows it."""


# -- reflection -------------------------------------------------------------------------------


class ReflectionGenerated(Payload):
    kind = EventType.REFLECTION_GENERATED
    id: str
    category: str
    source: str
    suggestion: str
    tokens: int


class PostActionReflected(Payload):
    kind = EventType.POST_ACTION_REFLECTION
    outcome: str
    what_worked: str
    what_to_improve: str
    lesson_learned: str


class Replanned(Payload):
    kind = EventType.REPLANNED
    attempt: int
    differences: list[str]
    reflections: list[str]
    guidance: bool


class PersistentFailure(Payload):
    kind = EventType.PERSISTENT_FAILURE
    signature: str


class SystemicIssue(Payload):
    kind = EventType.SYSTEMIC_ISSUE
    signature: str
    tasks: list[str]
    analysis: str


class ReflectionLoopCompleted(Payload):
    kind = EventType.REFLECTION_LOOP_COMPLETED
    iterations: int
    outcome: str


# -- git, the pull request, the follow loop ---------------------------------------------------


class Committed(Payload):
    kind = EventType.COMMIT
    commit: str
    branch: str
    done: bool = False
    """The commit that moved the task to Done/."""
    ticks: bool = False
    """The commit of the last ticks of tasks.md."""


class PullRequest(Payload):
    kind = EventType.PULL_REQUEST
    url: str | None = None
    branch: str | None = None
    warning: str | None = None
    """Why no pull request was opened or updated."""


class Followed(Payload):
    """A step of the follow loop (`action`: started, checks, round, pushed, replied, green,
    not_acted_on); each action carries the fields it names."""

    kind = EventType.FOLLOW
    action: str
    url: str | None = None
    checks: str | None = None
    waiting_for: int | None = None
    round: int | None = None
    rounds: int | None = None
    steps: list[str] | None = None
    head: str | None = None
    thread: str | None = None
    why: str | None = None
