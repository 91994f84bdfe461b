"""The `checks:` section of `config/autonomous_loop.yaml`: the project checks run after every
step, and what else is a step's exam (docs/design.md, the exam)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import Field, model_validator

from akira_cli.sections import Section


class ProjectCheck(Section):
    """A project check, run after every step (a plain string is its `run`)."""

    run: str
    """The command (bash -c), in the workspace or the step's worktree, inside the sandbox."""
    name: str | None = None
    """Its name in reports; by default the command."""
    timeout: float | None = Field(None, gt=0)
    """Seconds it may take; by default `agent.command_timeout_seconds`."""

    @property
    def label(self) -> str:
        return self.name or self.run


class ChecksSettings(Section):
    """The project checks, and the exam files besides the usual ones. `checks:` is either the
    list of checks, or a mapping with these keys."""

    commands: list[ProjectCheck] = Field(default_factory=list)
    """The project checks: each a command line, or a mapping (`run`, `name`, `timeout`)."""
    exam: list[str] = Field(default_factory=list)
    """More exam files (globs on paths under the work folder, `*` crossing folders), e.g.
    `golden/*`: a step that passes only with one changed is not verified."""
    exam_exclude: list[str] = Field(default_factory=list)
    """Files that are never a step's exam, though the usual rules would make them one."""

    @model_validator(mode="before")
    @classmethod
    def _a_list(cls, value: Any) -> Any:
        if isinstance(value, list):
            value = {"commands": value}
        if isinstance(value, dict) and isinstance(value.get("commands"), list):
            commands = value["commands"]
            value = {**value, "commands": [{"run": c} if isinstance(c, str) else c for c in commands]}
        return value

    def __iter__(self) -> Iterator[ProjectCheck]:  # type: ignore[override]
        return iter(self.commands)

    def __len__(self) -> int:
        return len(self.commands)

    def __bool__(self) -> bool:
        return bool(self.commands)
