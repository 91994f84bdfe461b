"""akira's reply on a review thread: its own account of what it did, never the agent's free text
(docs/review-and-pull-requests.md, "The reply").

`Addressed in 1a2b3c4: calc.py, checks imports passed`, or `No change needed: <reason>` with the
agent's reason cut to one line. Everything in it is made plain before it is posted: secrets
masked, and no markdown image (a tracking pixel), link, raw HTML or @mention (a ping to a team),
whatever a file name or the agent's line held.
"""

from __future__ import annotations

import re

from akira_cli.redaction import redact
from akira_cli.state.follow import FixItem

LIMIT = 300
SHOWN_FILES = 8
IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://\S+|\bwww\.\S+", re.IGNORECASE)
HTML = re.compile(r"<[^>]*>")
MENTION = re.compile(r"(?<![\w@])@(?=[A-Za-z0-9])")
CHECK_NAME = re.compile(r"^check `(.+)`$")


def plain(text: str, limit: int = LIMIT) -> str:
    """One line of plain words: masked, without images, links, HTML or mentions."""
    line = " ".join(redact(text).split())
    line = IMAGE.sub("", line)
    line = LINK.sub(lambda found: found[1], line)
    line = URL.sub("(link removed)", HTML.sub("", line))
    line = MENTION.sub("", line).replace("`", "'")
    line = " ".join(line.split())
    return line[:limit] + ("…" if len(line) > limit else "")


def check_name(name: str) -> str:
    found = CHECK_NAME.match(name)
    return found[1] if found else name


def reply_text(item: FixItem) -> str:
    if not item.commit:
        return plain(f"No change needed: {item.summary or 'the agent found nothing to change'}")
    files = item.files[:SHOWN_FILES] + (
        [f"{len(item.files) - SHOWN_FILES} more"] if len(item.files) > SHOWN_FILES else []
    )
    changed = ", ".join(files) or "no file"
    checks = ", ".join(check_name(name) for name in item.passed)
    ran = f", checks {checks} passed" if checks else ", no check ran"
    version = f" (the comment as edited at {item.edited})" if item.edited else ""
    return plain(f"Addressed in {item.commit[:7]}{version}: {changed}{ran}")
