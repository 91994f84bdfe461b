"""Claude Code headless mode: `claude -p --output-format json`, the prompt on stdin.

Follows Claude Code 2.1.197 (and 2.x): stdout carries one JSON result object, stderr only
warnings, so the two are read apart. Read: `result`, `is_error`, `session_id`, `num_turns`,
`total_cost_usd`, and `usage` with `input_tokens`, `output_tokens`, `cache_read_input_tokens`,
`cache_creation_input_tokens` (input counts all three). Also:
- a plan limit inside `result` with `is_error: true` and exit 1 (`You've hit your session limit ·
  resets 12:42pm (UTC)`, `… weekly limit …`, `… Opus limit …`): a usage-limit wait;
- `api_error_status` after the CLI's own retries (`"subtype":"success","is_error":true,
  "result":"API Error: 529 …"`): 429/5xx/529 are provider faults (waited out), 401/403 a bad key;
- `permission_denials`: writes the permission mode refused while the run "succeeded"; they fail
  the attempt, and their list is the failure text the reflection and the person read.
"""

from __future__ import annotations

import shlex
from typing import Any

from akira_cli.agents.presets import faults as fault_text
from akira_cli.agents.presets import limits as limit_text
from akira_cli.agents.presets.base import CliReport, register_preset
from akira_cli.agents.presets.jsonout import json_objects, number
from akira_cli.sections import AgentSettings
from akira_cli.usage import Usage


class Claude:
    name = "claude"
    executable = "claude"
    split_stderr = True
    key_hint = "set ANTHROPIC_API_KEY (or log in with `claude` and /login)"

    def command(self, settings: AgentSettings, session_id: str | None) -> str:
        base = settings.command or "claude -p --output-format json"
        words = [f"--permission-mode {shlex.quote(settings.permission_mode or 'acceptEdits')}"]
        if session_id:
            words.append(f"--resume {shlex.quote(session_id)}")
        return " ".join([base, *words, *settings.extra_args])

    def read(self, output: str, exit_code: int | None, stderr: str = "") -> CliReport:
        results = [o for o in json_objects(output) if "result" in o or "is_error" in o]
        report = CliReport(limit=limit_text.detect(f"{output}\n{stderr}"))
        if not results:
            report.failed = exit_code != 0
            report.error = "" if exit_code == 0 else (f"{output}\n{stderr}").strip()[-500:]
            if report.failed and report.limit is None:
                report.fault = fault_text.classify(f"{output}\n{stderr}")
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
        said_failed = data.get("is_error") is True or str(data.get("subtype", "")).startswith("error")
        # a successful answer may talk about limits; only a failed one can be stopped by one
        report.limit = (
            (limit_text.detect(report.answer) or report.limit) if said_failed or exit_code else None
        )
        if said_failed or exit_code != 0:
            report.failed = True
            report.error = report.answer or str(data.get("subtype")) or f"exit {exit_code}"
            if report.limit is None:
                status = data.get("api_error_status")
                status = status if isinstance(status, int) and not isinstance(status, bool) else None
                report.fault = fault_text.classify(report.answer, status)
        denials = refused(data.get("permission_denials"))
        if denials:  # a line of its own that names the error: the retry prompt and reflection pick it
            said = (
                f"error: claude's permission mode refused {'; '.join(denials)}, which changed nothing "
                "(agent.permission_mode sets --permission-mode)"
            )
            if not report.failed:
                report.refused = denials
            report.error = f"{report.error}\n{said}".strip() if report.failed else said
            report.failed = True
        return report


def refused(raw: object) -> list[str]:
    """`permission_denials` as `Write(step_1.txt)`, `Bash(rm -rf build)`."""
    found = []
    for denial in raw if isinstance(raw, list) else []:
        if not isinstance(denial, dict):
            continue
        tool = str(denial.get("tool_name") or "tool")
        given = denial.get("tool_input")
        given = given if isinstance(given, dict) else {}
        what = given.get("file_path") or given.get("path") or given.get("command") or given.get("url") or ""
        found.append(f"{tool}({str(what)[:120]})" if what else tool)
    return found[:20]


register_preset(Claude())
