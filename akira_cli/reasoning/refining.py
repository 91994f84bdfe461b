"""Refinement and adaptation (phases B/C refinement, phase D): deltas tried on a copy of the
plan and validated before the real plan changes, and the profile update at a pass
boundary. Mixed into `ReasoningEngine`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from akira_cli.events import EventBus, EventType
from akira_cli.llm.client import LLMClient
from akira_cli.llm.types import LLMSchemaError
from akira_cli.reasoning.models import (
    ConvergenceAssessment,
    PassRecord,
    Plan,
    ProfileUpdate,
    RefinementAction,
    RepairConflict,
    TTLAllocation,
    ValidationIssue,
    ValidationReport,
)
from akira_cli.reasoning.planner import Planner, RefinementReply, repair_conflicts
from akira_cli.reasoning.profile import reassess_profile, ttl_for
from akira_cli.reasoning.run import Run, applier_of, as_json, dump_issues, plan_of
from akira_cli.reasoning.validation import SemanticValidator
from akira_cli.sections import ReasoningSettings
from akira_cli.words import counted


class Refinement:
    """The engine's refinement steps; the engine provides these collaborators."""

    client: LLMClient
    settings: ReasoningSettings
    bus: EventBus
    planner: Planner
    validator: SemanticValidator

    def _refine_after_pass(self, run: Run, record: PassRecord) -> None:
        """Refinement triggers: validation issues, BLOCKED steps, failed steps, convergence."""
        triggers, issues, ids = triggers_of(plan_of(run), record)
        record.refinements, record.conflicts, record.refinement_validation = self._refine(
            run, triggers, issues, ids
        )
        record.invalidated_step_ids = [
            a.target for a in record.refinements if a.type == "step_mark_invalid" and a.accepted
        ]

    def _refine(
        self,
        run: Run,
        triggers: dict[str, Any],
        issues: Sequence[ValidationIssue],
        trigger_ids: list[str],
    ) -> tuple[list[RefinementAction], list[RepairConflict], ValidationReport | None]:
        """Planner deltas, validated on a trial copy, then applied through the guarded applier.

        Schema trouble keeps the plan as it is."""
        plan, applier = plan_of(run), applier_of(run)
        if applier.exhausted:
            reason = f"refinement limit of {applier.ttl.max_refinements_total} in all reached"
            for step_id in {issue.location for issue in issues} | set(trigger_ids):
                if plan.get(step_id) is not None:
                    applier.mark(step_id, reason)
            self._emit(EventType.WARNING, message=f"{reason}; plan kept as is")
            return [], [], None
        try:
            reply = self.planner.refine(run.task, plan, triggers)
        except LLMSchemaError as exc:
            self._emit(EventType.WARNING, message=f"refinement skipped, plan kept: {exc}")
            return [], [], None
        run.questions += reply.follow_up_questions
        report, vetoed = self._validate_refinement(run, reply, trigger_ids)
        actions = applier.apply_all(
            plan, reply.deltas, trigger_ids, invalidate=reply.invalidate, vetoed=vetoed
        )
        for action in actions:
            data = action.model_dump(exclude={"type"})
            self._emit(EventType.REFINEMENT, action.target, action=action.type, **data)
        conflicts = repair_conflicts(actions, issues)
        for conflict in conflicts:
            self._emit(EventType.REFINEMENT, conflict.target, conflict=conflict.model_dump())
        run.conflicts += conflicts
        return actions, conflicts, report

    def _validate_refinement(
        self, run: Run, reply: RefinementReply, trigger_ids: list[str]
    ) -> tuple[ValidationReport | None, dict[int, str]]:
        """Applies the reply to a copy of the plan and validates the steps it adds or changes.

        Returns the report and, by delta index, why a delta is vetoed: its step got a
        high-severity issue. One LLM call at most; none when no step would change."""
        trial = plan_of(run).model_copy(deep=True)
        actions = (
            applier_of(run).copy().apply_all(trial, reply.deltas, trigger_ids, invalidate=reply.invalidate)
        )
        changed = {
            index: action.target
            for index, action in enumerate(actions[len(reply.invalidate) :])
            if action.accepted and reply.deltas[index].op != "REMOVE"
        }
        if not changed:
            return None, {}
        report = self.validator.validate_fragment(run.task, trial, list(dict.fromkeys(changed.values())))
        self._emit(EventType.VALIDATION, **report.model_dump())
        vetoed = {}
        for index, target in changed.items():
            high = [i for i in report.issues if i.location == target and i.severity == "high"]
            if high:
                vetoed[index] = "refined step failed validation: " + "; ".join(i.description for i in high)
                self._emit(
                    EventType.WARNING, target, message=f"refinement of {target} rejected: {vetoed[index]}"
                )
        return report, vetoed

    # -- Phase D ------------------------------------------------------------------------------

    def _adapt(self, run: Run, record: PassRecord) -> None:
        """Profile update at the pass boundary, only when all three indicators hold."""
        issues = record.validation.issues if record.validation else []
        assessment = record.convergence
        if assessment is None or assessment.converged or not issues:
            return
        if not record.blocked_step_ids:
            return
        codes = assessment.reason_codes
        self._phase("D", pass_number=record.number)
        reason = (
            f"not converged ({', '.join(codes)}); {counted(len(issues), 'validation issue')}; "
            f"BLOCKED step(s): {', '.join(record.blocked_step_ids)}"
        )
        observations = {"reason": reason, "issues": dump_issues(issues)}
        try:
            new = reassess_profile(self.client, run.task, run.profile, as_json(observations))
        except LLMSchemaError as exc:
            self._emit(EventType.WARNING, message=f"profile kept: reassessment unusable: {exc}")
            return
        ttl = ttl_for(new, self.settings)
        update = ProfileUpdate(
            pass_number=record.number,
            reason=reason,
            old=run.profile,
            new=new,
            ttl_before=run.ttl.passes,
            ttl_after=ttl.passes,
            cap_hits=ttl.cap_hits,
        )
        run.profile, run.ttl, applier_of(run).ttl = new, ttl, ttl
        record.profile_update = update
        run.updates.append(update)
        self._emit(EventType.PROFILE_UPDATED, stage="adaptive", **update.model_dump(mode="json"))
        self._warn_caps(ttl)

    def _warn_caps(self, ttl: TTLAllocation) -> None:
        for hit in ttl.cap_hits:
            self._emit(EventType.WARNING, message=f"reasoning cap applied: {hit}")

    def _phase(self, phase: str, **data: Any) -> None:
        self._emit(EventType.REASONING_PHASE, phase=phase, **data)

    def _emit(self, type_: EventType, step_id: str | None = None, **data: Any) -> None:
        self.bus.emit(type_, step_id, **data)


def triggers_of(plan: Plan, record: PassRecord) -> tuple[dict[str, Any], list[ValidationIssue], list[str]]:
    """What a pass leaves for refinement, for the planner; its issues; the ids of the issues
    and of the BLOCKED steps (the deltas' triggers)."""
    issues = record.validation.issues if record.validation else []
    blocked = [step for step in plan.steps if step.status == "invalid" and not step.invalidation]
    failed = [s for s in plan.steps if s.id in record.executed_step_ids and s.status == "failed"]
    replaced = {step.replaces for step in plan.steps}
    invalidated = [s for s in plan.steps if s.invalidation and s.id not in replaced]
    convergence = record.convergence or ConvergenceAssessment(
        converged=False, reason_codes=[], scores={}, thresholds={}
    )
    triggers = {
        "validation_issues": dump_issues(issues),
        "blocked_steps": [{"id": s.id, "step_output": s.step_output} for s in blocked],
        "failed_steps": [{"id": s.id, "error": s.error} for s in failed],
        "invalidated_steps_not_replaced": [{"id": s.id, "reason": s.invalidation} for s in invalidated],
        "convergence": convergence.model_dump(include={"reason_codes", "scores", "detected_issues"}),
    }
    return triggers, issues, [issue.issue_id for issue in issues] + [step.id for step in blocked]
