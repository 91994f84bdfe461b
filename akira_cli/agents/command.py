"""The `command` agent: an external agent CLI (`claude -p`, `codex exec`, `aider ...`).

Each run starts fresh, so the prompt carries the whole continuation context. It goes on stdin
and into a file whose path replaces `{prompt_file}` in `agent.command`.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

from akira_cli.agents.base import AgentContext, AgentRequest, AgentResult, register_agent
from akira_cli.agents.presets.base import PRESETS, CliReport, Preset
from akira_cli.agents.session_totals import SessionTotals
from akira_cli.errors import AkiraError
from akira_cli.fileio import atomic_write, name_path
from akira_cli.runner import CommandResult, CommandRunner, tail
from akira_cli.sections import AgentSettings


class CommandAgent:
    name = "command"
    wants_prompt = True
    spawns = True

    def __init__(
        self,
        command: str,
        runner: CommandRunner,
        prompts: Path,
        transient_codes: list[int],
        preset: Preset | None = None,
        settings: AgentSettings | None = None,
    ) -> None:
        self.command = command
        self.runner = runner
        self.prompts = prompts
        self.transient_codes = transient_codes
        self.preset = preset
        self.settings = settings
        self.name = preset.name if preset is not None else "command"
        self.totals = SessionTotals(prompts.parent / "sessions")

    def run(self, request: AgentRequest) -> AgentResult:
        prompt_file = self.prompts / f"{request.task_id}_{request.step.id}_{request.attempt}.md"
        try:  # secrets masked; no link a step put in .state/ is followed (`nofollow`)
            atomic_write(prompt_file, request.prompt.encode(), durable=False, root=self.prompts.parent)
        except OSError as exc:
            name_path(exc, prompt_file)
            raise
        preset, settings = self.preset, self.settings
        line = preset.command(settings, request.session_id) if preset and settings else self.command
        command = line.replace("{prompt_file}", shlex.quote(str(prompt_file)))
        env = {
            "AKIRA_TASK_ID": request.task_id,
            "AKIRA_STEP_ID": request.step.id,
            "AKIRA_ATTEMPT": str(request.attempt),
            "AKIRA_PROMPT_FILE": str(prompt_file),
        }
        split = bool(preset is not None and preset.split_stderr)
        result = self.runner.run(command, request.timeout, stdin=request.prompt, env=env, split=split)
        if preset is not None and not result.interrupted:
            report = preset.read(result.output, result.exit_code, result.stderr)
            if result.timed_out:  # cut off by akira: a failed attempt, whatever its output said
                report.fault = None
            kept = settings is not None and settings.session == "continue"
            if report.running_total and report.session_id and kept:  # resumable: count the growth
                report.usage = self.totals.growth(preset.name, report.session_id, report.usage)
            return self.conclude(report, result, command)
        # Only the exit codes say "transient": an agent's chatter may well mention 429 or a lock.
        transient = not result.timed_out and result.exit_code in self.transient_codes
        error = "" if result.ok else f"{result.describe()}\n{tail(result.output, 2000)}".strip()
        return AgentResult(
            ok=result.ok,
            approach="command agent",
            actions=[command],
            output=result.output,
            error=error,
            transient=transient,
            interrupted=result.interrupted,
            response=tail(result.output, 4000),
        )

    def conclude(self, report: CliReport, result: CommandResult, command: str) -> AgentResult:
        """A preset's reading: a failure the CLI reports is a failure even with exit 0; a usage
        limit is not a failure at all (it is waited out, see `UsageLimit`)."""
        ok = result.ok and not report.failed and report.limit is None
        name = self.preset.name if self.preset else "agent"
        if report.fault is not None and report.fault.auth:
            hint = getattr(self.preset, "key_hint", "check the agent CLI's API key or login")
            report.fault.message = (
                f"{name}'s model provider refused the key: the API key is wrong or missing "
                f"({report.fault.message[:160]}); {hint}, then resume"
            )
        output = f"{result.output}\n{result.stderr}".strip() if result.stderr else result.output
        if report.limit is not None:
            error = f"usage limit: {report.limit.message}"
        elif report.failed:
            error = f"{self.preset.name if self.preset else 'agent'} reported a failure: {report.error}"
        else:
            error = "" if result.ok else f"{result.describe()}\n{tail(output, 2000)}".strip()
        if not result.ok and report.failed:  # a non-zero exit fails whatever the output says
            error = f"{error} ({result.describe()})"
        return AgentResult(
            ok=ok,
            approach=f"{self.preset.name if self.preset else 'command'} agent",
            actions=[command],
            output=output,
            error=error.strip(),
            transient=not result.timed_out and result.exit_code in self.transient_codes,
            usage=report.usage,
            response=tail(report.answer or output, 4000),
            session_id=report.session_id,
            limit=report.limit,
            fault=report.fault,
        )


@register_agent("command")
def _command(context: AgentContext) -> CommandAgent:
    settings = context.config.agent
    preset = PRESETS[settings.preset] if settings.preset else None
    if not settings.command and preset is None:
        raise AkiraError(
            "agent kind 'command' needs agent.preset or agent.command in config/autonomous_loop.yaml, "
            'e.g. preset: claude, or command: "claude -p"'
        )
    prompts = context.workspace.state_dir / "prompts"
    command = settings.command or ""
    return CommandAgent(command, context.runner, prompts, settings.transient_exit_codes, preset, settings)


def _preset_factory(name: str) -> Callable[[AgentContext], CommandAgent]:
    def build(context: AgentContext) -> CommandAgent:
        settings = context.config.agent.model_copy(update={"preset": name})
        prompts = context.workspace.state_dir / "prompts"
        command = settings.command or ""
        return CommandAgent(
            command, context.runner, prompts, settings.transient_exit_codes, PRESETS[name], settings
        )

    return build


for _name in PRESETS:  # `--agent claude` is the command agent with the claude preset
    register_agent(_name)(_preset_factory(_name))
