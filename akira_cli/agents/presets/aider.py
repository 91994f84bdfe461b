"""aider: `aider --yes-always --no-pretty --message-file {prompt_file}`.

Reads its plain-text summary lines (aider 0.8x): `Tokens: 2.3k sent, 512 received. Cost: $0.01
message, $0.05 session.` (`k` and `M` suffixes, and cache figures in between, are read too).
The tokens and the per-message cost of every such line are added up.
"""

from __future__ import annotations

import re

from akira_cli.agents.presets import CliReport, register_preset
from akira_cli.agents.presets import limits as limit_text
from akira_cli.config import AgentSettings
from akira_cli.usage import Usage

TOKENS_RE = re.compile(
    r"Tokens:\s*(?P<sent>[\d.,]+)(?P<sk>[kKmM]?)\s*sent,"
    r"(?:[^.]*?(?P<cached>[\d.,]+)(?P<ck>[kKmM]?)\s*cache hit,)?[^.]*?"
    r"(?P<received>[\d.,]+)(?P<rk>[kKmM]?)\s*received\.(?:\s*Cost:\s*\$(?P<cost>[\d.,]+)\s*message)?"
)


def _count(value: str | None, suffix: str | None) -> int:
    if not value:
        return 0
    scale = {"k": 1_000, "m": 1_000_000}.get((suffix or "").lower(), 1)
    return round(float(value.replace(",", "")) * scale)


class Aider:
    name = "aider"
    executable = "aider"

    def command(self, settings: AgentSettings, session_id: str | None) -> str:
        base = settings.command or "aider --yes-always --no-pretty --message-file {prompt_file}"
        return " ".join([base, *settings.extra_args])

    def read(self, output: str, exit_code: int | None) -> CliReport:
        report = CliReport(answer=output[-4000:], limit=limit_text.detect(output))
        for match in TOKENS_RE.finditer(output):
            report.usage.add(
                Usage(
                    prompt_tokens=_count(match["sent"], match["sk"]),
                    completion_tokens=_count(match["received"], match["rk"]),
                    cached_tokens=_count(match["cached"], match["ck"]),
                    calls=1,
                    cost_usd=float((match["cost"] or "0").replace(",", "")),
                )
            )
        report.failed = exit_code != 0
        report.error = output[-1000:] if report.failed else ""
        return report


register_preset(Aider())
