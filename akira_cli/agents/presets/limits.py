"""Usage-limit messages of agent CLIs, and when the limit resets.

Forms read (as the CLIs print them, on stdout or stderr, plain or inside their JSON):
- Claude Code: `Claude AI usage limit reached|1760000000` (an epoch), and
  `You've hit your limit · resets 5pm` with or without a zone such as `(Europe/Berlin)`; the plan
  limits of Claude Code 2.1.197, inside its JSON `result`: `You've hit your session limit ·
  resets 12:42pm (UTC)`, `… weekly limit …`, `… Opus limit …`;
- Codex 0.169: `You’ve hit your usage limit … try again at 12:35 PM.` (a U+2019 apostrophe),
  with the date when the reset is not today (`… try again at Nov 28th, 2026 12:55 AM.`), or
  `… try again in 2 hours 5 minutes`;
- any apostrophe, `'` or `’`;
- any HTTP 429 quota text (`quota exceeded`, `rate limit ... quota`), such as gemini 0.61's
  `You have exhausted your daily quota on this model.`
A clock time without a zone is the machine's local time; one without a date already past today
means tomorrow.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from akira_cli.agents.base import UsageLimit

LIMIT_RE = re.compile(
    r"usage limit reached|you[\u2019']?ve hit your (?:[\w-]+ )?limit|you have hit your (?:[\w-]+ )?limit"
    r"|quota (?:exceeded|exhausted)|exceeded your (?:current )?quota|exhausted your (?:\w+ )?quota"
    r"|resource_exhausted",
    re.I,
)
EPOCH_RE = re.compile(r"usage limit reached\|(?P<epoch>\d{9,11})", re.I)
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
CLOCK_RE = re.compile(
    r"(?:resets|try again at|reset at|resets at)\s+"
    rf"(?:(?P<month>{'|'.join(MONTHS)})[a-z]*\.?\s+(?P<day>\d{{1,2}})"
    r"(?:st|nd|rd|th)?,?\s+(?:(?P<year>\d{4}),?\s+)?)?"
    r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<ampm>[ap]\.?m\.?)?"
    r"(?:\s*\((?P<zone>[A-Za-z_]+(?:/[A-Za-z_+-]+)+|UTC)\))?",
    re.I,
)
DELTA_RE = re.compile(
    r"(?:try again|resets?|retry) in\s+(?:(?P<h>\d+)\s*h(?:ours?|rs?)?)?[\s,and]*"
    r"(?:(?P<m>\d+)\s*m(?:in(?:ute)?s?)?)?[\s,and]*(?:(?P<s>\d+)\s*s(?:ec(?:ond)?s?)?)?",
    re.I,
)


def detect(text: str, now: datetime | None = None) -> UsageLimit | None:
    """A usage limit in `text`, with its reset time when the text gives one."""
    match = LIMIT_RE.search(text)
    if match is None:
        return None
    now = now or datetime.now().astimezone()
    line = next((ln.strip() for ln in text.splitlines() if LIMIT_RE.search(ln)), match.group(0))
    return UsageLimit(message=line[:300], reset_at=reset_time(text, now))


def reset_time(text: str, now: datetime) -> datetime | None:
    if epoch := EPOCH_RE.search(text):
        return datetime.fromtimestamp(int(epoch["epoch"]), UTC)
    if (delta := DELTA_RE.search(text)) and any(delta.group(k) for k in ("h", "m", "s")):
        hours, minutes, seconds = (int(delta.group(k) or 0) for k in ("h", "m", "s"))
        return now + timedelta(hours=hours, minutes=minutes, seconds=seconds)
    if clock := CLOCK_RE.search(text):
        return _clock(clock, now)
    return None


def _clock(clock: re.Match[str], now: datetime) -> datetime | None:
    hour, minute = int(clock["hour"]), int(clock["minute"] or 0)
    ampm = (clock["ampm"] or "").lower().replace(".", "")
    if ampm == "pm" and hour < 12:
        hour += 12
    elif ampm == "am" and hour == 12:
        hour = 0
    if hour > 23 or minute > 59:
        return None
    zone = now.tzinfo
    if clock["zone"]:
        try:
            zone = UTC if clock["zone"].upper() == "UTC" else ZoneInfo(clock["zone"])
        except (ZoneInfoNotFoundError, ValueError):
            zone = now.tzinfo
    local_now = now.astimezone(zone)
    when = local_now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if clock["month"]:  # a date of its own: that day, even one already past (no wait)
        year, month = int(clock["year"] or local_now.year), MONTHS.index(clock["month"].lower()) + 1
        try:
            return when.replace(year=year, month=month, day=int(clock["day"]))
        except ValueError:  # no such day
            return None
    if when <= local_now:
        when += timedelta(days=1)
    return when
