"""The parsed form of a Kiro-style tasks.md: one model for the file, one per step."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field, PrivateAttr


class Step(BaseModel):
    id: str
    """Leading number ("2.1"), or the position among its siblings when there is none."""
    title: str
    box: str
    """The checkbox character: ' ', 'x', 'X', '-' or '~'."""
    optional: bool = False
    line: int
    """1-based line of the checkbox item."""
    box_offset: int
    """Byte offset of the checkbox character in the file, for exact write-back."""
    depth: int = 0
    parent_id: str | None = None
    children: list[str] = Field(default_factory=list)
    details: list[str] = Field(default_factory=list)
    requirements: list[str] = Field(default_factory=list)
    run: list[str] = Field(default_factory=list)
    fallback: list[str] = Field(default_factory=list)
    verify: list[str] = Field(default_factory=list)
    exists: list[str] = Field(default_factory=list)
    contains: list[tuple[str, str]] = Field(default_factory=list)
    timeout: float | None = None
    depends: list[str] | None = None
    parallel: bool = False
    """spec-kit's `[P]`: may run in parallel with its neighbours (recorded, not acted on)."""
    story: str | None = None
    """spec-kit's `[US1]`: the user story the step belongs to (context for the agent)."""
    heading: str | None = None
    """The heading above the step (`## Phase 2: Payments API`): context for the agent."""

    @property
    def ticked(self) -> bool:
        return self.box in ("x", "X")

    @property
    def has_checks(self) -> bool:
        return bool(self.verify or self.exists or self.contains)


class TaskFile(BaseModel):
    path: Path
    title: str = ""
    steps: list[Step]
    """Every checkbox item in document order, parents included."""
    warnings: list[str] = Field(default_factory=list)
    """What the parse read leniently (repeated numbers, near-miss directives), line by line."""

    _index: tuple[int, dict[str, Step]] = PrivateAttr(default=(-1, {}))

    def __eq__(self, other: object) -> bool:
        """Equal fields (the lookup index does not count)."""
        if not isinstance(other, TaskFile):
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    def get(self, step_id: str) -> Step | None:
        count, index = self._index
        if count != len(self.steps):
            index = {}
            for step in self.steps:
                index.setdefault(step.id, step)  # the first of a repeated id, as before
            self._index = (len(self.steps), index)
        return index.get(step_id)

    def leaves(self, include_optional: bool = False) -> list[Step]:
        """The executable steps: no children, and not optional unless asked for."""
        return [
            step
            for step in self.steps
            if not step.children and (include_optional or not self.is_optional(step))
        ]

    def under_ticked_parent(self, step: Step) -> bool:
        """A ticked parent is done, whatever its children say: the person ticked it."""
        parent = self.get(step.parent_id) if step.parent_id else None
        while parent is not None:
            if parent.ticked:
                return True
            parent = self.get(parent.parent_id) if parent.parent_id else None
        return False

    def is_optional(self, step: Step) -> bool:
        """A step is optional when it or one of its ancestors is marked optional."""
        current: Step | None = step
        while current is not None:
            if current.optional:
                return True
            current = self.get(current.parent_id) if current.parent_id else None
        return False
