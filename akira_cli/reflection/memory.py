"""Episodic memory: `.state/memory/reflections.jsonl`, append-only, one reflection per line."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from akira_cli.events import utcnow
from akira_cli.fileio import name_path
from akira_cli.redaction import redact_bytes

Category = Literal[
    "root_cause", "misconception", "environment", "approach_error", "edge_case", "verification"
]


class Reflection(BaseModel):
    id: str
    task_id: str
    step_id: str
    attempt: int
    created_at: str = Field(default_factory=utcnow)
    category: Category
    analysis: str
    suggestion: str
    action_items: list[str] = Field(default_factory=list)
    confidence: float = Field(ge=0, le=1)
    source: Literal["llm", "heuristic"]
    signature: str = ""
    tokens: int = 0

    def render(self) -> str:
        """The same text goes into the retry prompt and the escalation file."""
        lines = [
            f"### Attempt {self.attempt} ({self.category}, {self.source})",
            f"- What went wrong: {self.analysis}",
            f"- What to do differently: {self.suggestion}",
        ]
        lines += [f"  - {item}" for item in self.action_items]
        return "\n".join(lines)


class ReflectionMemory:
    def __init__(self, memory_dir: Path) -> None:
        self.path = memory_dir / "reflections.jsonl"

    def append(self, reflection: Reflection) -> None:
        """One write of one whole line, then fsync: a crash leaves whole lines only."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, redact_bytes((reflection.model_dump_json() + "\n").encode()))
            os.fsync(fd)
        except OSError as exc:
            name_path(exc, self.path)
            raise
        finally:
            os.close(fd)

    def __iter__(self) -> Iterator[Reflection]:
        if not self.path.exists():
            return
        with self.path.open(encoding="utf-8") as handle:
            for line in handle:
                try:
                    yield Reflection.model_validate_json(line)
                except ValidationError:
                    continue

    def recent(self, task_id: str, step_id: str, limit: int = 3) -> list[Reflection]:
        mine = [r for r in self if r.task_id == task_id and r.step_id == step_id]
        return mine[-limit:] if limit else []

    def by_ids(self, ids: list[str]) -> list[Reflection]:
        wanted = set(ids)
        return [r for r in self if r.id in wanted]
