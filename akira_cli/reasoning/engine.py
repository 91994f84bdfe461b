"""The phase driver: A (profile, TTL) -> B (plan, validate, refine) -> C passes (-> D).

Every run ends by raising `Stop`, which carries its label and reason codes; the result is
assembled from what the run recorded, whatever stopped it. The model only fills in structured
replies; the decisions to continue, refine, adapt or stop are all taken here.

TTL is counted in execution passes (see `profile.ttl_for`). An optional wall-clock budget is
checked at phase boundaries and at safe step boundaries: before a step starts, never inside one,
so a running tool is never interrupted.

A refinement is tried on a copy of the plan first; the steps it would add or change are then
validated (host checks, one LLM call) and a delta whose step gets a high-severity issue is
refused before the real plan changes. A converged or pass-TTL-expired run that ends in
several terminal steps gets one more call that merges their outputs (see `synthesis`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

from akira_cli.events import EventBus, EventType
from akira_cli.llm.client import LLMClient
from akira_cli.llm.types import LLMError, LLMSchemaError
from akira_cli.reasoning import synthesis
from akira_cli.reasoning.convergence import ConvergenceEngine, thresholds
from akira_cli.reasoning.drafting import build_plan, ensure_a_step
from akira_cli.reasoning.executor import LLMStepExecutor, StepExecutor, step_prompt
from akira_cli.reasoning.models import (
    ConvergenceAssessment,
    PassRecord,
    Plan,
    PlanStep,
    ReasoningResult,
    ValidationReport,
)
from akira_cli.reasoning.planner import Planner
from akira_cli.reasoning.profile import infer_profile, ttl_for
from akira_cli.reasoning.refining import Refinement
from akira_cli.reasoning.run import Run, Stop, dump_issues, last_completed, plan_of
from akira_cli.reasoning.validation import SemanticValidator
from akira_cli.sections import ReasoningSettings


class ReasoningEngine(Refinement):
    """Runs one task at a time through the phases; see the module doc."""

    def __init__(
        self,
        client: LLMClient,
        settings: ReasoningSettings,
        *,
        bus: EventBus | None = None,
        tools: Sequence[str] = (),
        executor: StepExecutor | None = None,
        clock: Callable[[], float] = time.monotonic,
        time_budget_s: float | None = None,
        synthesize: bool = True,
        host_checks: Callable[[], bool] | None = None,
    ) -> None:
        """`synthesize=False` keeps the terminal steps' outputs as the answer, saving a call
        where nobody reads it as prose (the `llm` agent's work is judged by its checks)."""
        self.client = client
        self.settings = settings
        self.bus = bus or EventBus()
        self.tools = list(tools)
        self.executor = executor or LLMStepExecutor(client)
        self.clock = clock
        self.time_budget_s = time_budget_s
        self.synthesize = synthesize
        self.host_checks = host_checks
        """A loop step's checks, run after each execution pass: when they pass, the run converges
        (`checks_passed`) with no validation or convergence call."""
        self.planner = Planner(client, self.tools)
        self.validator = SemanticValidator(client, self.tools)
        self.convergence = ConvergenceEngine(client, settings)
        self._deadline: float | None = None

    def ttl_expired(self) -> bool:
        """True once the wall-clock budget is spent; executors may ask between tool calls."""
        return self._deadline is not None and self.clock() >= self._deadline

    def run(self, task: str, context: str = "") -> ReasoningResult:
        """Never raises for LLM trouble: the result's label and error say what happened."""
        budget = self.time_budget_s
        self._deadline = None if budget is None else self.clock() + budget
        usage_before = _usage(self.client)
        run = self._phase_a(task, context)
        try:
            self._phase_b(run)
            while True:
                self._execution_pass(run)
        except Stop as stop:
            run.stop = stop
        self._synthesize(run)
        return self._result(run, usage_before)

    # -- Phase A ------------------------------------------------------------------------------

    def _phase_a(self, task: str, context: str) -> Run:
        self._phase("A")
        profile, problem = infer_profile(self.client, task, context)
        if problem:
            self._emit(EventType.WARNING, message=f"{problem}; using the default profile")
        ttl = ttl_for(profile, self.settings)
        source: Literal["inferred", "default"] = "default" if problem else "inferred"
        self._emit(
            EventType.PROFILE_UPDATED,
            stage="initial",
            source=source,
            profile=profile.model_dump(),
            ttl=ttl.model_dump(),
        )
        self._warn_caps(ttl)
        return Run(task=task, context=context, profile=profile, profile_source=source, ttl=ttl)

    # -- Phase B ------------------------------------------------------------------------------

    def _phase_b(self, run: Run) -> None:
        self._phase("B", stage="plan")
        self._boundary()
        try:
            draft = self.planner.draft(run.task, run.context, run.profile, run.ttl)
            run.plan, run.applier, refused, mended = build_plan(run.task, draft, run.ttl)
            for action in refused:
                self._emit(EventType.WARNING, action.target, message=f"plan step refused: {action.rejection}")
            for warning in mended:
                self._emit(EventType.WARNING, message=warning)
            run.questions += draft.follow_up_questions
            self._phase("B", stage="validate", steps=len(run.plan.steps))
            report = self._validate(run, run.plan)
            run.plan_validation = report
            if report.issues:
                self._phase("B", stage="refine")
                triggers = {"validation_issues": dump_issues(report.issues)}
                ids = [issue.issue_id for issue in report.issues]
                refined = self._refine(run, triggers, report.issues, ids)
                run.plan_refinements, _, run.plan_refinement_validation = refined
            added = ensure_a_step(run.plan, run.applier)
            if added:
                self._emit(EventType.WARNING, message=added)
        except LLMSchemaError as exc:
            raise Stop("failed", "plan_unusable", error=str(exc)) from None
        except LLMError as exc:
            raise Stop.llm_failure(exc) from None

    # -- Phase C ------------------------------------------------------------------------------

    def _execution_pass(self, run: Run) -> None:
        plan = plan_of(run)
        number = len(run.passes) + 1
        if number > run.ttl.passes:
            raise Stop("ttl_expired", "ttl_expired")
        self._boundary()
        if not plan.ready():
            raise Stop("non_converged", "no_runnable_steps")
        self._phase("C", pass_number=number)
        record = PassRecord(number=number, started_at=self.clock(), ttl_remaining=run.ttl.passes - number)
        run.passes.append(record)
        try:
            self._execute_batch(run, record)
            self._boundary()
            self._evaluate(run, record)
            self._decide(run, record)
            self._boundary()
            self._refine_after_pass(run, record)
            self._adapt(run, record)
        except LLMError as exc:
            record.error = str(exc)
            raise Stop.llm_failure(exc) from None
        finally:
            self._close_pass(record)

    def _execute_batch(self, run: Run, record: PassRecord) -> None:
        ready = plan_of(run).ready()
        for step in ready:
            if step.dependencies:
                step.incoming_context = _incoming(plan_of(run), step)
        workers = max(1, min(self.settings.max_parallel_steps, len(ready)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="akira-step") as pool:
            errors = list(pool.map(lambda step: self._execute_step(run, step), ready))
        record.executed_step_ids = [s.id for s in ready if s.status != "incomplete"]
        record.blocked_step_ids = [s.id for s in ready if s.status == "invalid"]
        record.abandoned_step_ids = [s.id for s in ready if s.status == "incomplete"]
        failure = next((error for error in errors if error is not None), None)
        if failure is not None:
            raise failure

    def _execute_step(self, run: Run, step: PlanStep) -> LLMError | None:
        """One step; a safe boundary before it. Returns an API failure instead of raising."""
        if self.ttl_expired():
            step.status = "incomplete"
            self._emit(EventType.REASONING_PASS, step.id, stage="step_abandoned")
            return None
        step.status = "running"
        self._emit(EventType.REASONING_PASS, step.id, stage="step_started")
        try:
            outcome = self.executor.execute(step, step_prompt(step, run.task))
        except LLMError as exc:
            step.status, step.error = "failed", str(exc)
            self._emit(EventType.REASONING_PASS, step.id, stage="step_failed", error=str(exc))
            return None if isinstance(exc, LLMSchemaError) else exc
        step.step_output, step.clarity_state = outcome.step_output, outcome.clarity_state
        step.executed_tool_calls = outcome.tool_calls
        step.status = "invalid" if outcome.clarity_state == "BLOCKED" else "complete"
        self._emit(
            EventType.REASONING_PASS,
            step.id,
            stage="step_finished",
            status=step.status,
            clarity_state=step.clarity_state,
        )
        return None

    def _evaluate(self, run: Run, record: PassRecord) -> None:
        plan = plan_of(run)
        record.answer = plan.answer()
        record.answer_step_ids = [step.id for step in plan.terminal_steps()]
        if self.host_checks is not None and self.host_checks():
            assessment = ConvergenceAssessment(
                converged=True,
                reason_codes=["checks_passed"],
                scores={},
                thresholds=thresholds(self.settings),
                rationale="the step's checks pass",
            )
            record.convergence, record.completed = assessment, True
            self._emit(EventType.CONVERGENCE, pass_number=record.number, **assessment.model_dump())
            return
        record.validation = self._validate(run, plan, answer=record.answer)
        try:
            assessment = self.convergence.evaluate(run.task, plan, record.answer, record.validation)
        except LLMSchemaError as exc:
            assessment = ConvergenceAssessment(
                converged=False,
                reason_codes=["convergence_unavailable"],
                scores={},
                thresholds=thresholds(self.settings),
                detected_issues=[str(exc)],
            )
        record.convergence, record.completed = assessment, True
        self._emit(EventType.CONVERGENCE, pass_number=record.number, **assessment.model_dump())

    def _decide(self, run: Run, record: PassRecord) -> None:
        """The host's decision: converged, TTL expired, or refine (by returning)."""
        if record.convergence is not None and record.convergence.converged:
            raise Stop("converged")
        if record.number >= run.ttl.passes:
            raise Stop("ttl_expired", "ttl_expired")

    # -- helpers ------------------------------------------------------------------------------

    def _validate(self, run: Run, plan: Plan, answer: str | None = None) -> ValidationReport:
        report = self.validator.validate(run.task, plan, answer=answer)
        self._emit(EventType.VALIDATION, **report.model_dump())
        return report

    def _boundary(self) -> None:
        if self.ttl_expired():
            raise Stop("ttl_expired", "ttl_expired", "time_budget_spent")

    def _close_pass(self, record: PassRecord) -> None:
        record.ended_at = self.clock()
        record.duration_s = round(record.ended_at - record.started_at, 6)
        self._emit(
            EventType.REASONING_PASS,
            stage="end",
            pass_number=record.number,
            executed=record.executed_step_ids,
            blocked=record.blocked_step_ids,
            abandoned=record.abandoned_step_ids,
            completed=record.completed,
            error=record.error,
        )

    def _synthesize(self, run: Run) -> None:
        """One call merging the answer's terminal steps, when there are several (`synthesis`).

        Only for a converged run or one whose pass TTL expired: after an API failure another call
        is pointless, and a spent wall-clock budget allows none. A failed merge keeps the
        outputs as they are."""
        last, stop = last_completed(run), run.stop
        if not self.synthesize or last is None or run.plan is None:
            return
        if stop.label not in {"converged", "ttl_expired"} or "time_budget_spent" in stop.codes:
            return
        steps = [step for sid in last.answer_step_ids if (step := run.plan.get(sid)) is not None]
        if len(steps) < 2:
            return
        self._phase("end", stage="synthesize", steps=[step.id for step in steps])
        try:
            answer = synthesis.synthesize(self.client, run.task, steps)
        except LLMError as exc:
            stop.codes.append("synthesis_unavailable")
            self._emit(EventType.WARNING, message=f"answer kept as the step outputs: {exc}")
            return
        run.synthesized = answer or None

    def _result(self, run: Run, before: tuple[int, int, int]) -> ReasoningResult:
        stop = run.stop
        calls, prompt_tokens, completion_tokens = (
            now - then for now, then in zip(_usage(self.client), before, strict=True)
        )
        last = last_completed(run)
        partial = last is None and stop.label != "converged"
        answer = last.answer if last else (run.plan.answer() if run.plan else "")
        answer = run.synthesized or answer
        codes = list(last.convergence.reason_codes) if last and last.convergence else []
        codes += stop.codes + (["partial_result"] if partial and run.passes else [])
        if run.applier is not None and run.applier.exhausted:
            codes.append("refinement_limit_reached")
        result = ReasoningResult(
            task=run.task,
            answer=answer,
            synthesized=run.synthesized is not None,
            converged=stop.label == "converged",
            label=stop.label,
            profile=run.profile,
            profile_source=run.profile_source,
            ttl=run.ttl,
            plan=run.plan,
            plan_validation=run.plan_validation,
            plan_refinements=run.plan_refinements,
            plan_refinement_validation=run.plan_refinement_validation,
            passes=run.passes,
            scores=dict(last.convergence.scores) if last and last.convergence else {},
            reason_codes=list(dict.fromkeys(codes)),
            manual_intervention=run.applier.interventions() if run.applier else [],
            follow_up_questions=list(dict.fromkeys(run.questions)),
            profile_updates=run.updates,
            conflicts=run.conflicts,
            calls=calls,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            error=stop.error,
            error_transient=stop.transient,
        )
        self._phase("end", label=result.label, converged=result.converged, passes=len(run.passes))
        return result


def _usage(client: LLMClient) -> tuple[int, int, int]:
    usage = client.usage
    return usage.calls, usage.prompt_tokens, usage.completion_tokens


def _incoming(plan: Plan, step: PlanStep) -> str:
    """The actual upstream context: the outputs of the step's dependencies."""
    parts = []
    for dep_id in step.dependencies:
        dep = plan.get(dep_id)
        if dep is not None:
            parts.append(f"[{dep.id}] {dep.description}\n{dep.step_output or ''}".strip())
    return "\n\n".join(parts)
