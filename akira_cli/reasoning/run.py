"""One reasoning run's record and how it stops: shared by the phase driver and refinement."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from akira_cli.llm.types import LLMError, LLMTransientError
from akira_cli.reasoning.models import (
    Label,
    PassRecord,
    Plan,
    ProfileUpdate,
    RefinementAction,
    RepairConflict,
    TaskProfile,
    TTLAllocation,
    ValidationIssue,
    ValidationReport,
)
from akira_cli.reasoning.planner import DeltaApplier


class Stop(Exception):
    """Ends a run with a label and the reason codes the stop adds."""

    def __init__(self, label: Label, *codes: str, error: str | None = None, transient: bool = False) -> None:
        super().__init__(label)
        self.label: Label = label
        self.codes = list(codes)
        self.error = error
        self.transient = transient

    @classmethod
    def llm_failure(cls, exc: LLMError, code: str = "llm_failure") -> Stop:
        return cls("failed", code, error=str(exc), transient=isinstance(exc, LLMTransientError))


@dataclass
class Run:
    task: str
    context: str
    profile: TaskProfile
    profile_source: Literal["inferred", "default"]
    ttl: TTLAllocation
    plan: Plan | None = None
    applier: DeltaApplier | None = None
    plan_validation: ValidationReport | None = None
    plan_refinements: list[RefinementAction] = field(default_factory=list)
    plan_refinement_validation: ValidationReport | None = None
    passes: list[PassRecord] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    conflicts: list[RepairConflict] = field(default_factory=list)
    updates: list[ProfileUpdate] = field(default_factory=list)
    stop: Stop = field(default_factory=lambda: Stop("failed", "not_run"))
    synthesized: str | None = None


def last_completed(run: Run) -> PassRecord | None:
    """The last pass that was evaluated: the one a result reports."""
    completed = [p for p in run.passes if p.completed and p.convergence is not None]
    return completed[-1] if completed else None


def plan_of(run: Run) -> Plan:
    assert run.plan is not None, "Phase C needs the plan of Phase B"
    return run.plan


def applier_of(run: Run) -> DeltaApplier:
    assert run.applier is not None, "refinement needs the plan of Phase B"
    return run.applier


def dump_issues(items: Sequence[ValidationIssue]) -> list[dict[str, Any]]:
    return [item.model_dump(mode="json", exclude_none=True) for item in items]


def as_json(value: Any) -> str:
    return json.dumps(value, indent=2, default=str)
