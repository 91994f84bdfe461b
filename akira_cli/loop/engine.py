"""The per-step engine (docs/design.md): execute -> evaluate -> classify -> reflect -> re-plan.

One call to `attempt` is one iteration of the loop. Transient failures are retried here with
backoff and cost no iteration; strategic ones are recorded, reflected on, and either retried by
the loop's next iteration or turned into a stop (persistent failure, exhausted step).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from akira_cli.agents.base import Agent, AgentRequest, AgentResult
from akira_cli.backoff import Retries
from akira_cli.checks import AgentCheck, Check, Judge, evaluate, step_checks
from akira_cli.config import Config
from akira_cli.control_plane import ControlPlane
from akira_cli.errors import ForceStopped, LoopStop
from akira_cli.events import EventBus, EventType, utcnow
from akira_cli.failures import signature
from akira_cli.loop.conditions import replaced_stop
from akira_cli.loop.control import Control
from akira_cli.loop.evidence import CheckpointAgent, evidence_check, is_checkpoint, require_project_checks
from akira_cli.loop.iteration import Iteration
from akira_cli.loop.lanes import Lane, MainLane, Pending
from akira_cli.loop.outcomes import Outcomes
from akira_cli.loop.partners import Commits, Exam, Reviewer
from akira_cli.loop.provider_faults import FaultWaiter
from akira_cli.loop.usage_limits import LimitWaiter
from akira_cli.loop.witness import Witness
from akira_cli.redaction import redact
from akira_cli.runner import CommandRunner, tail
from akira_cli.state.models import LoopState
from akira_cli.state.records import Attempt, StepRecord
from akira_cli.step_prompts import reinjection_reason
from akira_cli.tasks.model import Step, TaskFile
from akira_cli.usage import Usage
from akira_cli.workspace import Workspace, work_folder

RETRY_BASE = 0.5
"""A transient failure's first retry waits 0.25-0.5 s, doubling (unless
`autonomous_loop.exponential_backoff` is off) up to `RETRY_CAP`."""
RETRY_CAP = 30.0


class PromptBuilder(Protocol):
    def build(self, state: LoopState, task: TaskFile, step: Step, record: StepRecord) -> str: ...

    def followup(self, state: LoopState, step: Step, record: StepRecord) -> str: ...


@dataclass
class StepEngine:
    state: LoopState
    config: Config
    workspace: Workspace
    bus: EventBus
    runner: CommandRunner
    agent_for: Callable[[Step], Agent]
    prompts: PromptBuilder
    outcomes: Outcomes
    """What an attempt's outcome does: the streaks, the reflection, a stop."""
    control: Control
    """The run around the step: a pause a stop cuts short, whether a stop is wanted, the save,
    the run's clock."""
    limits: LimitWaiter
    judge: Judge | None = None
    commits: Commits | None = None
    """On a git-native run, the step commits (one per completed step)."""
    reviewer: Reviewer | None = None
    """`review.agent`'s reviewer (the morning review), when one is set."""
    exam: Exam | None = None
    """The steps' exam: a pass that changed what its checks run is held out."""
    held: LoopStop | None = None
    """A stop found after an attempt whose result still counts (a branch the step moved): the
    loop raises it at the next step boundary, once the attempt is recorded."""

    def __post_init__(self) -> None:
        self.iteration = Iteration(self.state, self.bus)
        self.workdir = work_folder(self.workspace.root, self.config.agent.workdir).resolve()
        view = self.commits.look if self.commits is not None else None
        self.witness = Witness(self.workspace.root, self.workdir, self.plane, self.runner, view)
        self.lane = MainLane(
            self.runner,
            self.witness,
            self.workdir,
            self.agent_for,
            self.commits,
            self.limits,
            self.iteration,
            self.workspace.state_dir,
        )

    def attempt(self, step: Step, task: TaskFile) -> Attempt:
        """One attempt at a step in the main work tree: the agent's run, the control plane and
        files watched around it, the evaluation, then success or failure (which may stop the
        loop). A wave step's attempt is the same three parts, its run on a thread of its own."""
        return self.finish(self.run(self.start(step, task, self.lane)))

    def start(self, step: Step, task: TaskFile, lane: Lane) -> Pending:
        record = self.state.record(step.id, step.title)
        agent = self.agent_of(step, lane)
        request = self.request(step, task, record, agent, lane.workdir)
        self.bus.emit(EventType.ATTEMPT_STARTED, step.id, attempt=request.attempt, agent=agent.name)
        spent, started = self.state.usage.model_copy(), time.monotonic()
        pending = Pending(step, task, record, agent, request, lane, self.state.iteration, started, spent)
        if self.commits is not None:
            self.commits.watch_branches()
        lane.starting(agent.spawns)  # what the attempt starts from (the main lane looks now)
        return pending

    def agent_of(self, step: Step, lane: Lane) -> Agent:
        if is_checkpoint(step):
            require_project_checks(step, self.config)
            return CheckpointAgent()
        return lane.agent_for(step)

    def run(self, pending: Pending) -> Pending:
        """The agent's run and the evaluation; on a wave step's own thread, it writes nothing
        the loop's thread reads while it runs but the shared usage."""
        lane, step = pending.lane, pending.step
        if lane.runner.wrapper is not None:
            lane.runner.wrapper.begin(step.id)  # what the sandbox refuses from now on is this step's
        lane.running()  # a wave step's lane looks at its slot now
        if self.exam is not None:
            self.exam.fix(step, pending.record, lane, lane.witness.looked())
        result, pending.retries = self.execute(pending.agent, pending.request, lane)
        pending.result = result
        if result.limit is not None and not result.interrupted:
            return pending  # a wave step's: the loop's thread waits out the limit, for the whole wave
        lane.ran()
        pending.plane_changed, files_changed = lane.witness.after()
        pending.task_replaced = lane.witness.replaced
        self.account(pending.record, result, pending.agent.name, pending.spent)
        self.evaluate(pending, result, files_changed)
        return pending

    def evaluate(self, pending: Pending, result: AgentResult, files_changed: list[str]) -> None:
        """The attempt (`pending.attempt`): the checks on the agent's claim, then the review of
        a success; a forced stop during either interrupts it."""
        step, lane, agent = pending.step, pending.lane, pending.agent.name
        gating = bool(self.config.checks) and not self.state.advisory_checks
        extra = evidence_check(step, self.config, agent, files_changed, gating)
        took = time.monotonic() - pending.started
        attempt = self.conclude(step, pending.request, result, pending.retries, took, lane, extra, agent)
        attempt.iteration, attempt.files_changed = pending.iteration, files_changed
        pending.attempt = attempt
        if attempt.outcome == "success" and not lane.runner.killed:
            self.second_looks(pending, attempt)
        if lane.runner.killed:  # a forced stop during the checks interrupts the attempt too
            attempt.outcome = "interrupted"
        self.outcomes.blame_sandbox(lane.runner.wrapper, attempt)
        if attempt.outcome == "failure" and lane.path is not None and self.commits is not None:
            hint = self.commits.hint(lane.path, lane.workdir, f"{attempt.error}\n{attempt.output_tail}")
            attempt.error = f"{attempt.error}\n{hint}" if hint else attempt.error

    def second_looks(self, pending: Pending, attempt: Attempt) -> None:
        """A passing attempt's exam (held out when it changed it), then the reviewer's verdict."""
        step, lane, agent = pending.step, pending.lane, pending.agent.name
        if self.exam is not None:
            timeout, checkpoint = pending.request.timeout, agent == "checkpoint"
            self.exam.judge(
                step,
                pending.record,
                attempt,
                lane,
                lambda r, w: self.checks_of(step, r, w, timeout, checkpoint),
            )
        if self.reviewer is not None and attempt.outcome == "success" and not lane.runner.killed:
            attempt.review = self.reviewer.review(step, pending.task, pending.record, attempt, agent, lane)
            self.outcomes.reviewed(attempt)

    def finish(self, pending: Pending) -> Attempt:
        """Bookkeeping on the loop's thread: the commit (a wave step's lands later, in file
        order), the record, then success or failure (which may stop the loop)."""
        step, record, attempt, result = pending.step, pending.record, pending.attempt, pending.result
        assert attempt is not None and result is not None
        self.note_control_plane(step, pending.plane_changed)
        if pending.task_replaced:  # before its commit: nothing of the attempt is taken
            raise replaced_stop(
                self.workspace, self.state, Path(self.state.task_path), f"while step {step.id} ran"
            )
        moved = self.commits.moved_branches(step) if self.commits is not None else None
        completes = pending.lane.kept(pending)  # the main lane commits it; a wave step's lands later
        self.keep(record, attempt, pending.request.prompt, result)
        if attempt.outcome == "interrupted":
            self.bus.emit(EventType.ATTEMPT_INTERRUPTED, step.id, attempt=attempt.number)
            raise ForceStopped(f"step {step.id} attempt {attempt.number} was interrupted")
        if attempt.outcome == "failure":
            self.outcomes.failed(step, record, attempt)
        elif completes:
            self.outcomes.succeeded(record, attempt)
        self.held = self.held or moved
        return attempt

    def request(
        self, step: Step, task: TaskFile, record: StepRecord, agent: Agent, workdir: Path
    ) -> AgentRequest:
        """The prompt (the whole context, or only what is new to a kept conversation)."""
        session = record.session_id if self.config.agent.session == "continue" else None
        if session and agent.wants_prompt and not self.context_due():
            prompt = self.prompts.followup(self.state, step, record)  # the conversation has the rest
        else:
            session = None
            prompt = self.prompts.build(self.state, task, step, record) if agent.wants_prompt else ""
            if prompt:
                self.note_reinjection(step)
        if prompt and self.commits is not None:
            prompt += self.commits.prompt_note
        prompt = redact(prompt)  # what the agent's model provider gets carries no secret either
        return AgentRequest(
            self.state.task_id,
            step,
            record.window_count + 1,
            record.tried(),
            prompt,
            workdir,
            step.timeout or self.config.agent.command_timeout_seconds,
            self.control.stop_wanted,
            Path(self.state.task_path),
            session,
        )

    def account(self, record: StepRecord, result: AgentResult, agent: str, spent: Usage) -> None:
        if result.usage.calls or result.usage.total_tokens:  # what an agent CLI reported itself
            self.state.usage.add(self.priced(result.usage, agent))
        result.usage = self.state.usage.since(spent)  # with every call of the shared LLM client
        record.session_id = result.session_id or record.session_id

    def keep(self, record: StepRecord, attempt: Attempt, prompt: str, result: AgentResult) -> None:
        self.outcomes.note_replan(record, attempt)
        record.add(attempt)
        if attempt.outcome != "interrupted":
            per_step = self.state.metrics.iterations_per_step
            per_step[attempt.step_id] = per_step.get(attempt.step_id, 0) + 1
        self.state.context.last_prompt = tail(prompt, 4000)
        self.state.context.last_response = tail(result.response or result.output, 4000)

    def priced(self, usage: Usage, agent: str) -> Usage:
        """An agent CLI's usage with a cost from `llm.prices` (by model, else by the CLI's
        name) when the CLI reports none."""
        key = self.config.llm.model or agent
        price = self.config.llm.prices.get(key)
        if usage.cost_usd or price is None:
            return usage
        return usage.model_copy(
            update={"cost_usd": price.cost(usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens)}
        )

    def take_held(self) -> LoopStop | None:
        """The stop an attempt left for the next step boundary (`held`), taken: once."""
        stop, self.held = self.held, None
        return stop

    @property
    def plane(self) -> ControlPlane:
        return ControlPlane(self.workspace.root, lambda: Path(self.state.task_path))

    def note_control_plane(self, step: Step, changed: list[str]) -> None:
        """What the agent changed in config/, .hooks/, .git/ or .state/: reported, never obeyed
        (config was read at the start, the state in memory is akira's, hooks only pause)."""
        if changed:
            self.bus.emit(EventType.CONTROL_PLANE_CHANGED, step.id, paths=changed[:20], count=len(changed))

    def check_claim(self, step: Step) -> bool:
        """A tick akira did not make: the step's own checks decide, the agent does not run."""
        timeout = step.timeout or self.config.agent.command_timeout_seconds
        checks = step_checks(step, [], self.runner, self.workdir, timeout)
        return bool(checks) and evaluate(checks, 1.0).complete

    def context_due(self) -> bool:
        """The rules for a kept conversation: the whole context again every N iterations
        or when it is stale (a new step has no session yet, so it always gets it)."""
        reason = reinjection_reason(self.state, self.config.autonomous_loop)
        return reason is not None and reason != "after_failure"

    def note_reinjection(self, step: Step) -> None:
        """Fresh-context agents get the continuation context in every prompt; this records when
        the reinjection rules (every N iterations, after a failure, when stale) call for it."""
        reason = reinjection_reason(self.state, self.config.autonomous_loop)
        if reason:
            self.state.context.last_reinjected_iteration = self.state.iteration
            self.state.context.last_reinjected_at = utcnow()
            self.bus.emit(EventType.REINJECTED, step.id, reason=reason)

    def execute(self, agent: Agent, request: AgentRequest, lane: Lane) -> tuple[AgentResult, int]:
        """Runs the agent until its result is one to judge: a provider fault or a usage limit
        is waited out as `lane` says, a transient failure is retried with backoff (none of them
        spends an iteration or a reflection). The result, and its transient retries."""
        step_id = request.step.id
        faults = FaultWaiter(self.bus, self.config.agent.max_transient_wait_seconds, self.control.pause)
        settings = self.config.autonomous_loop
        transient = Retries(self.control.pause, RETRY_BASE, RETRY_CAP, settings.exponential_backoff)
        while True:
            result = agent.run(request)
            if result.interrupted:
                break
            if result.fault is not None or result.limit is not None:
                if lane.waited(step_id, result, faults):
                    continue
                break
            if not result.transient or transient.tries >= settings.max_step_retries:
                break
            if self.backed_off(step_id, result, transient):
                return result, transient.tries  # a stop cut the wait short
        if result.transient:
            self.bus.emit(
                EventType.TRANSIENT_RETRY,
                step_id,
                mechanism="reflection",
                reason="transient retries exhausted",
                retries=transient.tries,
            )
        return result, transient.tries

    def backed_off(self, step_id: str, result: AgentResult, transient: Retries) -> bool:
        """The wait after a transient failure, before the agent runs again; True when a stop
        cut it short."""
        wait = transient.delay()
        self.bus.emit(
            EventType.TRANSIENT_RETRY,
            step_id,
            mechanism="backoff",
            retry=transient.count(),
            wait_seconds=round(wait, 3),
            error=result.error[:300],
        )
        return transient.wait(wait)

    def checks_of(
        self, step: Step, runner: CommandRunner, workdir: Path, timeout: float, checkpoint: bool
    ) -> list[Check]:
        """The step's own checks and the project's, run by `runner` in `workdir`."""
        advisory = self.state.advisory_checks and not checkpoint
        return step_checks(step, self.config.checks, runner, workdir, timeout, advisory)

    def conclude(
        self,
        step: Step,
        request: AgentRequest,
        result: AgentResult,
        retries: int,
        took: float,
        lane: Lane,
        extra: Check | None = None,
        agent_name: str = "",
    ) -> Attempt:
        attempt = Attempt(
            step_id=step.id,
            number=request.attempt,
            iteration=self.state.iteration,
            approach=result.approach,
            actions=result.actions,
            duration_seconds=round(took, 3),
            transient_retries=retries,
            usage=result.usage,
            output_tail=tail(result.output, 2000),
            finished_at=utcnow(),
        )
        if result.interrupted or lane.runner.killed:
            attempt.outcome = "interrupted"
            return attempt
        checks: list[Check] = [AgentCheck(result.ok, result.error)]
        checks += self.checks_of(
            step, lane.runner, request.workdir, request.timeout, agent_name == "checkpoint"
        )
        checks += [extra] if extra is not None else []
        attempt.evaluation = evaluate(
            checks,
            self.config.evaluation.confidence_threshold,
            judge=self.judge,
            step=step,
            output=result.output,
        )
        self.bus.emit(
            EventType.EVALUATION,
            step.id,
            attempt=attempt.number,
            complete=attempt.evaluation.complete,
            confidence=round(attempt.evaluation.confidence, 3),
            reasons=attempt.evaluation.reasons,
            error=attempt.evaluation.error,
        )
        if attempt.evaluation.complete:
            attempt.outcome, attempt.output_tail = "success", ""
        else:
            attempt.error = "\n".join(attempt.evaluation.reasons)
            attempt.error_signature = signature(attempt.error)
        return attempt
