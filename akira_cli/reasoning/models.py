"""The typed records of a reasoning run: profile, plan, deltas, reports, passes and the result.

Host-side records refuse unknown keys. The reply models the LLM fills (in the modules that ask
for them) are lenient instead, so a chatty model does not cost a repair round trip.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator

Clarity = Literal["CLEAR", "PARTIALLY_CLEAR", "BLOCKED"]
StepStatus = Literal["pending", "running", "complete", "failed", "invalid", "incomplete"]
Severity = Literal["high", "medium", "low"]
IssueType = Literal[
    "specificity",
    "relevance",
    "do_say_mismatch",
    "hallucination",
    "consistency",
    "cross_phase",
    "other",
]
Label = Literal["converged", "non_converged", "ttl_expired", "failed"]
EXECUTED: frozenset[str] = frozenset({"complete", "failed"})
"""Statuses of executed steps: these are immutable."""
SEVERITY_RANK: dict[str, int] = {"low": 1, "medium": 2, "high": 3}


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Reply(BaseModel):
    """Base of what the LLM fills in: unknown keys are ignored."""

    model_config = ConfigDict(extra="ignore")


class TaskProfile(Reply):
    """Phase A's view of the task (the TaskProfile: how hard, how open, how risky)."""

    reasoning_depth: int = Field(ge=1, le=5)
    """1 (trivial) .. 5 (deep multi-stage reasoning)."""
    information_sufficiency: float = Field(ge=0, le=1)
    """How much of what is needed the task statement already gives."""
    expected_tool_usage: Literal["none", "minimal", "moderate", "extensive"]
    output_breadth: Literal["narrow", "moderate", "broad"]
    confidence_requirement: Literal["low", "medium", "high"]
    raw_inference: str = ""
    """The model's own words on how each dimension was determined."""

    @classmethod
    def default(cls) -> TaskProfile:
        """The fallback when inference fails."""
        return cls(
            reasoning_depth=3,
            information_sufficiency=0.5,
            expected_tool_usage="moderate",
            output_breadth="moderate",
            confidence_requirement="medium",
            raw_inference="default profile: inference failed",
        )


class TTLAllocation(Record):
    """The deterministic budget derived from a profile; see `profile.ttl_for`."""

    passes: int
    max_nesting_depth: int
    max_refinements_per_fragment: int
    max_refinements_total: int
    requested: dict[str, int]
    """What the formula asked for before the global caps."""
    cap_hits: list[str] = Field(default_factory=list)
    """Each value the global caps cut down, so that no cap applies silently."""


class PlannedToolCall(Reply):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolCallRecord(Reply):
    """A tool call a step actually made (filled in by the step executor)."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    output: str = ""
    error: str | None = None


class PlanStep(Record):
    """One declarative step (a node of the plan)."""

    id: str
    description: str
    step_index: int = 0
    total_steps: int = 0
    incoming_context: str | None = None
    handoff_to_next: str | None = None
    dependencies: list[str] = Field(default_factory=list)
    provides: list[str] = Field(default_factory=list)
    status: StepStatus = "pending"
    tool_calls: list[PlannedToolCall] = Field(default_factory=list)
    parent_id: str | None = None
    """Set for a nested step: the step it refines."""
    depth: int = 1
    """Nesting level: top-level steps are 1, their sub-steps 2, and so on."""
    step_output: str | None = None
    clarity_state: Clarity | None = None
    executed_tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    error: str | None = None
    invalidation: str | None = None
    """Why a refinement invalidated this step after it ran. Its status is then
    `invalid`, but it stays executed: its content and output are kept as they were."""
    replaces: str | None = None
    """The invalidated step this one was added to stand in for."""

    @property
    def executed(self) -> bool:
        return self.status in EXECUTED or self.invalidation is not None


class Plan(Record):
    goal: str
    steps: list[PlanStep] = Field(default_factory=list)
    follow_up_questions: list[str] = Field(default_factory=list)

    def get(self, step_id: str) -> PlanStep | None:
        return next((step for step in self.steps if step.id == step_id), None)

    def ids(self) -> set[str]:
        return {step.id for step in self.steps}

    def renumber(self) -> None:
        """Keeps `step_index`/`total_steps` current on the steps not yet executed."""
        for index, step in enumerate(self.steps, start=1):
            if not step.executed:
                step.step_index, step.total_steps = index, len(self.steps)

    def ready(self) -> list[PlanStep]:
        """Pending steps whose dependencies have all completed. A dependency that names no step
        of the plan (a model writes "none", or a description) is ignored here; the host
        validation reports it as `missing_dependency`."""
        ids = self.ids()
        done = {step.id for step in self.steps if step.status == "complete"}
        return [
            step
            for step in self.steps
            if step.status == "pending" and all(dep in done or dep not in ids for dep in step.dependencies)
        ]

    def terminal_steps(self) -> list[PlanStep]:
        """The completed steps no other completed step builds on: together, the answer."""
        complete = [step for step in self.steps if step.status == "complete"]
        used = {dep for step in complete for dep in step.dependencies}
        return [step for step in complete if step.id not in used]

    def answer(self) -> str:
        """The outputs of the terminal steps, in plan order."""
        outputs = [step.step_output or "" for step in self.terminal_steps()]
        return "\n\n".join(text for text in outputs if text)


class Delta(Reply):
    """One refinement operation. Ids are stable: MODIFY/REMOVE name an existing step."""

    op: Literal["ADD", "MODIFY", "REMOVE"]
    step_id: str = ""
    """The target of MODIFY/REMOVE, or the proposed id of an added step."""
    description: str | None = None
    dependencies: list[str] | None = None
    provides: list[str] | None = None
    tool_calls: list[PlannedToolCall] | None = None
    incoming_context: str | None = None
    handoff_to_next: str | None = None
    parent_id: str | None = None
    """ADD only: nest the new step under this one."""
    replaces: str | None = None
    """ADD only: the invalidated step the new one stands in for; the pending steps that needed
    it depend on the new step instead (an invalidated step never runs again)."""
    reason: str = ""

    @field_validator("op", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    def changes(self) -> dict[str, Any]:
        keep = {"op", "step_id", "reason"}
        return {k: v for k, v in self.model_dump(exclude_none=True).items() if k not in keep}


class Invalidation(Reply):
    """The planner's report that its rewrite conflicts with an executed step."""

    step_id: str
    reason: str = ""


class ValidationIssue(Record):
    issue_id: str
    type: IssueType
    severity: Severity
    description: str
    location: str = ""
    """A step id, or `plan` / `answer`."""
    proposed_repair: str = ""
    repair: Delta | None = None
    """The repair as a delta, when the validator proposed one (advisory)."""
    source: Literal["host", "llm"] = "llm"
    code: str = ""
    """Host checks: `unknown_tool`, `dependency_cycle`, `missing_dependency`."""


class ValidationReport(Record):
    validation_id: str
    artifact_type: Literal["plan", "execution", "fragment"]
    """`fragment`: the steps a refinement changed, checked before the change is accepted."""
    issues: list[ValidationIssue] = Field(default_factory=list)
    error: str | None = None
    """Set when the LLM judgement could not be had; the host checks still ran."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def overall_severity(self) -> Severity | None:
        ranked = sorted(self.issues, key=lambda issue: SEVERITY_RANK[issue.severity])
        return ranked[-1].severity if ranked else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def issue_summary(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for issue in self.issues:
            counts[issue.type] = counts.get(issue.type, 0) + 1
        return counts


class ConvergenceAssessment(Record):
    converged: bool
    reason_codes: list[str]
    scores: dict[str, float]
    thresholds: dict[str, float]
    failed_criteria: list[str] = Field(default_factory=list)
    detected_issues: list[str] = Field(default_factory=list)
    consistency_status: dict[str, str] = Field(default_factory=dict)
    """Alignment of plan/steps/answer as the model judged it."""
    rationale: str = ""


ActionType = Literal["step_add", "subplan_create", "step_modify", "step_remove", "step_mark_invalid"]


class RefinementAction(Record):
    """One delta as the host handled it (a refinement action and its result)."""

    type: ActionType
    target: str
    changes: dict[str, Any] = Field(default_factory=dict)
    reason: str = ""
    accepted: bool = True
    rejection: str | None = None
    triggered_by: list[str] = Field(default_factory=list)
    """Ids of the issues or steps that called for refinement."""


class RepairConflict(Record):
    """A validator repair the planner's refinement overrode."""

    target: str
    issue_id: str
    validator_repair: dict[str, Any]
    planner_change: dict[str, Any]
    resolution: str = "planner refinement applied; validator repair kept as advisory"


class ProfileUpdate(Record):
    pass_number: int
    reason: str
    old: TaskProfile
    new: TaskProfile
    ttl_before: int
    ttl_after: int
    cap_hits: list[str] = Field(default_factory=list)


class PassRecord(Record):
    number: int
    executed_step_ids: list[str] = Field(default_factory=list)
    blocked_step_ids: list[str] = Field(default_factory=list)
    abandoned_step_ids: list[str] = Field(default_factory=list)
    validation: ValidationReport | None = None
    convergence: ConvergenceAssessment | None = None
    refinements: list[RefinementAction] = Field(default_factory=list)
    refinement_validation: ValidationReport | None = None
    """The check of the refined fragments before they were accepted."""
    invalidated_step_ids: list[str] = Field(default_factory=list)
    conflicts: list[RepairConflict] = Field(default_factory=list)
    profile_update: ProfileUpdate | None = None
    answer: str = ""
    answer_step_ids: list[str] = Field(default_factory=list)
    """The terminal steps whose outputs make up `answer`."""
    ttl_remaining: int = 0
    started_at: float = 0.0
    ended_at: float = 0.0
    duration_s: float = 0.0
    completed: bool = False
    """True once the pass was evaluated (it has a convergence assessment)."""
    error: str | None = None


class ManualIntervention(Record):
    """A fragment a limit stopped refining; its work so far is kept as it is."""

    step_id: str
    reason: str


class ReasoningResult(Record):
    task: str
    answer: str
    synthesized: bool = False
    """True when one extra call merged the outputs of several terminal steps into `answer`."""
    converged: bool
    label: Label
    profile: TaskProfile
    profile_source: Literal["inferred", "default"]
    ttl: TTLAllocation
    plan: Plan | None = None
    plan_validation: ValidationReport | None = None
    plan_refinements: list[RefinementAction] = Field(default_factory=list)
    plan_refinement_validation: ValidationReport | None = None
    passes: list[PassRecord] = Field(default_factory=list)
    scores: dict[str, float] = Field(default_factory=dict)
    reason_codes: list[str] = Field(default_factory=list)
    manual_intervention: list[ManualIntervention] = Field(default_factory=list)
    follow_up_questions: list[str] = Field(default_factory=list)
    profile_updates: list[ProfileUpdate] = Field(default_factory=list)
    conflicts: list[RepairConflict] = Field(default_factory=list)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None
    error_transient: bool = False
    """The API failure in `error` survived the client's retries (`LLMTransientError`): trying
    again later may work. False for a permanent failure (bad key, unknown model)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        """The JSON form `akira reason --json` prints."""
        return self.model_dump(mode="json")

    def describe(self) -> list[str]:
        """The labelled metadata lines printed with the answer."""
        p = self.profile
        passes = f"{len(self.passes)} pass{'es' if len(self.passes) != 1 else ''}"
        status = self.label if self.converged else f"{self.label} (not converged)"
        lines = [
            f"result: {status} after {passes} (TTL {self.ttl.passes})",
            f"profile ({self.profile_source}): depth {p.reasoning_depth}, "
            f"sufficiency {p.information_sufficiency:.2f}, tools {p.expected_tool_usage}, "
            f"breadth {p.output_breadth}, confidence {p.confidence_requirement}",
        ]
        if self.scores:
            lines.append("scores: " + ", ".join(f"{k} {v:.2f}" for k, v in self.scores.items()))
        lines.append("reason codes: " + (", ".join(self.reason_codes) or "none"))
        lines += [f"cap applied: {hit}" for hit in self.ttl.cap_hits]
        lines += [f"needs a person: {m.step_id}: {m.reason}" for m in self.manual_intervention]
        steps = self.plan.steps if self.plan else []
        lines += [f"invalidated: {s.id}: {s.invalidation}" for s in steps if s.invalidation]
        lines += [f"question: {q}" for q in self.follow_up_questions]
        if self.error:
            lines.append(f"error: {self.error}")
        lines.append(f"LLM calls: {self.calls}, tokens: {self.total_tokens}")
        return lines

    def report(self) -> str:
        """What `akira reason` prints: the labelled lines, then the answer."""
        source = " (synthesized from the final steps)" if self.synthesized else ""
        answer = self.answer or "(no answer: no step completed)"
        return "\n".join([*self.describe(), "", f"answer{source}:", answer])
