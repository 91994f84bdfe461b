"""The `command` agent: an external agent CLI (`claude -p`, `codex exec`, `aider ...`).

Each run starts fresh, so the prompt carries the whole continuation context. It goes on stdin
and into a file whose path replaces `{prompt_file}` in `agent.command`.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from akira_cli.agents.base import AgentContext, AgentRequest, AgentResult, register_agent
from akira_cli.errors import AkiraError
from akira_cli.redaction import redact_bytes
from akira_cli.runner import CommandRunner, tail


class CommandAgent:
    name = "command"
    wants_prompt = True

    def __init__(
        self, command: str, runner: CommandRunner, prompts: Path, transient_codes: list[int]
    ) -> None:
        self.command = command
        self.runner = runner
        self.prompts = prompts
        self.transient_codes = transient_codes

    def run(self, request: AgentRequest) -> AgentResult:
        prompt_file = self.prompts / f"{request.task_id}_{request.step.id}_{request.attempt}.md"
        prompt_file.parent.mkdir(parents=True, exist_ok=True)
        prompt_file.write_bytes(redact_bytes(request.prompt.encode()))
        command = self.command.replace("{prompt_file}", shlex.quote(str(prompt_file)))
        env = {
            "AKIRA_TASK_ID": request.task_id,
            "AKIRA_STEP_ID": request.step.id,
            "AKIRA_ATTEMPT": str(request.attempt),
            "AKIRA_PROMPT_FILE": str(prompt_file),
        }
        result = self.runner.run(command, request.timeout, stdin=request.prompt, env=env)
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


@register_agent("command")
def _command(context: AgentContext) -> CommandAgent:
    command = context.config.agent.command
    if not command:
        raise AkiraError(
            "agent kind 'command' needs agent.command in config/autonomous_loop.yaml, "
            'e.g. command: "claude -p"'
        )
    prompts = context.workspace.state_dir / "prompts"
    return CommandAgent(command, context.runner, prompts, context.config.agent.transient_exit_codes)
