"""The final answer: the outputs of the terminal steps, merged by one call when there are several.

A plan whose last steps fan in to one step already ends in one answer: that step's output. A
plan that ends in several independent steps (say "design auth" and "design storage") would
otherwise hand the reader their outputs glued together, with no sentence relating them; for
`akira reason`, whose user wants one answer to one question, one extra call merges them. The
merge adds no new judgement: the convergence scores stand for the step outputs it was given.
"""

from __future__ import annotations

from collections.abc import Sequence

from akira_cli.llm.client import LLMClient
from akira_cli.reasoning import prompts
from akira_cli.reasoning.models import PlanStep, Reply


class SynthesisReply(Reply):
    answer: str


def synthesize(client: LLMClient, task: str, steps: Sequence[PlanStep]) -> str:
    """One structured call over the terminal steps' outputs. Raises LLMError."""
    outputs = "\n\n".join(
        f"[{step.id}] {step.description}\n{step.step_output or ''}".strip() for step in steps
    )
    messages = prompts.messages("synthesize", task=task, outputs=outputs)
    reply = client.structured(messages, SynthesisReply, purpose="reasoning.synthesize")
    return reply.answer.strip()
