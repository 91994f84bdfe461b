"""Convergence: the model scores the work, the host compares the scores with the thresholds.

Completeness, coherence and consistency default to >= 0.95, 0.90 and 0.90; custom
criteria add named thresholds. The validator's report goes into the judgement. The
model never says "stop": `converged` is computed here from its scores and the plan's state.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from akira_cli.llm.client import LLMClient
from akira_cli.reasoning import prompts
from akira_cli.reasoning.models import ConvergenceAssessment, Plan, Reply, ValidationReport
from akira_cli.sections import ReasoningSettings


class ConvergenceReply(Reply):
    completeness: float = 0.0
    coherence: float = 0.0
    consistency: float = 0.0
    custom_scores: dict[str, float] = Field(default_factory=dict)
    detected_issues: list[str] = Field(default_factory=list)
    consistency_status: dict[str, str] = Field(default_factory=dict)
    rationale: str = ""

    @field_validator("completeness", "coherence", "consistency")
    @classmethod
    def _unit(cls, value: float) -> float:
        return min(1.0, max(0.0, value))


def thresholds(settings: ReasoningSettings) -> dict[str, float]:
    return {
        "completeness": settings.completeness_threshold,
        "coherence": settings.coherence_threshold,
        "consistency": settings.consistency_threshold,
        **settings.custom_criteria,
    }


def assess(reply: ConvergenceReply, settings: ReasoningSettings, plan: Plan) -> ConvergenceAssessment:
    """The host's decision from the model's scores and the plan's own state."""
    limits = thresholds(settings)
    scores = {
        "completeness": reply.completeness,
        "coherence": reply.coherence,
        "consistency": reply.consistency,
    }
    scores |= {
        name: min(1.0, max(0.0, reply.custom_scores.get(name, 0.0))) for name in settings.custom_criteria
    }
    failed = [name for name, limit in limits.items() if scores[name] < limit]
    codes = [f"{name}_below_threshold" for name in failed]
    codes += _plan_codes(plan)
    if failed and len(failed) < len(limits):
        codes.append("criteria_conflict")
    converged = not codes
    if converged:
        codes = [f"{name}_met" for name in limits]
    return ConvergenceAssessment(
        converged=converged,
        reason_codes=codes,
        scores=scores,
        thresholds=limits,
        failed_criteria=failed,
        detected_issues=reply.detected_issues,
        consistency_status=reply.consistency_status,
        rationale=reply.rationale,
    )


def _plan_codes(plan: Plan) -> list[str]:
    """Host facts that rule convergence out whatever the scores say."""
    statuses = {step.status for step in plan.steps}
    codes = []
    if "pending" in statuses or "incomplete" in statuses:
        codes.append("steps_pending")
    if not any(step.status == "complete" for step in plan.steps):
        codes.append("no_output")
    return codes


class ConvergenceEngine:
    def __init__(self, client: LLMClient, settings: ReasoningSettings) -> None:
        self.client = client
        self.settings = settings

    def evaluate(self, task: str, plan: Plan, answer: str, report: ValidationReport) -> ConvergenceAssessment:
        """One LLM call for the scores, then the host's decision. Raises LLMError."""
        custom = ", ".join(self.settings.custom_criteria) or "none"
        messages = prompts.messages(
            "converge", task=task, plan=plan, answer=answer, report=report, custom=custom
        )
        reply = self.client.structured(messages, ConvergenceReply, purpose="reasoning.converge")
        return assess(reply, self.settings, plan)
