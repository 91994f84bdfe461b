"""The page's frame and the small pieces every page uses; every value escaped."""

from __future__ import annotations

from html import escape
from urllib.parse import quote


def frame(title: str, body: str, data: dict[str, str] | None = None) -> str:
    attributes = "".join(f' data-{name}="{escape(value)}"' for name, value in (data or {}).items())
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title>"
        '<link rel="stylesheet" href="/assets/page.css"></head>'
        f"<body{attributes}>{body}"
        '<script src="/assets/page.js"></script></body></html>'
    )


def status(value: str) -> str:
    return f'<span class="status status-{escape(value)}">{escape(value)}</span>'


def run_link(task_id: str) -> str:
    return f'<a href="/run/{quote(task_id)}">{escape(task_id)}</a>'


def money(value: float | None) -> str:
    return "" if value is None else f"${value:.4f}"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{seconds:.1f}s" if seconds < 10 else f"{secs}s"


def link(url: str, text: str | None = None) -> str:
    safe = url if url.startswith(("https://", "http://")) else ""
    shown = escape(text or url)
    return f'<a href="{escape(safe)}" rel="noreferrer">{shown}</a>' if safe else shown
