"""aider: `aider --yes-always --no-pretty --message-file {prompt_file} --no-git` (akira owns the
repository and commits each step itself; in the sandbox `.git/` is read-only, where aider's own
`git add` of a file it creates, and so the file's content, would fail).

Follows aider-chat 0.86.2, which prints plain text: after each model reply a summary line
`Tokens: 2.3k sent, 1.2k cache hit, 512 received. Cost: $0.01 message, $0.05 session.` (`k` and
`M` suffixes; `cache write`/`cache hit` figures in between; no `Cost:` when the model has no
price). The tokens and the per-message cost of every such line are added up, one call each.

aider exits 0 even when the model's API failed: it retries 429/5xx itself for about a minute,
then prints the provider's error (`litellm.RateLimitError: …`, `litellm.AuthenticationError: …`,
wrapped at the terminal's width, with its own hint such as "The API provider is not able to
authenticate you. Check your API key.") and stops. An API error after the last reply is
therefore a failed attempt and a provider fault (transient or a bad key); an exhausted quota
(`You exceeded your current quota`, also a `RateLimitError`) is a usage limit. An edit its edit
format could not apply (`The LLM did not conform to the edit format.`, a SEARCH block that
matched nothing) is a failed attempt whatever the edit format (`diff`, the default of 0.86.2 for
gpt-4o, `whole`, `udiff`, …). A non-zero exit always fails.
"""

from __future__ import annotations

import re

from akira_cli.agents.presets import limits as limit_text
from akira_cli.agents.presets.base import CliReport, register_preset
from akira_cli.agents.presets.verdict import failed
from akira_cli.sections import AgentSettings
from akira_cli.usage import Usage

TOKENS_RE = re.compile(
    r"Tokens:\s*(?P<sent>[\d.,]+)(?P<sk>[kKmM]?)\s*sent,"
    r"(?:[^.]*?(?P<cached>[\d.,]+)(?P<ck>[kKmM]?)\s*cache hit,)?[^.]*?"
    r"(?P<received>[\d.,]+)(?P<rk>[kKmM]?)\s*received\.(?:\s*Cost:\s*\$(?P<cost>[\d.,]+)\s*message)?"
)
API_ERROR_RE = re.compile(r"^.*(?:litellm\.\w+Error|The API provider .*|\w+Error: .*Exception).*$", re.M)
EDIT_FAILED_RE = re.compile(
    r"^.*(?:did not conform to the edit format|SearchReplaceNoExactMatch|Failed to apply edit).*$", re.M
)


def _count(value: str | None, suffix: str | None) -> int:
    if not value:
        return 0
    scale = {"k": 1_000, "m": 1_000_000}.get((suffix or "").lower(), 1)
    return round(float(value.replace(",", "")) * scale)


class Aider:
    name = "aider"
    executable = "aider"
    split_stderr = False
    key_hint = "set the provider's key aider uses (OPENAI_API_KEY, ANTHROPIC_API_KEY, or --api-key)"

    def command(self, settings: AgentSettings, session_id: str | None) -> str:
        base = settings.command or "aider --yes-always --no-pretty --message-file {prompt_file} --no-git"
        return " ".join([base, *settings.extra_args])

    def read(self, output: str, exit_code: int | None, stderr: str = "") -> CliReport:
        text = f"{output}\n{stderr}" if stderr else output
        report = CliReport(answer=text[-4000:])
        last_reply = -1
        for match in TOKENS_RE.finditer(text):
            last_reply = match.end()
            report.usage.add(
                Usage(
                    prompt_tokens=_count(match["sent"], match["sk"]),
                    completion_tokens=_count(match["received"], match["rk"]),
                    cached_tokens=_count(match["cached"], match["ck"]),
                    calls=1,
                    cost_usd=float((match["cost"] or "0").replace(",", "")),
                )
            )
        api_errors = [m for m in API_ERROR_RE.finditer(text) if m.start() > last_reply]
        edit_failed = EDIT_FAILED_RE.search(text)
        if api_errors:
            # aider wraps its messages at the terminal's width: the last error, on one line
            raised = [m for m in api_errors if "Error:" in m.group(0)] or api_errors  # not the hint
            said = " ".join(text[raised[-1].start() :].split())[:1500]
            failed(report, said, limit_in=said)
        elif edit_failed:
            report.failed, report.error = (
                True,
                f"aider could not apply the model's edit: {edit_failed.group(0).strip()}",
            )
        elif exit_code != 0:
            report.failed, report.error = True, text[-1000:]
            report.limit = limit_text.detect(text)
        return report


register_preset(Aider())
