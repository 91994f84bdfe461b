"""Provider faults in an agent CLI's answer: the model's API failed, not the agent.

- Transient, waited out with backoff: what `akira_cli.transient` calls so (HTTP 408, 409, 429,
  5xx and 529, "overloaded", "rate limit": Claude Code 2.1.197's `API Error: Repeated 529
  Overloaded errors …` and `API Error: Request rejected (429) · Rate limited`, codex 0.169's
  `exceeded retry limit, last status: 429 Too Many Requests`, Gemini CLI's `{"error": {"code":
  500, …}}`, aider's `litellm.RateLimitError`).
- A refused key, never retried: 401 and 403, `authentication_error`, "invalid api key", Claude
  Code's `Invalid API key · Fix external API key`, the Gemini API's 400 `API key not valid`.

A usage limit is read first (`limits.detect`): a plan's limit is a wait until its reset, not a
fault. Only an answer that failed is read for faults: a successful agent may well write "429".
"""

from __future__ import annotations

import re

from akira_cli.agents.base import ProviderFault
from akira_cli.transient import TRANSIENT_TEXT, is_transient, is_transient_status, status_in

AUTH_STATUS = frozenset({401, 403})

AUTH_RE = re.compile(
    r"authentication_error|AuthenticationError|invalid (?:x-)?api[ _-]?key|incorrect api key|"
    r"api key not valid|unauthori[sz]ed|permission_error|PermissionDeniedError|"
    r"please run /login|not logged in",
    re.I,
)


def classify(text: str, status: int | None = None) -> ProviderFault | None:
    """The provider fault a failed answer reports, from its HTTP status when the CLI gives one,
    else from its text."""
    line = _line(text)
    status = status if status is not None else status_in(text)
    if status in AUTH_STATUS or (not is_transient_status(status) and AUTH_RE.search(text)):
        return ProviderFault(line, status, auth=True)
    if is_transient(text, status):
        return ProviderFault(line, status)
    return None


def _line(text: str) -> str:
    """The telling line: the last one that names the error, else the last one."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for line in reversed(lines):
        if status_in(line) is not None or TRANSIENT_TEXT.search(line) or AUTH_RE.search(line):
            return line[:300]
    return (lines[-1] if lines else "")[:300]
