"""Gemini CLI headless mode: `gemini --output-format json`, the prompt on stdin.

Reads the one JSON object (Gemini CLI 0.6 and later): `response`, `stats.models.<name>.tokens`
(`prompt` including `cached`, `candidates`, `total`, `cached`) and `error` (`message`).
`--yolo` is added when `agent.permission_mode` is `bypass`.
"""

from __future__ import annotations

from typing import Any

from akira_cli.agents.presets import CliReport, register_preset
from akira_cli.agents.presets import limits as limit_text
from akira_cli.agents.presets.jsonout import json_objects, one_call
from akira_cli.config import AgentSettings


class Gemini:
    name = "gemini"
    executable = "gemini"

    def command(self, settings: AgentSettings, session_id: str | None) -> str:
        words = [settings.command or "gemini --output-format json"]
        if settings.permission_mode == "bypass":
            words.append("--yolo")
        return " ".join([*words, *settings.extra_args])

    def read(self, output: str, exit_code: int | None) -> CliReport:
        report = CliReport(limit=limit_text.detect(output))
        objects = [o for o in json_objects(output) if "response" in o or "error" in o or "stats" in o]
        if not objects:
            report.failed, report.error = exit_code != 0, "" if exit_code == 0 else output[-500:]
            return report
        data = objects[-1]
        report.answer = str(data.get("response") or "")
        stats: Any = data.get("stats")
        models = stats.get("models") if isinstance(stats, dict) else None
        for model in (models or {}).values():
            tokens = model.get("tokens") if isinstance(model, dict) else None
            if isinstance(tokens, dict):
                report.usage.add(one_call(tokens, "prompt", "candidates", "cached"))
        error = data.get("error")
        if error:
            report.failed = True
            report.error = str(error.get("message") if isinstance(error, dict) else error)
        return report


register_preset(Gemini())
