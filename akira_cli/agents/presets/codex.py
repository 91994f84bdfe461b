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
from typing import Any

from akira_cli.agents.presets import faults as fault_text
from akira_cli.agents.presets import limits as limit_text
from akira_cli.agents.presets.base import CliReport, register_preset
from akira_cli.agents.presets.jsonout import json_objects, one_call
from akira_cli.sections import AgentSettings

TOOL_ITEMS = frozenset({"command_execution", "file_change", "mcp_tool_call", "web_search", "patch_apply"})


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
        report = CliReport(running_total=True)
        answers, errors, tools, turns = [], list[str](), 0, 0
        ended = ""  # the last turn's end: "completed" or "failed"
        for event in json_objects(output):
            kind = event.get("type")
            if kind == "thread.started" and isinstance(event.get("thread_id"), str):
                report.session_id = event["thread_id"]
            elif kind == "item.completed" and isinstance(event.get("item"), dict):
                item = event["item"]
                if item.get("type") in ("agent_message", "assistant_message") and item.get("text"):
                    answers.append(str(item["text"]))
                tools += item.get("type") in TOOL_ITEMS
            elif kind == "turn.completed":
                ended, turns = "completed", turns + 1
                if isinstance(event.get("usage"), dict):
                    usage = one_call(event["usage"], "input_tokens", "output_tokens", "cached_input_tokens")
                    report.usage = usage  # a running total: the last one is the thread's
            elif kind == "turn.failed":
                ended, turns = "failed", turns + 1
            if kind in ("turn.failed", "error"):
                raw = event.get("error")
                error: dict[str, Any] = raw if isinstance(raw, dict) else event
                message = str(error.get("message") or kind)
                if kind == "turn.failed" or not message.startswith("Reconnecting"):
                    errors.append(message)
        report.usage.calls = tools + turns
        report.answer = "\n".join(answers)
        report.failed = exit_code != 0 or ended != "completed"
        if not report.failed:
            return report
        said = "; ".join(errors) or stderr.strip()[-1000:] or f"codex exited {exit_code} without a turn"
        report.error = said[:2000]
        report.limit = limit_text.detect(f"{said}\n{stderr}")
        if report.limit is None:
            report.fault = fault_text.classify(said)
        return report


register_preset(Codex())
