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

from typing import Any

from akira_cli.agents.presets import faults as fault_text
from akira_cli.agents.presets import limits as limit_text
from akira_cli.agents.presets.base import CliReport, register_preset
from akira_cli.agents.presets.jsonout import last_object, number, one_call
from akira_cli.sections import AgentSettings

AUTH_EXIT = 41
"""FatalAuthenticationError: no usable key or login."""
STATUSES = (429, 500, 502, 503, 504, 529, 401, 403)


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
        report = CliReport()
        data = last_object(output, "response", "stats", "error", "session_id") or {}
        failure = last_object(stderr, "error")
        if failure is not None and "error" not in data and (exit_code != 0 or not data):  # not a retried one
            data = {
                **data,
                "error": failure["error"],
                "session_id": data.get("session_id") or failure.get("session_id"),
            }
        report.answer = str(data.get("response") or "")
        report.session_id = data.get("session_id") if isinstance(data.get("session_id"), str) else None
        stats: Any = data.get("stats")
        models = stats.get("models") if isinstance(stats, dict) else None
        for model in (models or {}).values():
            if not isinstance(model, dict):
                continue
            tokens = model.get("tokens")
            usage = one_call(tokens if isinstance(tokens, dict) else {}, "prompt", "candidates", "cached")
            api = model.get("api")
            requests = number(api.get("totalRequests")) if isinstance(api, dict) else 0
            usage.calls = requests or 1
            report.usage.add(usage)
        error = data.get("error")
        if not error and exit_code == 0:
            return report
        report.failed = True
        details: dict[str, Any] = error if isinstance(error, dict) else {}
        message = str(details.get("message") or error or "").strip()
        report.error = message or stderr.strip()[-500:] or f"gemini exited {exit_code}"
        # the error's message says which 429 it is: a quota ("exhausted your daily quota") is a
        # usage limit, "Resource has been exhausted" a rate limit (its stack traces say
        # RESOURCE_EXHAUSTED for both, so they are not read for it)
        report.limit = limit_text.detect(message or stderr)
        if report.limit is None:
            code = details.get("code")
            status = code if isinstance(code, int) and code in STATUSES else None
            if status is None and exit_code is not None:
                status = next((s for s in STATUSES if s % 256 == exit_code), None)
            if exit_code == AUTH_EXIT or code == AUTH_EXIT:
                status = 401
            report.fault = fault_text.classify(report.error, status)
        return report


register_preset(Gemini())
