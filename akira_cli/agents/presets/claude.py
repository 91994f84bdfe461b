"""Claude Code headless mode: `claude -p --output-format json`, the prompt on stdin.

Reads the one JSON result object (Claude Code 1.x/2.x headless format): `result`, `is_error`,
`session_id`, `num_turns`, `total_cost_usd`, and `usage` with `input_tokens`, `output_tokens`,
`cache_read_input_tokens`, `cache_creation_input_tokens` (input counts all three).
"""

from __future__ import annotations

import shlex
from typing import Any

from akira_cli.agents.presets import CliReport, register_preset
from akira_cli.agents.presets import limits as limit_text
from akira_cli.agents.presets.jsonout import json_objects, number
from akira_cli.config import AgentSettings
from akira_cli.usage import Usage


class Claude:
    name = "claude"
    executable = "claude"

    def command(self, settings: AgentSettings, session_id: str | None) -> str:
        base = settings.command or "claude -p --output-format json"
        words = [f"--permission-mode {shlex.quote(settings.permission_mode or 'acceptEdits')}"]
        if session_id:
            words.append(f"--resume {shlex.quote(session_id)}")
        return " ".join([base, *words, *settings.extra_args])

    def read(self, output: str, exit_code: int | None) -> CliReport:
        results = [o for o in json_objects(output) if "result" in o or "is_error" in o]
        report = CliReport(limit=limit_text.detect(output))
        if not results:
            report.failed, report.error = exit_code != 0, "" if exit_code == 0 else output[-500:]
            return report
        data = results[-1]
        raw = data.get("usage")
        usage: dict[str, Any] = raw if isinstance(raw, dict) else {}
        cached = number(usage.get("cache_read_input_tokens"))
        cached += number(usage.get("cache_creation_input_tokens"))
        report.usage = Usage(
            prompt_tokens=number(usage.get("input_tokens")) + cached,
            completion_tokens=number(usage.get("output_tokens")),
            cached_tokens=cached,
            calls=max(1, number(data.get("num_turns"))),
            cost_usd=float(data.get("total_cost_usd") or 0.0),
        )
        report.answer = str(data.get("result") or "")
        report.session_id = data.get("session_id") if isinstance(data.get("session_id"), str) else None
        if data.get("is_error") is True or str(data.get("subtype", "")).startswith("error"):
            report.failed, report.error = True, report.answer or str(data.get("subtype"))
        return report


register_preset(Claude())
