"""Codex: `codex exec --json --full-auto -`, the prompt on stdin.

Reads the JSON-lines events of `codex exec --json` (Codex CLI 0.4x and later): `thread.started`
(`thread_id`), `item.completed` with an `agent_message` item (`text`), `turn.completed`
(`usage`: `input_tokens` including `cached_input_tokens`, `output_tokens`), `turn.failed`
(`error.message`) and `error` (`message`). Codex reports no cost: `llm.prices` gives it.
"""

from __future__ import annotations

import shlex
from typing import Any

from akira_cli.agents.presets import CliReport, register_preset
from akira_cli.agents.presets import limits as limit_text
from akira_cli.agents.presets.jsonout import json_objects, one_call
from akira_cli.config import AgentSettings


class Codex:
    name = "codex"
    executable = "codex"

    def command(self, settings: AgentSettings, session_id: str | None) -> str:
        if session_id:
            base = f"codex exec resume {shlex.quote(session_id)} --json --full-auto -"
        else:
            base = settings.command or "codex exec --json --full-auto -"
        return " ".join([base, *settings.extra_args])

    def read(self, output: str, exit_code: int | None) -> CliReport:
        report = CliReport(limit=limit_text.detect(output))
        answers, errors = [], []
        for event in json_objects(output):
            kind = event.get("type")
            if kind == "thread.started" and isinstance(event.get("thread_id"), str):
                report.session_id = event["thread_id"]
            elif kind == "item.completed" and isinstance(event.get("item"), dict):
                item = event["item"]
                if item.get("type") in ("agent_message", "assistant_message") and item.get("text"):
                    answers.append(str(item["text"]))
            elif kind in ("turn.completed", "turn.failed") and isinstance(event.get("usage"), dict):
                usage = event["usage"]
                report.usage.add(one_call(usage, "input_tokens", "output_tokens", "cached_input_tokens"))
            if kind in ("turn.failed", "error"):
                raw = event.get("error")
                error: dict[str, Any] = raw if isinstance(raw, dict) else event
                errors.append(str(error.get("message") or kind))
        report.answer = "\n".join(answers)
        if errors:
            report.failed, report.error = True, "; ".join(errors)[:2000]
        return report


register_preset(Codex())
