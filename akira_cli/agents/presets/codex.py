"""Codex: `codex exec --json --sandbox workspace-write --skip-git-repo-check -`, prompt on stdin.

Follows codex-cli 0.169.0, whose `exec` has no `--full-auto` (exit 2: "unexpected argument")
and refuses to run outside a git repository without `--skip-git-repo-check` (a fresh `akira
init` workspace is none). `exec resume` takes no `--sandbox`: the sandbox goes in as
`-c sandbox_mode="workspace-write"`. `agent.permission_mode: bypass` runs without codex's
sandbox (`--dangerously-bypass-approvals-and-sandbox`), for a run akira's own sandbox confines.

Reads the JSON lines on stdout (stderr carries only logs and is read apart): `thread.started`
(`thread_id`), `item.completed` (an `agent_message`'s `text`; tool items, each one model
request), `turn.completed` (`usage`: `input_tokens` including `cached_input_tokens`,
`output_tokens`), `turn.failed` (`error.message`) and `error` (`message`). Rules:
- an `error` the CLI recovered from (`Reconnecting... 1/5 …` and then `turn.completed`, exit 0)
  is not a failure; a non-zero exit always is;
- `turn.completed.usage` is the thread's running total: on `exec resume` only the growth since
  the last run counts (`CliReport.running_total`);
- calls: one model request per tool call plus the final answer of each turn;
- no cost is reported: `llm.prices` gives it, cached input at `cached_input_per_1m`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Annotated

from akira_cli.agents.presets.base import CliReport, register_preset
from akira_cli.agents.presets.jsonout import Count, Lenient, Name, ObjectOrNone, Text, json_objects
from akira_cli.agents.presets.verdict import failed
from akira_cli.sections import AgentSettings
from akira_cli.usage import Usage

TOOL_ITEMS = frozenset({"command_execution", "file_change", "mcp_tool_call", "web_search", "patch_apply"})
ANSWERS = frozenset({"agent_message", "assistant_message"})


class CodexItem(Lenient):
    type: Text = ""
    text: Text = ""


class CodexTokens(Lenient):
    input_tokens: Count = 0
    output_tokens: Count = 0
    cached_input_tokens: Count = 0


class CodexError(Lenient):
    message: Text = ""


class CodexEvent(Lenient):
    """One JSON line of `codex exec --json`."""

    type: Text = ""
    thread_id: Name = None
    item: Annotated[CodexItem | None, ObjectOrNone] = None
    usage: Annotated[CodexTokens | None, ObjectOrNone] = None
    error: Annotated[CodexError | None, ObjectOrNone] = None
    message: Text = ""

    @property
    def said(self) -> str:
        """A failure's message: its error's, else its own, else its type."""
        return (self.error.message if self.error else self.message) or self.type


@dataclass
class CodexRun:
    """What the events of one run add up to."""

    session_id: str | None = None
    answers: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    tools: int = 0
    turns: int = 0
    ended: str = ""
    """The last turn's end: "completed" or "failed"."""

    def add(self, event: CodexEvent) -> None:
        if event.type == "thread.started" and event.thread_id is not None:
            self.session_id = event.thread_id
        elif event.type == "item.completed" and event.item is not None:
            if event.item.type in ANSWERS and event.item.text:
                self.answers.append(event.item.text)
            self.tools += event.item.type in TOOL_ITEMS
        elif event.type in ("turn.completed", "turn.failed"):
            self.ended, self.turns = event.type.removeprefix("turn."), self.turns + 1
        if event.type == "turn.completed" and event.usage is not None:
            tokens = event.usage  # a running total: the last one is the thread's
            self.usage = Usage(
                prompt_tokens=tokens.input_tokens,
                completion_tokens=tokens.output_tokens,
                cached_tokens=tokens.cached_input_tokens,
            )
        # an `error` it recovered from (`Reconnecting... 1/5`) is no failure
        if event.type == "turn.failed" or (
            event.type == "error" and not event.said.startswith("Reconnecting")
        ):
            self.errors.append(event.said)


class Codex:
    name = "codex"
    executable = "codex"
    split_stderr = True
    key_hint = "set OPENAI_API_KEY (or log in with `codex login`)"

    def command(self, settings: AgentSettings, session_id: str | None) -> str:
        bypass = settings.permission_mode == "bypass"
        if session_id:
            sandbox = (
                "--dangerously-bypass-approvals-and-sandbox"
                if bypass
                else "-c 'sandbox_mode=\"workspace-write\"'"
            )
            base = f"codex exec resume {shlex.quote(session_id)} --json {sandbox} --skip-git-repo-check -"
        else:
            sandbox = "--dangerously-bypass-approvals-and-sandbox" if bypass else "--sandbox workspace-write"
            base = settings.command or f"codex exec --json {sandbox} --skip-git-repo-check -"
        return " ".join([base, *settings.extra_args])

    def read(self, output: str, exit_code: int | None, stderr: str = "") -> CliReport:
        run = CodexRun()
        for line in json_objects(output):
            run.add(CodexEvent.model_validate(line))
        run.usage.calls = run.tools + run.turns
        answer = "\n".join(run.answers)
        report = CliReport(answer=answer, session_id=run.session_id, usage=run.usage, running_total=True)
        if exit_code == 0 and run.ended == "completed":
            return report
        said = "; ".join(run.errors) or stderr.strip()[-1000:] or f"codex exited {exit_code} without a turn"
        return failed(report, said[:2000], limit_in=f"{said}\n{stderr}", fault_in=said)


register_preset(Codex())
