"""Reflections, lessons and judgements from the LLM, through the one shared client.

Each call asks for JSON against a pydantic schema; the client sends schema errors back to the
model (at most twice) and never guesses. Callers fall back to heuristics on any failure.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from akira_cli.reflection.memory import Reflection
from akira_cli.reflection.models import FailureContext, PostActionDraft, ReflectionDraft
from akira_cli.runner import tail
from akira_cli.state.records import Attempt, Evaluation, PostActionReflection, StepRecord
from akira_cli.tasks.model import Step
from akira_cli.templates import render

if TYPE_CHECKING:
    from akira_cli.llm.client import LLMClient


def _ask(client: LLMClient, prompt: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": prompt}]


class LLMReflectionGenerator:
    source = "llm"

    def __init__(self, client: LLMClient) -> None:
        self.client = client

    def generate(self, failure: FailureContext) -> Reflection:
        before = self.client.usage.total_tokens
        prompt = render(
            "reflection.md",
            step_id=failure.step_id,
            description=failure.step_description,
            attempt=failure.attempt,
            approach=failure.approach,
            actions="\n".join(f"- `{a}`" for a in failure.actions) or "- (none recorded)",
            error_output=tail(failure.error_output, 3000),
            previous="\n".join(f"- {p}" for p in failure.previous_reflections) or "- none",
        )
        draft = self.client.structured(_ask(self.client, prompt), ReflectionDraft, purpose="reflection")
        return Reflection(
            id=f"ref-{uuid.uuid4().hex[:12]}",
            task_id=failure.task_id,
            step_id=failure.step_id,
            attempt=failure.attempt,
            category=draft.category,
            analysis=draft.analysis,
            suggestion=draft.suggestion,
            action_items=draft.action_items[:4],
            confidence=draft.confidence,
            source="llm",
            signature=failure.signature,
            tokens=self.client.usage.total_tokens - before,
        )


class LLMLessons:
    """The post-action reflection (a lesson from a completed step); the lengths are enforced by the schema."""

    def __init__(self, client: LLMClient) -> None:
        self.client = client

    def lesson(self, record: StepRecord, attempt: Attempt) -> PostActionReflection:
        failed = [a for a in record.window() if a.outcome == "failure"]
        prompt = render(
            "lesson.md",
            step_id=record.step_id,
            description=record.description,
            attempts=attempt.number,
            approach=attempt.approach,
            failures="\n".join(f"Earlier failure: {a.error.splitlines()[0]}" for a in failed if a.error),
        )
        draft = self.client.structured(_ask(self.client, prompt), PostActionDraft, purpose="lesson")
        return PostActionReflection.model_validate(draft.model_dump())


class Verdict(BaseModel):
    confidence: float = Field(ge=0, le=1)
    reasons: list[str] = Field(default_factory=list)


class LLMJudge:
    """The optional judge of the decision engine: a confidence score and its reasons."""

    def __init__(self, client: LLMClient) -> None:
        self.client = client

    def judge(self, step: Step, evaluation: Evaluation, output: str) -> tuple[float, list[str]]:
        prompt = render(
            "judge.md",
            step_id=step.id,
            description=step.title,
            details="\n".join(f"- {d}" for d in step.details),
            checks="\n".join(f"- {c.name}: {'passed' if c.passed else 'failed'}" for c in evaluation.checks),
            output=tail(output, 3000) or "(no output)",
        )
        verdict = self.client.structured(_ask(self.client, prompt), Verdict, purpose="judge")
        return verdict.confidence, [f"judge: {reason}" for reason in verdict.reasons]
