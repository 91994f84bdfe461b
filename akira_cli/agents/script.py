"""The embedded `script` agent: runs the step's `Run:` commands, and on a re-plan its next `Fallback:`."""

from __future__ import annotations

from akira_cli.agents.base import AgentContext, AgentRequest, AgentResult, register_agent
from akira_cli.failures import is_transient_output
from akira_cli.runner import CommandRunner, tail
from akira_cli.tasks.model import Step


class ScriptAgent:
    name = "script"
    wants_prompt = False
    spawns = True

    def __init__(self, runner: CommandRunner, transient_codes: list[int]) -> None:
        self.runner = runner
        self.transient_codes = transient_codes

    def plan(self, step: Step, tried: set[str]) -> tuple[str, list[str]]:
        """`Run:` first, then each `Fallback:` in order (across resumes); when every one was
        tried, `Run:` again."""
        if "Run" not in tried and step.run:
            return "Run", step.run
        for number, command in enumerate(step.fallback, 1):
            if f"Fallback {number}" not in tried:
                return f"Fallback {number}", [command]
        return "Run", step.run

    def run(self, request: AgentRequest) -> AgentResult:
        approach, commands = self.plan(request.step, request.tried)
        env = {
            "AKIRA_TASK_ID": request.task_id,
            "AKIRA_STEP_ID": request.step.id,
            "AKIRA_ATTEMPT": str(request.attempt),
        }
        outputs: list[str] = []
        for index, command in enumerate(commands):
            # Only a forced stop ends the step between its commands: a hook waits for the last
            # one and the checks, or the commands that ran would run again at the resume.
            if index and self.runner.killed:
                return AgentResult(False, approach, commands[:index], interrupted=True)
            result = self.runner.run(command, request.timeout, env=env)
            outputs.append(result.output)
            if not result.ok:
                error = f"{result.describe()}\n{tail(result.output, 2000)}".strip()
                transient = not result.timed_out and is_transient_output(
                    result.output, result.exit_code, self.transient_codes
                )
                return AgentResult(
                    False,
                    approach,
                    commands[: index + 1],
                    output="".join(outputs),
                    error=error,
                    transient=transient,
                    interrupted=result.interrupted,
                )
        return AgentResult(True, approach, commands, output="".join(outputs))


@register_agent("script")
def _script(context: AgentContext) -> ScriptAgent:
    return ScriptAgent(context.runner, context.config.agent.transient_exit_codes)
