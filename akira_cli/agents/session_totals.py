"""A kept conversation's running usage total (codex 0.169's `exec resume` reports the whole
thread's tokens in `turn.completed.usage`, not the turn's): the last total seen per session, in
`.state/sessions/`, so that each run counts only what it added, across restarts too."""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

from akira_cli.fileio import atomic_write
from akira_cli.usage import Usage

SAFE_ID = re.compile(r"[^A-Za-z0-9._-]")


class SessionTotals:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def growth(self, cli: str, session_id: str, total: Usage) -> Usage:
        """What this run added to the session's tokens; the calls and the cost are the run's own."""
        path = self.folder / f"{cli}-{SAFE_ID.sub('_', session_id)[:120]}.json"
        before = Usage()
        with contextlib.suppress(OSError, ValueError):
            before = Usage.model_validate(json.loads(path.read_text()))
        with contextlib.suppress(OSError):
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write(path, total.model_dump_json().encode(), durable=False)
        if total.prompt_tokens < before.prompt_tokens:  # not the same thread after all: all new
            return total
        return total.model_copy(
            update={
                "prompt_tokens": total.prompt_tokens - before.prompt_tokens,
                "completion_tokens": max(0, total.completion_tokens - before.completion_tokens),
                "cached_tokens": max(0, total.cached_tokens - before.cached_tokens),
            }
        )
