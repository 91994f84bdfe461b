"""Provider faults in an agent CLI's answer: the model's API failed, not the agent.

- Transient, waited out with backoff: HTTP 429, 500, 502, 503, 504 and 529, "overloaded",
  "rate limit" (Claude Code 2.1.197's `API Error: Repeated 529 Overloaded errors …` and
  `API Error: Request rejected (429) · Rate limited`, codex 0.169's `We’re currently experiencing
  high demand …` and `exceeded retry limit, last status: 429 Too Many Requests`, Gemini CLI's
  `{"error": {"code": 500, …}}` and `Resource has been exhausted`, aider's `litellm.RateLimitError`).
- A refused key, never retried: 401 and 403, `authentication_error`, "invalid api key", Claude
  Code's `Invalid API key · Fix external API key`, the Gemini API's 400 `API key not valid`.

A usage limit is read first (`limits.detect`): a plan's limit is a wait until its reset, not a
fault. Only an answer that failed is read for faults: a successful agent may well write "429".
"""

from __future__ import annotations

import re

from akira_cli.agents.presets.base import ProviderFault

TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504, 529})
AUTH_STATUS = frozenset({401, 403})

STATUS_RE = re.compile(
    r"(?:API Error|status(?: code)?|HTTP(?:/\d(?:\.\d)?)?|\"code\")\s*[:=]?\s*(?P<status>[1-5]\d\d)\b", re.I
)
TRANSIENT_RE = re.compile(
    r"overloaded|rate[ _-]?limit|too many requests|service unavailable|internal server error|"
    r"bad gateway|gateway time-?out|RateLimitError|InternalServerError|ServiceUnavailableError|"
    r"APIConnectionError|experiencing high demand|resource has been exhausted",
    re.I,
)
API_STATUS_RE = re.compile(r"API Error\b[^\n]{0,40}?\b(?P<status>429|50[0234]|529|40[13])\b", re.I)
"""Claude Code's `API Error: Repeated 529 Overloaded errors`, `Request rejected (429)`."""
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
    if status is None and (found := STATUS_RE.search(text) or API_STATUS_RE.search(text)):
        status = int(found["status"])
    if status in AUTH_STATUS or (status not in TRANSIENT_STATUS and AUTH_RE.search(text)):
        return ProviderFault(line, status, auth=True)
    if status in TRANSIENT_STATUS or TRANSIENT_RE.search(text):
        return ProviderFault(line, status)
    return None


def _line(text: str) -> str:
    """The telling line: the last one that names the error, else the last one."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for line in reversed(lines):
        if STATUS_RE.search(line) or TRANSIENT_RE.search(line) or AUTH_RE.search(line):
            return line[:300]
    return (lines[-1] if lines else "")[:300]
