"""Gemini CLI headless mode: `gemini --output-format json --approval-mode auto_edit --skip-trust`,
the prompt on stdin.

Follows gemini-cli 0.61.0:
- without `--approval-mode auto_edit` (or `--yolo`, used when `agent.permission_mode: bypass`) a
  headless run offers no write tools, so every attempt would fail;
- in a folder it does not trust it exits 55 (plain text on stderr): `--skip-trust` trusts it for
  the session (as `GEMINI_CLI_TRUST_WORKSPACE=true` would);
- the answer is one JSON object on stdout (`session_id`, `response`, `stats`); warnings, stack
  traces of retried requests, and the error object (`{"session_id": …, "error": {"type", "message",
  "code"}}`, pretty-printed) go to stderr, which is read apart;
- the exit code of an API error is its HTTP status mod 256 (429 → 173, 500 → 244, 503 → 247,
  529 → 17, 401 → 145); 41 is a failed authentication;
- usage from `stats.models.<name>.tokens` (`prompt` including `cached`, `candidates`, `cached`),
  calls from `stats.models.<name>.api.totalRequests`.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from akira_cli.agents.presets.base import CliReport, register_preset
from akira_cli.agents.presets.jsonout import (
    Count,
    Lenient,
    Name,
    ObjectOrEmpty,
    ObjectOrNone,
    ObjectValues,
    Status,
    Text,
    last_object,
)
from akira_cli.agents.presets.verdict import failed
from akira_cli.sections import AgentSettings
from akira_cli.usage import Usage

AUTH_EXIT = 41
"""FatalAuthenticationError: no usable key or login."""
STATUSES = (429, 500, 502, 503, 504, 529, 401, 403)


class GeminiTokens(Lenient):
    prompt: Count = 0
    candidates: Count = 0
    cached: Count = 0


class GeminiRequests(Lenient):
    totalRequests: Count = 0


class ModelStats(Lenient):
    tokens: Annotated[GeminiTokens, ObjectOrEmpty] = Field(default_factory=GeminiTokens)
    api: Annotated[GeminiRequests | None, ObjectOrNone] = None

    def counted(self) -> Usage:
        requests = self.api.totalRequests if self.api else 0
        tokens = self.tokens
        return Usage(
            prompt_tokens=tokens.prompt,
            completion_tokens=tokens.candidates,
            cached_tokens=tokens.cached,
            calls=requests or 1,
        )


class GeminiStats(Lenient):
    models: Annotated[dict[str, ModelStats], ObjectValues] = Field(default_factory=dict)


def _error(value: Any) -> Any:
    """The error object; a bare message stands for one."""
    if isinstance(value, dict) or not value:
        return value or None
    return {"message": value}


class GeminiError(Lenient):
    message: Text = ""
    code: Status = None


class GeminiOutput(Lenient):
    """The JSON object `gemini --output-format json` prints: the answer on stdout, or the error
    (pretty-printed) on stderr."""

    response: Text = ""
    session_id: Name = None
    stats: Annotated[GeminiStats | None, ObjectOrNone] = None
    error: Annotated[GeminiError | None, BeforeValidator(_error)] = None

    def counted(self) -> Usage:
        usage = Usage()
        for model in (self.stats.models if self.stats else {}).values():
            usage.add(model.counted())
        return usage

    def status(self, exit_code: int | None) -> int | None:
        """The HTTP status of a failure: the error's code, else read from the exit code."""
        code = self.error.code if self.error else None
        if exit_code == AUTH_EXIT or code == AUTH_EXIT:
            return 401
        if code in STATUSES:
            return code
        return next((s for s in STATUSES if s % 256 == exit_code), None)


def read_output(output: str, stderr: str, exit_code: int | None) -> GeminiOutput:
    """The answer on stdout, with the error on stderr when stdout has none and the run failed
    (an error printed for a request the CLI retried is not the run's)."""
    data = last_object(output, "response", "stats", "error", "session_id") or {}
    failure = last_object(stderr, "error")
    if failure is not None and "error" not in data and (exit_code != 0 or not data):
        data = {
            **data,
            "error": failure["error"],
            "session_id": data.get("session_id") or failure.get("session_id"),
        }
    return GeminiOutput.model_validate(data)


class Gemini:
    name = "gemini"
    executable = "gemini"
    split_stderr = True
    key_hint = "set GEMINI_API_KEY (and security.auth.selectedType in .gemini/settings.json)"

    def command(self, settings: AgentSettings, session_id: str | None) -> str:
        base = settings.command or "gemini --output-format json"
        words, given = [base], " ".join([base, *settings.extra_args])
        if not any(flag in given for flag in ("--approval-mode", "--yolo", " -y")):
            mode = "yolo" if settings.permission_mode == "bypass" else "auto_edit"
            words.append(f"--approval-mode {mode}")
        if "--skip-trust" not in given:
            words.append("--skip-trust")
        return " ".join([*words, *settings.extra_args])

    def read(self, output: str, exit_code: int | None, stderr: str = "") -> CliReport:
        data = read_output(output, stderr, exit_code)
        report = CliReport(answer=data.response, session_id=data.session_id, usage=data.counted())
        if data.error is None and exit_code == 0:
            return report
        message = data.error.message.strip() if data.error else ""
        said = message or stderr.strip()[-500:] or f"gemini exited {exit_code}"
        # the error's message says which 429 it is: a quota ("exhausted your daily quota") is a
        # usage limit, "Resource has been exhausted" a rate limit (its stack traces say
        # RESOURCE_EXHAUSTED for both, so they are not read for it)
        return failed(report, said, limit_in=message or stderr, status=data.status(exit_code))


register_preset(Gemini())
