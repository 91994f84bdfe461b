"""Who reviews (the morning review): an agent CLI preset, `llm`, or a command. Each gets the prompt and
gives back what it answered, its usage, and whether it failed; the verdict is read from the
answer (`verdict.read_verdict`).

Every reviewer command runs through `run_read_only`: the one seam where the sandbox (docs/sandbox.md)
confines it to a read-only work tree, on top of the presets' own read-only modes (claude's plan
mode, codex's read-only sandbox, gemini's plan mode, aider's dry run), which hold where the
sandbox falls back.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from akira_cli.agents.base import ProviderFault, UsageLimit
from akira_cli.agents.presets.base import PRESETS, Preset
from akira_cli.fileio import atomic_write, name_path
from akira_cli.git.steps import safe
from akira_cli.runner import CommandResult, CommandRunner, tail
from akira_cli.sections import AgentSettings, ReviewSettings
from akira_cli.usage import Usage

if TYPE_CHECKING:
    from akira_cli.llm.client import LLMClient

READ_ONLY: dict[str, dict[str, object]] = {
    "claude": {"permission_mode": "plan"},
    "codex": {"command": "codex exec --json --sandbox read-only --skip-git-repo-check -"},
    "gemini": {"extra_args": ["--approval-mode", "plan"]},
    "aider": {"extra_args": ["--dry-run"]},
}
"""Each preset's own way of not writing files, as AgentSettings fields."""


@dataclass
class Answer:
    text: str = ""
    """What the reviewer said (the model's answer, out of the CLI's JSON when a preset reads it)."""
    failure: str = ""
    """Why the reviewer gave no usable answer ('' when it answered)."""
    usage: Usage = field(default_factory=Usage)
    """What the review used (an agent CLI's report, or the `llm` reviewer's calls)."""
    limit: UsageLimit | None = None
    """The reviewer's plan limit is reached: waited out as the agent's is."""
    fault: ProviderFault | None = None
    """The reviewer's model provider failed (429, 5xx, 529): waited out as the agent's is."""


class ReviewerAgent(Protocol):
    name: str

    def ask(self, prompt: str, runner: CommandRunner, step_id: str, attempt: int) -> Answer:
        """`runner`: the lane's (its folder, its environment)."""
        ...


def run_read_only(
    runner: CommandRunner,
    command: str,
    timeout: float,
    *,
    stdin: str,
    env: dict[str, str],
    preset: str | None,
    split: bool = False,
) -> CommandResult:
    """The one place a reviewer's command runs: in a sandboxed run, in the same sandbox with the
    work tree read-only (a reviewer changes nothing), as `preset`'s CLI (its state folders and
    variables)."""
    wrapper = runner.wrapper.looking(preset) if runner.wrapper is not None else None
    return runner.run(command, timeout, stdin=stdin, env=env, wrapper=wrapper, split=split)


class CommandReviewer:
    """A preset's CLI, or a command line; a command whose program is a preset's CLI is read
    as that preset reads it."""

    def __init__(self, settings: ReviewSettings, prompts: Path, task_id: str) -> None:
        self.settings = settings
        self.prompts = prompts
        self.task_id = task_id
        agent = (settings.agent or "").strip()
        self.preset: Preset | None = PRESETS.get(agent)
        if self.preset is not None:
            self.name = agent
            self.line = self.preset.command(reviewer_settings(agent, settings.model), None)
        else:
            self.line = agent
            words = shlex.split(agent) if agent else [""]
            program = Path(words[0]).name
            self.preset = next((p for p in PRESETS.values() if p.executable == program), None)
            self.name = program or "command"

    def ask(self, prompt: str, runner: CommandRunner, step_id: str, attempt: int) -> Answer:
        prompt_file = self.prompts / f"review_{self.task_id}_{safe(step_id)}_{attempt}.md"
        try:  # secrets masked; no link a step put in .state/ is followed (`nofollow`)
            atomic_write(prompt_file, prompt.encode(), durable=False, root=self.prompts.parent)
        except OSError as exc:
            name_path(exc, prompt_file)
            return Answer(failure=f"the review prompt could not be written: {exc}")
        command = self.line.replace("{prompt_file}", shlex.quote(str(prompt_file)))
        env = {
            "AKIRA_TASK_ID": self.task_id,
            "AKIRA_STEP_ID": step_id,
            "AKIRA_ATTEMPT": str(attempt),
            "AKIRA_REVIEW": "1",
            "AKIRA_PROMPT_FILE": str(prompt_file),
        }
        preset = self.preset.name if self.preset is not None else None
        split = bool(self.preset is not None and self.preset.split_stderr)  # as the agent reads it
        timeout = self.settings.timeout_seconds
        result = run_read_only(runner, command, timeout, stdin=prompt, env=env, preset=preset, split=split)
        if self.preset is None:
            if not result.ok:
                return Answer(failure=f"{result.describe()}: {tail(result.output, 300).strip()}".strip())
            return Answer(text=result.output)
        report = self.preset.read(result.output, result.exit_code, result.stderr)
        if result.ok and report.limit is None and (not report.failed or report.refused):
            # a read-only run that refused a tool the model asked for still answered
            return Answer(text=report.answer or result.output, usage=report.usage)
        said = report.limit.message if report.limit is not None else report.error
        said = " ".join(said.split())[:300]
        how = result.describe() if not result.ok else f"{self.name} reported a failure"
        failure = f"{how}: {said}" if said else how
        return Answer(failure=failure, usage=report.usage, limit=report.limit, fault=report.fault)


class LLMReviewer:
    """The configured LLM endpoint, asked once. Its client keeps a usage of its own, so that
    what a review spent is told apart from the calls parallel steps make meanwhile."""

    name = "llm"

    def __init__(self, make_client: Callable[[], LLMClient]) -> None:
        self.make_client = make_client
        self._client: LLMClient | None = None

    def ask(self, prompt: str, runner: CommandRunner, step_id: str, attempt: int) -> Answer:
        from akira_cli.llm.types import LLMError

        messages = [
            {"role": "system", "content": "You review code changes made by another agent. Be specific."},
            {"role": "user", "content": prompt},
        ]
        try:
            if self._client is None:
                self._client = self.make_client()
            before = self._client.usage.model_copy()
            reply = self._client.chat(messages, purpose="review")
        except LLMError as exc:
            spent = self._client.usage.since(before) if self._client is not None else Usage()
            return Answer(failure=f"the llm reviewer failed: {exc}", usage=spent)
        return Answer(text=reply.content or "", usage=self._client.usage.since(before))


def reviewer_settings(preset: str, model: str | None) -> AgentSettings:
    """A preset's settings for a review: its read-only mode, and `--model` when one is named."""
    settings = AgentSettings(preset=preset)
    for key, value in READ_ONLY.get(preset, {}).items():
        setattr(settings, key, value)
    if model:
        settings.extra_args = [*settings.extra_args, "--model", model]
    return settings
