"""The reviewer's CLI (`review.agent`), checked as the agent's is: on PATH, its version, the
flags of its read-only command line, its credentials. A reviewer that cannot work leaves every
step `Akira-Review: none` while the run goes on, so its problems are warnings."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from akira_cli.doctor.agent_cli import AgentFlags, AgentVersion, sandbox_hides, tool_calls
from akira_cli.doctor.auth import AgentAuth
from akira_cli.doctor.base import DoctorContext, Finding, register_check

if TYPE_CHECKING:
    from akira_cli.agents.executable import AgentCommand
    from akira_cli.config import Config


def reviewer_command(config: Config) -> AgentCommand | None:
    """The command line a review runs (a preset's in its read-only mode, or `review.agent`'s
    own); None for `llm` or no reviewer."""
    from akira_cli.agents.executable import agent_command
    from akira_cli.agents.presets.base import PRESETS
    from akira_cli.review.agent import reviewer_settings
    from akira_cli.sections import AgentSettings

    name = (config.review.agent or "").strip() if config.review.enabled else ""
    if not name or name == "llm":
        return None
    if name in PRESETS:
        settings = reviewer_settings(name, config.review.model)
        return agent_command(name, config.model_copy(update={"agent": settings}))
    return agent_command("command", config.model_copy(update={"agent": AgentSettings(command=name)}))


class Reviewer:
    name = "reviewer"

    def run(self, context: DoctorContext) -> list[Finding]:
        from akira_cli.agents.executable import locate
        from akira_cli.review.build import missing_reviewer

        command = reviewer_command(context.config)
        if command is None:
            return []
        if (missing := missing_reviewer(context.config)) is not None:
            return [Finding.of_said("reviewer", missing, "warn")]
        if (hides := sandbox_hides("the reviewer's program", command, context)) is not None:
            said = f"{hides}; every step it should review would be left not reviewed (Akira-Review: none)"
            return [Finding.of_said("reviewer", said, "warn")]
        executable = locate(command.executable, context.workdir)
        own = replace(context, agent=command, executable=executable, cli_version=None, answers={})
        own.prefetch(tool_calls(own))
        findings = [Finding("reviewer", "ok", f"{command.name}: {executable} (runs: {command.line})")]
        for check in (AgentVersion(), AgentFlags(), AgentAuth()):
            findings += [
                replace(f, check=f"reviewer {f.check}", status="warn" if f.status == "fail" else f.status)
                for f in check.run(own)
            ]
        return findings


register_check(Reviewer())
