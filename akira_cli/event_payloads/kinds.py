"""The event types, and the base of their payloads: strict when an event is sent."""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar

from pydantic import BaseModel, ConfigDict


class EventType(StrEnum):
    LOOP_STARTED = "loop_started"
    LOOP_PAUSED = "loop_paused"
    LOOP_RESUMED = "loop_resumed"
    LOOP_COMPLETED = "loop_completed"
    STOP_CONDITION = "stop_condition"
    ITERATION_STARTED = "iteration_started"
    STEP_STARTED = "step_started"
    WAVE_STARTED = "wave_started"
    STEP_COMPLETED = "step_completed"
    STEP_FAILED = "step_failed"
    ATTEMPT_STARTED = "attempt_started"
    ATTEMPT_INTERRUPTED = "attempt_interrupted"
    TRANSIENT_RETRY = "transient_retry"
    EVALUATION = "evaluation"
    REFLECTION_GENERATED = "reflection_generated"
    POST_ACTION_REFLECTION = "post_action_reflection"
    REPLANNED = "replanned"
    PERSISTENT_FAILURE = "persistent_failure"
    SYSTEMIC_ISSUE = "systemic_issue"
    REFLECTION_LOOP_COMPLETED = "reflection_loop_completed"
    METRICS = "metrics"
    REINJECTED = "reinjected"
    LLM_CALL = "llm_call"
    TOOL_CALL = "tool_call"
    REASONING_PHASE = "reasoning_phase"
    REASONING_PASS = "reasoning_pass"
    CONVERGENCE = "convergence"
    REFINEMENT = "refinement"
    VALIDATION = "validation"
    PROFILE_UPDATED = "profile_updated"
    WARNING = "warning"
    LEDGER = "ledger"
    COMMIT = "commit"
    USAGE_LIMIT = "usage_limit"
    CONTROL_PLANE_CHANGED = "control_plane_changed"
    REVIEW = "review"
    PULL_REQUEST = "pull_request"
    FOLLOW = "follow"
    SANDBOX_DENIED = "sandbox_denied"
    EXAM = "exam"


STRICT = ConfigDict(extra="forbid", strict=True, defer_build=True)
"""No unknown key, no coercion (a `"3"` is no int, a bool no number)."""


class Payload(BaseModel):
    """An event's `data` as a model. A field with a default is one some sender leaves out."""

    model_config = STRICT
    kind: ClassVar[EventType]


def registry(*payloads: type[Payload]) -> dict[str, type[Payload]]:
    """Each payload by its type; a type named twice is refused."""
    found: dict[str, type[Payload]] = {}
    for payload in payloads:
        if payload.kind in found:
            raise TypeError(f"{payload.__name__} and {found[payload.kind].__name__} are both {payload.kind}")
        found[payload.kind] = payload
    return found
