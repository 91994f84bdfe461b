"""Parse a Kiro-style tasks.md into a `TaskFile`, in one pass over the raw bytes.

The parser keeps the byte offset of every checkbox so that write-back can change exactly one
byte. Errors name the file, the line and the fix, on one line.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from shlex import quote

from akira_cli.tasks import boxes, directives
from akira_cli.tasks.directives import DIRECTIVES, STEP_ID
from akira_cli.tasks.model import Step, TaskFile
from akira_cli.tasks.reading import BOM, TaskFileError, read_task_bytes

MISSPELLING_CUTOFF = 0.85
"""High enough that prose keys such as 'Note' or 'Exit' are never taken for a directive."""

LINE_RE = re.compile(
    r"(?P<indent>[ \t]*)(?:(?P<marker>[-*+]|\d+[.)])(?:[ \t]+|$)"
    r"(?:\[(?P<box>[ xX~-])\](?!\()(?P<optional>\\?\*)?[ \t]*)?)?(?P<rest>.*)"
)
"""Every line: its indentation, list marker, checkbox and the text after them."""
STEP_ID_RE = re.compile(
    rf"(?P<bold>\*\*)?(?i:task[ \t]+)?(?P<id>{STEP_ID})"
    r"(?:[.:)]|[ \t]+[-–—:])?(?(bold)\*\*)[.:]?(?=[ \t]|$)[ \t]*"
)
"""The written number of a step, in every form real files use: `1.`, `2.1`, `4.1.1.1:`, `**8.1**`,
`**Task 3:**`, `Task 3.2 -`, `P2.1.`, `14a.`, `1)` and spec-kit's `T001`."""
MARKER_RE = re.compile(r"\[(?P<marker>P|US\d+)\][ \t]*")
"""spec-kit's markers after the id: `[P]` (may run in parallel), `[US1]` (its user story)."""
HEADING_RE = re.compile(r"(?P<hashes>#{1,6})(?:[ \t]+(?P<text>.*?))?(?:[ \t]+#+)?[ \t]*$")
FENCE_RE = re.compile(r"[ \t]*(?P<fence>`{3,}|~{3,})(?P<info>.*)")
KEY_RE = re.compile(r"[_*]{0,2}(?P<key>[A-Za-z]+)[_*]{0,2}[ \t]*:[_*]{0,2}[ \t]*(?P<value>.*)")
"""A 'Key: value' line, as directives and '_Requirements: 1.1_' lines are written."""


def parse_task_file(path: Path) -> TaskFile:
    return parse_task_text(read_task_bytes(path), path)


def parse_task_text(data: bytes | str, path: Path) -> TaskFile:
    """Parse task-file content; `path` is used for the model and for error messages."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    start = len(BOM) if raw.startswith(BOM) else 0
    body = raw[start:]
    if not body.strip():
        raise TaskFileError(f"{path}: task file is empty; add at least one task ('- [ ] 1. ...')")
    parser = _Parser(path)
    parser.run(_decode(body, path), body, start)
    return parser.finish()


def _decode(body: bytes, path: Path) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = body.count(b"\n", 0, exc.start) + 1
        raise TaskFileError(f"{path}:{line}: not valid UTF-8; save the file with UTF-8 encoding") from None


class _Parser:
    """Line-by-line state: open comment or fence, the indentation stack, the step being filled."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.title = ""
        self.steps: list[Step] = []
        self.by_id: dict[str, Step] = {}
        self.stack: list[tuple[int, Step]] = []
        self.continued: Step | None = None
        """The step whose last detail an unbulleted line right below would continue."""
        self.depends_lines: list[tuple[int, Step, str]] = []
        self.comment_since = 0
        self.fence = ""
        self.fence_since = 0
        self.hidden_checkbox_line = 0
        self.latest: dict[str, Step] = {}
        """The last step with each written number (a repeated number's later step wins)."""
        self.heading: str | None = None
        self.warnings: list[str] = []
        self.bad_boxes: list[boxes.BadBox] = []

    def warn(self, line: int, message: str) -> None:
        self.warnings.append(f"{quote(str(self.path))}:{line}: {message}")

    def error(self, line: int, problem: str, fix: str) -> TaskFileError:
        return TaskFileError(f"{self.path}:{line}: {problem}; {fix}")

    # --- lines -------------------------------------------------------------------------------

    def run(self, text: str, body: bytes, offset: int) -> None:
        """Feed every line; `offset` is the byte offset of `body` in the file (after a BOM)."""
        lines = text.split("\n")
        # Byte lengths differ from character lengths only when the file is not pure ASCII.
        byte_lengths = [len(line) for line in body.split(b"\n")] if not body.isascii() else None
        for index, line in enumerate(lines):
            self.feed(index + 1, offset, line)
            offset += (byte_lengths[index] if byte_lengths else len(line)) + 1

    def feed(self, number: int, offset: int, text: str) -> None:
        if self.fence:
            self._inside_fence(number, text)
            return
        line = text
        commented = bool(self.comment_since) or "<!--" in line
        if commented:
            line = self._without_comments(number, line)
        line = line.rstrip()
        if not line or (("```" in line or "~~~" in line) and self._opens_fence(number, line)):
            self.continued = None
            return
        match = LINE_RE.match(line)
        assert match is not None  # every line matches: all of its parts are optional
        indent, marker, box, optional, rest = match.groups()
        if commented:  # the blanked-out comment would leave a run of spaces in the text
            rest = " ".join(rest.split())
        width = len(indent) if "\t" not in indent else len(indent.expandtabs(4))
        if box:
            box_offset = offset + _byte_index(text, match.start("box"))
            self._add_step(number, box_offset, width, box, optional is not None, rest)
        elif line[0] == "#":
            self._heading(line)
        elif marker is None and (glued := boxes.GLUED_BOX_RE.match(rest)):
            self.bad_boxes.append(boxes.BadBox(number, glued[0], f"{glued['marker']} [{glued['box']}]"))
        else:
            self._body_line(number, width, marker is not None, rest.strip())

    def _without_comments(self, number: int, text: str) -> str:
        """Blank out HTML comments with spaces, so columns and offsets stay where they were."""
        if self.comment_since:
            end = text.find("-->")
            if end < 0:
                self._note_hidden_checkbox(number, text)
                return ""
            self.comment_since = 0
            text = " " * (end + 3) + text[end + 3 :]
        while (start := text.find("<!--")) >= 0:
            end = text.find("-->", start + 4)
            if end < 0:
                self.comment_since, self.hidden_checkbox_line = number, 0
                return text[:start]
            text = text[:start] + " " * (end + 3 - start) + text[end + 3 :]
        return text

    def _opens_fence(self, number: int, line: str) -> bool:
        match = FENCE_RE.match(line)
        if match is None or (match["fence"][0] == "`" and "`" in match["info"]):
            return False
        self.fence, self.fence_since, self.hidden_checkbox_line = match["fence"], number, 0
        return True

    def _inside_fence(self, number: int, text: str) -> None:
        closing = text.strip()
        if closing.startswith(self.fence) and closing.count(self.fence[0]) == len(closing):
            self.fence = ""
        else:
            self._note_hidden_checkbox(number, text)

    def _note_hidden_checkbox(self, number: int, text: str) -> None:
        if not self.hidden_checkbox_line and (match := LINE_RE.match(text)) and match["box"]:
            self.hidden_checkbox_line = number

    def _heading(self, line: str) -> None:
        heading = HEADING_RE.match(line)
        if heading is None:
            return
        text = (heading["text"] or "").strip()
        if heading["hashes"] == "#" and not self.title:
            self.title = text
        else:
            self.heading = text or None
        self.stack.clear()
        self.continued = None

    # --- steps -------------------------------------------------------------------------------

    def _add_step(
        self, number: int, box_offset: int, indent: int, box: str, optional: bool, rest: str
    ) -> None:
        numbered = STEP_ID_RE.match(rest)
        written = numbered["id"] if numbered else None
        title = rest[numbered.end() :] if numbered else rest
        parallel, story = False, None
        while marker := MARKER_RE.match(title):
            parallel = parallel or marker["marker"] == "P"
            story = story or (marker["marker"] if marker["marker"] != "P" else None)
            title = title[marker.end() :]
        parent = self._parent_for(indent, written)
        step_id = written or f"#{len(self.steps) + 1}"
        if step_id in self.by_id:
            step_id = self._suffixed(step_id, number)
        step = Step(
            id=step_id,
            title=title.strip(),
            box=box,
            optional=optional,
            line=number,
            box_offset=box_offset,
            depth=parent.depth + 1 if parent else 0,
            parent_id=parent.id if parent else None,
            parallel=parallel,
            story=story,
            heading=self.heading,
        )
        if written:
            self.latest[written] = step
        self._register(step, parent, indent)

    def _suffixed(self, written: str, number: int) -> str:
        """A number written twice: the later step gets `3~2` (then `3~3`), with a warning."""
        first = self.by_id[written]
        count = 2
        while f"{written}~{count}" in self.by_id:
            count += 1
        self.warn(
            number,
            f"step number {written} is used again (first on line {first.line}); "
            f"this one is {written}~{count}",
        )
        return f"{written}~{count}"

    def _parent_for(self, indent: int, explicit_id: str | None) -> Step | None:
        """Indentation decides; in a flat file the dotted id names the parent instead."""
        while self.stack and self.stack[-1][0] >= indent:
            self.stack.pop()
        if self.stack:
            return self.stack[-1][1]
        return self._dotted_parent(explicit_id) if explicit_id else None

    def _dotted_parent(self, step_id: str) -> Step | None:
        parts = step_id.split(".")
        for length in range(len(parts) - 1, 0, -1):
            if parent := self.latest.get(".".join(parts[:length])):
                return parent
        return None

    def _register(self, step: Step, parent: Step | None, indent: int) -> None:
        if parent is not None:
            parent.children.append(step.id)
        self.steps.append(step)
        self.by_id[step.id] = step
        self.stack.append((indent, step))
        self.continued = None

    # --- lines under a step ------------------------------------------------------------------

    def _body_line(self, number: int, indent: int, bulleted: bool, content: str) -> None:
        if bulleted and content[:1] == "[" and (bad := boxes.BAD_BOX_RE.match(content)):
            inner = bad["inner"].strip()
            if inner != "P" and not inner.isdigit():
                # Read as a note, the step would silently never run, and the task end "done".
                self.bad_boxes.append(boxes.BadBox(number, bad[0]))
                return
        owner = self._owner(indent)
        if owner is None or not content:
            self.continued = None
        elif not (":" in content and self._keyed_line(owner, content, number, bulleted)):
            self._add_detail(owner, content, continues=not bulleted)
        else:
            self.continued = None

    def _owner(self, indent: int) -> Step | None:
        """The innermost step indented less than this line."""
        for step_indent, step in reversed(self.stack):
            if step_indent < indent:
                return step
        return None

    def _add_detail(self, owner: Step, content: str, continues: bool) -> None:
        if continues and self.continued is owner and owner.details:
            owner.details[-1] = f"{owner.details[-1]} {content}"
        else:
            owner.details.append(content)
        self.continued = owner

    # --- directives --------------------------------------------------------------------------

    def _keyed_line(self, owner: Step, content: str, number: int, bulleted: bool) -> bool:
        """Apply a requirements line or a directive of the right shape; False for a detail."""
        match = KEY_RE.match(content)
        if match is None:
            return False
        key = match["key"].lower()
        if key in ("requirements", "requirement"):
            owner.requirements.extend(directives.requirement_ids(match["value"]))
            return True
        if not bulleted:
            return False
        if key not in DIRECTIVES:
            self._note_misspelling(match["key"], number)
            return False
        value = match["value"].strip()
        if content.startswith(("_", "*")):  # Kiro's `_Depends: 2.1_` or a bold key
            value = value.rstrip("_*").strip()
        reading = directives.read(key, value)
        if reading.value is None:
            if reading.near_miss:
                example = directives.EXAMPLES[key]
                self.warn(
                    number,
                    f"'{match['key']}:' is read as a note, not a directive: "
                    f"{reading.near_miss} (write it as {example})",
                )
            return False
        self._apply(owner, key, reading.value, number)
        return True

    def _note_misspelling(self, key: str, number: int) -> None:
        guess = difflib.get_close_matches(key.lower(), DIRECTIVES, n=1, cutoff=MISSPELLING_CUTOFF)
        guess = guess or [name for name in DIRECTIVES if sorted(name) == sorted(key.lower())]  # 'Rnu'
        if guess:
            self.warn(number, f"'{key}:' is read as a note (did you mean '{guess[0].capitalize()}'?)")

    def _apply(self, owner: Step, key: str, value: object, number: int) -> None:
        if key == "timeout":
            owner.timeout = float(value)  # type: ignore[arg-type]
        elif key == "contains":
            owner.contains.append(value)  # type: ignore[arg-type]
        elif key == "depends":
            ids: list[str] = value  # type: ignore[assignment]
            owner.depends = [*(owner.depends or []), *ids]
            self.depends_lines.extend((number, owner, step_id) for step_id in ids)
        else:
            getattr(owner, key).append(value)

    # --- end of file -------------------------------------------------------------------------

    def finish(self) -> TaskFile:
        if self.bad_boxes:
            raise boxes.refusal(self.path, self.bad_boxes)
        self._note_unclosed_block()
        if not self.steps:
            raise TaskFileError(f"{self.path}: no checkbox items ('- [ ] 1. ...'); add at least one task")
        self._check_depends()
        return TaskFile(path=self.path, title=self.title, steps=self.steps, warnings=self.warnings)

    def _note_unclosed_block(self) -> None:
        """An unclosed fence or comment hides the tasks after it: say so, line by line."""
        if not self.hidden_checkbox_line:
            return
        if self.fence:
            self.warn(
                self.fence_since,
                f"code fence is never closed, so the task on line {self.hidden_checkbox_line} "
                f"is ignored; close it with a line of {self.fence}",
            )
        elif self.comment_since:
            self.warn(
                self.comment_since,
                f"HTML comment is never closed, so the task on line {self.hidden_checkbox_line} "
                "is ignored; close it with '-->'",
            )

    def _check_depends(self) -> None:
        for number, owner, step_id in self.depends_lines:
            if step_id == owner.id:
                raise self.error(number, f"step '{step_id}' depends on itself", "remove it from 'Depends:'")
            if step_id not in self.by_id:
                raise self.error(
                    number,
                    f"'Depends:' names unknown step '{step_id}'",
                    "use the id of a step in this file",
                )
        self._refuse_cycles()

    def _refuse_cycles(self) -> None:
        cycle = directives.find_cycle({step.id: step.depends or [] for step in self.steps})
        if cycle:
            raise self.error(
                self.by_id[cycle[0]].line,
                f"'Depends:' lines form a cycle ({' -> '.join(cycle)})",
                "remove one of those dependencies",
            )


def _byte_index(text: str, index: int) -> int:
    return index if text.isascii() else len(text[:index].encode("utf-8"))
