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
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from akira_cli.agents.presets import limits
from akira_cli.agents.presets.base import CliReport, register_preset
from akira_cli.agents.presets.jsonout import (
    Count,
    Lenient,
    Money,
    Name,
    ObjectOrEmpty,
    ObjectOrNone,
    Objects,
    Status,
    Text,
    json_objects,
    last_of,
)
from akira_cli.agents.presets.verdict import failed
from akira_cli.sections import AgentSettings
from akira_cli.usage import Usage


class ClaudeTokens(Lenient):
    input_tokens: Count = 0
    output_tokens: Count = 0
    cache_read_input_tokens: Count = 0
    cache_creation_input_tokens: Count = 0


class Denial(Lenient):
    """One of `permission_denials`, shown as `Write(step_1.txt)`, `Bash(rm -rf build)`."""

    tool_name: Text = ""
    tool_input: Annotated[dict[str, Any], ObjectOrEmpty] = Field(default_factory=dict)

    def shown(self) -> str:
        given = self.tool_input
        what = given.get("file_path") or given.get("path") or given.get("command") or given.get("url") or ""
        tool = self.tool_name or "tool"
        return f"{tool}({str(what)[:120]})" if what else tool


class ClaudeResult(Lenient):
    """The JSON object `claude -p --output-format json` prints on stdout."""

    result: Text = ""
    is_error: Annotated[bool, BeforeValidator(lambda value: value is True)] = False
    subtype: Text = ""
    session_id: Name = None
    num_turns: Count = 0
    total_cost_usd: Money = 0.0
    usage: Annotated[ClaudeTokens | None, ObjectOrNone] = None
    api_error_status: Status = None
    permission_denials: Annotated[list[Denial], Objects] = Field(default_factory=list)

    @property
    def said_failed(self) -> bool:
        return self.is_error or self.subtype.startswith("error")

    def counted(self) -> Usage:
        tokens = self.usage or ClaudeTokens()
        cached = tokens.cache_read_input_tokens + tokens.cache_creation_input_tokens
        return Usage(
            prompt_tokens=tokens.input_tokens + cached,
            completion_tokens=tokens.output_tokens,
            cached_tokens=cached,
            calls=max(1, self.num_turns),
            cost_usd=self.total_cost_usd,
        )

    def refused(self) -> list[str]:
        return [denial.shown() for denial in self.permission_denials][:20]


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
        both = f"{output}\n{stderr}"
        data = last_of(ClaudeResult, json_objects(output), "result", "is_error")
        if data is None:  # no JSON: a limit in plain text holds even with exit 0 (older CLIs)
            if exit_code == 0:
                return CliReport(limit=limits.detect(both))
            return failed(CliReport(), both.strip()[-500:], limit_in=both, fault_in=both)
        report = CliReport(answer=data.result, session_id=data.session_id, usage=data.counted())
        if data.said_failed or exit_code != 0:
            said = data.result or data.subtype or f"exit {exit_code}"
            # the plan limit is in the answer; the whole output is read too, for stderr's
            limit_in = f"{data.result}\n{both}"
            failed(report, said, limit_in=limit_in, fault_in=data.result, status=data.api_error_status)
        return refused(report, data.refused())


def refused(report: CliReport, denials: list[str]) -> CliReport:
    """Writes the permission mode refused fail the attempt, in a line of its own that names the
    error (the retry prompt and the reflection pick it)."""
    if not denials:
        return report
    said = (
        f"error: claude's permission mode refused {'; '.join(denials)}, which changed nothing "
        "(agent.permission_mode sets --permission-mode)"
    )
    if not report.failed:
        report.refused = denials
    report.error = f"{report.error}\n{said}".strip() if report.failed else said
    report.failed = True
    return report


register_preset(Claude())
