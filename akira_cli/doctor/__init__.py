"""`akira doctor`: what stands between this machine and a night's run, without a model call.

Each check is a small object with a `name` and `run(context) -> list[Finding]`, registered by
name in `CHECKS`; the built-ins register the way a plug-in would, and registering a check under
a name already taken replaces it (the sandbox's probe takes the `sandbox` slot that way).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli.doctor import agent_cli, auth, host, remote, reviewer, start  # registration, in report order
from akira_cli.doctor.base import CHECKS, DoctorContext, Finding
from akira_cli.workspace import work_folder

if TYPE_CHECKING:
    from akira_cli.config import Config

_ = auth, host, remote, reviewer, start


def context_for(root: Path, config: Config, kind: str) -> DoctorContext:
    from akira_cli.agents.executable import agent_command, locate

    workdir = work_folder(root, config.agent.workdir)
    context = DoctorContext(root, config, kind, workdir if workdir.is_dir() else root)
    context.agent = agent_command(kind, config)
    if context.agent is not None:
        context.executable = locate(context.agent.executable, context.workdir)
    context.prefetch(agent_cli.tool_calls(context))
    return context


def run_checks(context: DoctorContext) -> list[Finding]:
    return [finding for check in CHECKS.values() for finding in check.run(context)]
