"""Mistyped checkboxes: a list item that opens with what is almost a box (`[]`, `[ x ]`, `[y]`,
`[xx]`), or a box glued to its list marker (`-[ ]`). Read as a note, such a step would never
run and the task would end "done"; so every one of them is named, in one refusal."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from akira_cli.tasks.reading import TaskFileError

BAD_BOX_RE = re.compile(r"\[(?P<inner>[ \t]*[^\]\s]{0,2}[ \t]*)\](?=[ \t]|$)")
"""What a list item opens with when its checkbox is mistyped: `[]`, `[ x ]`, `[y]`, `[xx]`, `[✓]`.
A link (`[a](b)`), spec-kit's `[P]` and a number (`[1]`) are not boxes."""
GLUED_BOX_RE = re.compile(r"(?P<marker>[-*+])\[(?P<box>[ xX~-])\]")
"""A checkbox glued to its list marker (`-[ ] 4. Title`, `*[x]`): Markdown reads no list item,
so it would be folded into the step above as text."""
FIX = "write '[ ]' for a step to do or '[x]' for a done one"


@dataclass(frozen=True)
class BadBox:
    line: int
    written: str
    meant: str = ""
    """For a box glued to its marker, the item as it was meant (`- [ ]`)."""


def refusal(path: Path, bad: list[BadBox]) -> TaskFileError:
    """One line that names every mistyped box, at the first one's line."""
    first = bad[0]
    if len(bad) == 1 and first.meant:
        return TaskFileError(
            f"{path}:{first.line}: '{first.written}' has no space after its list marker, so it is no "
            f"checkbox; write '{first.meant}'"
        )
    if len(bad) == 1:
        return TaskFileError(f"{path}:{first.line}: '{first.written}' is not a checkbox; {FIX}")
    listed = ", ".join(f"'{box.written}' on line {box.line}" for box in bad)
    glued = [f"'{box.meant}'" for box in bad if box.meant]
    spaced = f", with a space after the list marker ({', '.join(glued)})" if glued else ""
    return TaskFileError(f"{path}:{first.line}: {len(bad)} lines hold no checkbox: {listed}; {FIX}{spaced}")
