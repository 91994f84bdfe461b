"""Which failures are transient: trouble that waiting and trying again can fix, not the work.

One set for every reader of failures: a script step's output, an agent CLI's failed answer and
the LLM client's HTTP statuses. Transient: a busy lock or file, a refused, reset or timed-out
connection, a name that did not resolve, and a model provider that is overloaded, rate limiting
or failing (HTTP 408, 409, 429, any 5xx, Anthropic's 529), as the CLIs and SDKs word it
(Claude Code's `API Error: Repeated 529 Overloaded errors`, codex's `We’re currently experiencing
high demand`, Gemini's `Resource has been exhausted`, litellm's `RateLimitError`).
"""

from __future__ import annotations

import re

RETRY_STATUSES = frozenset({408, 409, 429})
"""Besides every 5xx: a timed-out request, a conflict, too many requests."""

TRANSIENT_TEXT = re.compile(
    r"resource temporarily unavailable|database is locked|could not get lock|"
    r"unable to acquire .*lock|lock(?:file)? .*(?:busy|held)|index\.lock': file exists|text file busy|"
    r"connection (?:refused|reset|timed out)|temporary failure in name resolution|APIConnectionError|"
    r"too many requests|\b429\b|rate[ _-]?limit|RateLimitError|overloaded|experiencing high demand|"
    r"resource has been exhausted|service unavailable|ServiceUnavailableError|internal server error|"
    r"InternalServerError|bad gateway|gateway time-?out|\b50[234]\b (?:bad gateway|service|gateway)",
    re.IGNORECASE,
)

STATUS_RE = re.compile(
    r"(?:API Error|status(?: code)?|HTTP(?:/\d(?:\.\d)?)?|\"code\")\s*[:=]?\s*(?P<status>[1-5]\d\d)\b", re.I
)
"""An HTTP status as messages give it: `HTTP 503`, `status code: 429`, `"code": 500`."""
API_STATUS_RE = re.compile(r"API Error\b[^\n]{0,40}?\b(?P<status>429|50[0234]|529|40[13])\b", re.I)
"""Claude Code's `API Error: Repeated 529 Overloaded errors`, `Request rejected (429)`."""


def is_transient_status(status: int | None) -> bool:
    return status is not None and (status in RETRY_STATUSES or status >= 500)


def status_in(text: str) -> int | None:
    """The HTTP status a message names, if it names one."""
    found = STATUS_RE.search(text) or API_STATUS_RE.search(text)
    return int(found["status"]) if found else None


def is_transient(text: str, status: int | None = None) -> bool:
    """Whether `text` (or `status`, else the status the text names) tells of transient trouble."""
    return is_transient_status(status if status is not None else status_in(text)) or bool(
        TRANSIENT_TEXT.search(text)
    )
