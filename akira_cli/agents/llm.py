"""The `llm` agent: a tool-using coding agent that plans and works through the reasoning engine.

Each attempt is one `ReasoningEngine` run (docs/design.md) over the step's title and details,
with the akira step prompt (progress, checks, the retry context of failed attempts) as context.
The engine profiles, plans, validates and refines; each plan step is then carried out by
`ToolStepExecutor`, a chat conversation in which the model uses the workspace tools until it calls
`finish(summary)`. Its prompts are the `llm_agent_*.md` templates.

When is an attempt ok? When the run converged, or, short of that, when it was not a failure and
every step of its last pass completed by calling `finish` (the work was done even if the judge
wanted more). The step's own `Verify:`/`Exists:`/`Contains:` checks decide completion either way.

openai and the reasoning engine load only when an `llm` agent is built, not on every CLI start.
"""

from __future__ import annotations

import json
import threading
import time
from typing import TYPE_CHECKING, Any

from akira_cli.agents.base import AgentContext, AgentRequest, AgentResult, register_agent
from akira_cli.agents.tools import Toolbox, ToolResult, clip
from akira_cli.checks import step_checks
from akira_cli.control_plane import ControlPlane
from akira_cli.errors import AkiraError
from akira_cli.events import EventType
from akira_cli.templates import render

if TYPE_CHECKING:
    from collections.abc import Callable

    from akira_cli.llm.client import LLMClient
    from akira_cli.reasoning.executor import StepOutcome
    from akira_cli.reasoning.models import Clarity, PlanStep, ReasoningResult, ToolCallRecord

APPROACH = "llm (reasoning)"
APPROACH_DIRECT = "llm (direct)"
MAX_TOOL_ROUNDS = 12
"""Model replies per plan step; a step that has not called `finish` by then ends as it is."""
RECORDED_CHARS = 300
"""Characters of each tool argument and output kept in the plan (the judges read it)."""
MAX_ACTIONS = 40


class _Interrupted(Exception):
    """A stop was requested between two tool calls."""


class ToolStepExecutor:
    """Carries out a plan step as a tool-using conversation (a `StepExecutor`)."""

    def __init__(
        self,
        client: LLMClient,
        toolbox: Toolbox,
        context: str,
        *,
        should_stop: Callable[[], bool],
        ttl_expired: Callable[[], bool],
        max_rounds: int = MAX_TOOL_ROUNDS,
        template: str = "llm_agent_step.md",
    ) -> None:
        """`template` frames the step: a plan step (`llm_agent_step.md`) or the akira step
        itself in a direct attempt (`llm_agent_direct.md`)."""
        self.client = client
        self.template = template
        self.toolbox = toolbox
        self.context = context
        self.should_stop = should_stop
        self.ttl_expired = ttl_expired
        self.max_rounds = max_rounds
        self.actions: list[str] = []
        self.finished: set[str] = set()
        """Plan steps that ended by calling `finish`."""
        self._lock = threading.Lock()

    def execute(self, step: PlanStep, prompt: str) -> StepOutcome:
        from akira_cli.reasoning.executor import StepOutcome  # lazy: openai loads only when used

        messages: list[dict[str, Any]] = [
            {"role": "system", "content": _prompt("llm_agent_system.md")},
            {
                "role": "user",
                "content": _prompt(self.template, step_prompt=prompt, context=self.context),
            },
        ]
        records: list[ToolCallRecord] = []
        last_text, nudged = "", False
        for _ in range(self.max_rounds):
            self._check_stop()
            if self.ttl_expired():
                return _unfinished(f"time budget spent; {last_text}", records)
            reply = self.client.chat(messages, tools=self.toolbox.specs(), purpose=f"llm.step.{step.id}")
            messages.append(reply.as_message())
            if not reply.tool_calls:
                last_text = (reply.content or "").strip()
                if nudged or not last_text:
                    return StepOutcome(step_output=last_text or "(no reply)", clarity_state="PARTIALLY_CLEAR")
                nudged = True
                messages.append({"role": "user", "content": _prompt("llm_agent_nudge.md")})
                continue
            for index, call in enumerate(reply.tool_calls):
                if index:
                    self._check_stop()
                result = self.toolbox.call(call.name, call.arguments)
                records.append(_record(call.name, call.arguments, result))
                self._note(call.name, call.arguments)
                if result.finished:
                    with self._lock:
                        self.finished.add(step.id)
                    clarity, summary = clarity_of(result.output)
                    return StepOutcome(step_output=summary, clarity_state=clarity, tool_calls=records)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result.output})
        return _unfinished(f"no finish after {self.max_rounds} tool rounds; {last_text}", records)

    def _check_stop(self) -> None:
        if self.should_stop() or self.toolbox.interrupted:
            raise _Interrupted

    def _note(self, name: str, arguments: str) -> None:
        with self._lock:
            self.actions.append(describe_call(name, arguments))


class LLMAgent:
    name = "llm"
    wants_prompt = True
    spawns = False

    def __init__(self, client: LLMClient, context: AgentContext) -> None:
        self.client = client
        self.context = context

    def run(self, request: AgentRequest) -> AgentResult:
        from akira_cli.reasoning.engine import ReasoningEngine  # lazy: openai loads only when used

        config = self.context.config
        checks = step_checks(
            request.step, config.checks, self.context.runner, request.workdir, request.timeout
        )
        toolbox = self.toolbox(request)
        if direct(config.reasoning.mode, bool(checks), request.attempt):
            return self.run_direct(request, toolbox)
        # A step's explicit `Timeout:` also bounds the whole run (checked between tool calls).
        engine = ReasoningEngine(
            self.client,
            config.reasoning,
            bus=self.context.bus,
            tools=toolbox.names(),
            time_budget_s=request.step.timeout,
            synthesize=False,  # the step summaries are records; the checks judge the work
            host_checks=(lambda: all(check.run().passed for check in checks)) if checks else None,
        )
        executor = ToolStepExecutor(
            self.client,
            toolbox,
            request.prompt,
            should_stop=request.should_stop,
            ttl_expired=engine.ttl_expired,
        )
        engine.executor = executor
        try:
            result = engine.run(task_text(request), request.prompt)
        except _Interrupted:
            return AgentResult(False, APPROACH, _actions(executor), interrupted=True, error="stopped")
        return conclude(result, executor)

    def run_direct(self, request: AgentRequest, toolbox: Toolbox) -> AgentResult:
        """One tool conversation over the akira step itself: no profile, plan, validation or
        convergence call. The step's checks decide, as for any agent."""
        from akira_cli.llm.types import LLMError, LLMTransientError
        from akira_cli.reasoning.models import PlanStep

        deadline = None if request.step.timeout is None else time.monotonic() + request.step.timeout
        executor = ToolStepExecutor(
            self.client,
            toolbox,
            request.prompt,
            should_stop=request.should_stop,
            ttl_expired=lambda: deadline is not None and time.monotonic() >= deadline,
            template="llm_agent_direct.md",
        )
        step = PlanStep(id=request.step.id, description=task_text(request), step_index=1, total_steps=1)
        self.context.bus.emit(
            EventType.REASONING_PHASE, request.step.id, phase="direct", attempt=request.attempt
        )
        try:
            outcome = executor.execute(step, "")
        except _Interrupted:
            return AgentResult(False, APPROACH_DIRECT, _actions(executor), interrupted=True, error="stopped")
        except LLMError as exc:
            error = one_line(str(exc))
            transient = isinstance(exc, LLMTransientError)
            return AgentResult(False, APPROACH_DIRECT, _actions(executor), error=error, transient=transient)
        summary = outcome.step_output or ""
        blocked = outcome.clarity_state == "BLOCKED"
        return AgentResult(
            not blocked,
            APPROACH_DIRECT,
            _actions(executor),
            output=summary,
            response=summary,
            error=one_line(summary) if blocked else "",
        )

    def toolbox(self, request: AgentRequest) -> Toolbox:
        config = self.context.config
        return Toolbox(
            request.workdir,
            self.context.runner,
            allow_run_command=config.agent.allow_run_command,
            max_output_chars=config.agent.max_tool_output_chars,
            bus=self.context.bus,
            step_id=request.step.id,
            command_timeout=request.timeout,
            control=ControlPlane(self.context.workspace.root, lambda: request.task_path),
        )


def direct(mode: str, has_checks: bool, attempt: int) -> bool:
    """Whether an attempt is one tool conversation instead of an engine run (depth is
    earned, not spent up front): always in `direct` mode, never in `full`; in `adaptive`, the first attempt
    of a step whose host checks will decide."""
    return mode == "direct" or (mode == "adaptive" and has_checks and attempt == 1)


def conclude(result: ReasoningResult, executor: ToolStepExecutor) -> AgentResult:
    """The attempt's result from the reasoning result; see the module doc for when it is ok."""
    output = "\n".join([result.answer, "", *result.describe()]).strip()
    base = AgentResult(False, APPROACH, _actions(executor), output=output, response=result.answer)
    if result.label == "failed":
        base.error = one_line(result.error or f"reasoning failed ({', '.join(result.reason_codes)})")
        base.transient = result.error_transient
        return base
    base.ok = result.converged or _last_pass_finished(result, executor)
    if not base.ok:
        codes = ", ".join(result.reason_codes) or "none"
        base.error = f"reasoning ended {result.label} ({codes}) without finishing its last steps"
    return base


def _last_pass_finished(result: ReasoningResult, executor: ToolStepExecutor) -> bool:
    """Every step the last pass executed completed by calling `finish`."""
    last = result.passes[-1].executed_step_ids if result.passes else []
    steps = [result.plan.get(sid) if result.plan else None for sid in last]
    return bool(steps) and all(
        step is not None and step.status == "complete" and step.id in executor.finished for step in steps
    )


def task_text(request: AgentRequest) -> str:
    step = request.step
    return "\n".join([f"{step.id}. {step.title}", *(f"- {detail}" for detail in step.details)])


def clarity_of(summary: str) -> tuple[Clarity, str]:
    """The clarity state a `finish` summary announces by its prefix; CLEAR when it names none."""
    head = summary.lstrip().upper()
    if head.startswith("BLOCKED"):
        return "BLOCKED", summary
    if head.startswith("PARTIALLY_CLEAR") or head.startswith("PARTIALLY CLEAR"):
        return "PARTIALLY_CLEAR", summary
    return "CLEAR", summary


def describe_call(name: str, arguments: str) -> str:
    """A short action line for the attempt record, e.g. `write_file health.py`."""
    try:
        args = json.loads(arguments or "{}")
    except ValueError:
        args = None
    if not isinstance(args, dict):
        return f"{name} (bad arguments)"
    detail = args.get("command") if name == "run_command" else args.get("path", "")
    return clip(f"{name} {detail}".strip() if isinstance(detail, str) else name, 120)


def _prompt(name: str, **values: str) -> str:
    """An `llm_agent_*.md` template, filled in (`$name` placeholders)."""
    return render(name, **values).strip()


def one_line(text: str, limit: int = 300) -> str:
    return clip(" ".join(text.split()), limit)


def _actions(executor: ToolStepExecutor) -> list[str]:
    actions = list(executor.actions)
    if len(actions) > MAX_ACTIONS:
        return [*actions[: MAX_ACTIONS - 1], f"… and {len(actions) - MAX_ACTIONS + 1} more tool calls"]
    return actions


def _record(name: str, arguments: str, result: ToolResult) -> ToolCallRecord:
    from akira_cli.reasoning.models import ToolCallRecord

    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        parsed = {"raw": arguments}
    if not isinstance(parsed, dict):
        parsed = {"raw": arguments}
    shown = {k: clip(v, RECORDED_CHARS) if isinstance(v, str) else v for k, v in parsed.items()}
    output = clip(result.output, RECORDED_CHARS)
    return ToolCallRecord(name=name, arguments=shown, output=output, error=output if result.error else None)


def _unfinished(note: str, records: list[ToolCallRecord]) -> StepOutcome:
    from akira_cli.reasoning.executor import StepOutcome

    return StepOutcome(step_output=note.strip("; "), clarity_state="PARTIALLY_CLEAR", tool_calls=records)


@register_agent("llm")
def _llm(context: AgentContext) -> LLMAgent:
    """Checks the endpoint once, so a wrong URL, key or server is one clear line up front."""
    if context.llm is None:
        raise AkiraError(
            "the llm agent needs an LLM endpoint; set llm.base_url or OPENAI_BASE_URL "
            "(e.g. http://127.0.0.1:11434/v1)"
        )
    context.llm.ping(retry=True)
    _ = context.llm.model  # resolves the default model now: a server listing none fails here
    return LLMAgent(context.llm, context)
