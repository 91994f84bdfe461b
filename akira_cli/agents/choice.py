"""Which agent a step gets (`agent.kind`), and the refusal, before any state is written, of a
run no agent could carry out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from akira_cli.errors import AkiraError

if TYPE_CHECKING:
    from akira_cli.config import Config
    from akira_cli.tasks.model import Step


def preflight(kind: str, steps: list[Step], config: Config) -> None:
    """Refuses up front, before any state is written, a run no agent could carry out."""
    for step in steps:
        chosen = choose_kind(kind, step, config)
        if chosen == "llm" and not config.llm.base_url:
            raise AkiraError(
                "the llm agent needs an LLM endpoint; set llm.base_url or OPENAI_BASE_URL "
                "(config/autonomous_loop.yaml or the environment, e.g. http://127.0.0.1:11434/v1)"
            )
        if chosen == "command" and not (config.agent.command or config.agent.preset):
            raise AkiraError(
                "the command agent needs agent.preset or agent.command in config/autonomous_loop.yaml, "
                'e.g. preset: claude, or command: "claude -p"'
            )


def choose_kind(kind: str, step: Step, config: Config) -> str:
    """`auto`: script when the step has Run:, else llm when configured, else command."""
    if kind != "auto":
        return kind
    if step.run:
        return "script"
    if config.llm.base_url:
        return "llm"
    if config.agent.command or config.agent.preset:
        return "command"
    from akira_cli.agents.presets.base import PRESETS, found_on_path

    found = found_on_path()
    seen = f"found on PATH: {', '.join(found)}" if found else "none of them is on PATH"
    raise AkiraError(
        f"step {step.id} has no 'Run:' directive and no agent is configured; add a 'Run:' line "
        "to the step, set llm.base_url (or OPENAI_BASE_URL), or name your agent CLI with "
        f"--agent NAME or agent.preset ({', '.join(PRESETS)}; {seen}) or agent.command; akira "
        "never starts a paid agent nobody configured"
    )
