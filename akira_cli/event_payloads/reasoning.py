"""The payloads of the LLM client's events, its tools' and the reasoning engine's."""

from __future__ import annotations

from typing import Any

from akira_cli.event_payloads.kinds import EventType, Payload

# -- the LLM client, its tools and the reasoning engine ---------------------------------------


class LLMCall(Payload):
    kind = EventType.LLM_CALL
    purpose: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    duration_seconds: float
    streamed: bool
    usage_estimated: bool = False


class ToolCall(Payload):
    kind = EventType.TOOL_CALL
    name: str
    arguments: str
    error: bool
    message: str | None = None
    """The first line of a failed call's output."""


class ReasoningPhase(Payload):
    kind = EventType.REASONING_PHASE
    phase: str
    stage: str | None = None
    pass_number: int | None = None
    steps: int | list[str] | None = None
    """How many steps the plan has (phase B), or the ones merged (the end)."""
    attempt: int | None = None
    label: str | None = None
    converged: bool | None = None
    passes: int | None = None


class ReasoningPass(Payload):
    kind = EventType.REASONING_PASS
    stage: str
    pass_number: int | None = None
    status: str | None = None
    clarity_state: str | None = None
    error: str | None = None
    executed: list[str] | None = None
    blocked: list[str] | None = None
    abandoned: list[str] | None = None
    completed: bool | None = None


class Convergence(Payload):
    """A pass's convergence assessment (`reasoning/models.py`), with its pass number."""

    kind = EventType.CONVERGENCE
    pass_number: int
    converged: bool
    reason_codes: list[str]
    scores: dict[str, float]
    thresholds: dict[str, float]
    failed_criteria: list[str]
    detected_issues: list[str]
    consistency_status: dict[str, str]
    rationale: str


class Refinement(Payload):
    """An applied refinement action (`action` and the action's fields), or a conflict between
    the validator's repair and the planner's change (`conflict`)."""

    kind = EventType.REFINEMENT
    action: str | None = None
    target: str | None = None
    changes: dict[str, Any] | None = None
    reason: str | None = None
    accepted: bool | None = None
    rejection: str | None = None
    triggered_by: list[str] | None = None
    conflict: dict[str, Any] | None = None


class Validation(Payload):
    """A validation report (`reasoning/models.py`); its issues as they are dumped."""

    kind = EventType.VALIDATION
    validation_id: str
    artifact_type: str
    issues: list[dict[str, Any]]
    error: str | None
    overall_severity: str | None
    issue_summary: dict[str, int]


class ProfileUpdated(Payload):
    """The task's profile: the first (`stage: initial`) or a pass's update (`adaptive`)."""

    kind = EventType.PROFILE_UPDATED
    stage: str
    source: str | None = None
    profile: dict[str, Any] | None = None
    ttl: dict[str, Any] | None = None
    pass_number: int | None = None
    reason: str | None = None
    old: dict[str, Any] | None = None
    new: dict[str, Any] | None = None
    ttl_before: int | None = None
    ttl_after: int | None = None
    cap_hits: list[str] | None = None
