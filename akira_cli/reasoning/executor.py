"""How a plan step is carried out. The engine builds the prompt; an executor runs it.

The default asks the model for `{"step_output", "clarity_state"}`. A tool-using agent plugs in
through the same `StepExecutor` protocol and reports the calls it made in `tool_calls`; it may
check `ReasoningEngine.ttl_expired()` between tool calls (a safe boundary), never during one.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import Field

from akira_cli.llm.client import LLMClient
from akira_cli.reasoning import prompts
from akira_cli.reasoning.models import Clarity, PlanStep, Reply, ToolCallRecord


class StepOutcome(Reply):
    step_output: str
    clarity_state: Clarity = "CLEAR"
    """CLEAR or PARTIALLY_CLEAR complete the step; BLOCKED makes it invalid."""
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)


class StepReply(Reply):
    """What the default executor asks the model for."""

    step_output: str
    clarity_state: Clarity


class StepExecutor(Protocol):
    def execute(self, step: PlanStep, prompt: str) -> StepOutcome:
        """Carries out one step. Raise `LLMError` for API trouble; the pass then fails."""
        ...


class LLMStepExecutor:
    """One structured call per step: the model answers the step prompt directly."""

    def __init__(self, client: LLMClient) -> None:
        self.client = client

    def execute(self, step: PlanStep, prompt: str) -> StepOutcome:
        messages = [
            {"role": "system", "content": prompts.render("system")},
            {"role": "user", "content": prompt},
        ]
        reply = self.client.structured(messages, StepReply, purpose=f"reasoning.step.{step.id}")
        return StepOutcome(step_output=reply.step_output, clarity_state=reply.clarity_state)


def step_prompt(step: PlanStep, task: str) -> str:
    """A plan step's prompt, from the step's own fields."""
    tools = ", ".join(call.name for call in step.tool_calls) or "none"
    return prompts.render(
        "step",
        task=task,
        step_index=str(step.step_index),
        total_steps=str(step.total_steps),
        incoming_context=step.incoming_context or "(none: this step starts from the task)",
        description=step.description,
        handoff_to_next=step.handoff_to_next or "(nothing in particular)",
        tools=tools,
    )
