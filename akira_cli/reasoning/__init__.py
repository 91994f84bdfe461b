"""The adaptive multi-pass reasoning engine behind the `llm` agent and `akira reason`.

Phase A infers a TaskProfile and derives a TTL; Phase B plans, validates and refines before
anything runs; Phase C executes passes (batch, evaluate, decide, refine); Phase D may update
the profile at a pass boundary. The LLM only emits structured signals; the host decides.
"""

from akira_cli.reasoning.engine import ReasoningEngine
from akira_cli.reasoning.executor import LLMStepExecutor, StepExecutor, StepOutcome
from akira_cli.reasoning.models import (
    ConvergenceAssessment,
    Delta,
    PassRecord,
    Plan,
    PlanStep,
    ReasoningResult,
    TaskProfile,
    ToolCallRecord,
    TTLAllocation,
    ValidationIssue,
    ValidationReport,
)
from akira_cli.reasoning.profile import ttl_for

__all__ = [
    "ConvergenceAssessment",
    "Delta",
    "LLMStepExecutor",
    "PassRecord",
    "Plan",
    "PlanStep",
    "ReasoningEngine",
    "ReasoningResult",
    "StepExecutor",
    "StepOutcome",
    "TTLAllocation",
    "TaskProfile",
    "ToolCallRecord",
    "ValidationIssue",
    "ValidationReport",
    "ttl_for",
]
