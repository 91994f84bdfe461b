"""Parse a Kiro-style tasks.md into a `TaskFile`, in one pass over the raw bytes.

The parser keeps the byte offset of every checkbox so that write-back can change exactly one
byte. Errors name the file, the line and the fix, on one line (SPEC section 2).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable
from pathlib import Path

from akira_cli.errors import AkiraError
from akira_cli.tasks.model import Step, TaskFile

BOM = b"\xef\xbb\xbf"
DIRECTIVES = ("run", "fallback", "verify", "exists", "contains", "timeout", "depends")
MISSPELLING_CUTOFF = 0.85
"""High enough that prose keys such as 'Note' or 'Exit' are never taken for a directive."""

LINE_RE = re.compile(
    r"(?P<indent>[ \t]*)(?:(?P<marker>[-*+]|\d+[.)])(?:[ \t]+|$)"
    r"(?:\[(?P<box>[ xX~-])\](?!\()(?P<optional>\\?\*)?[ \t]*)?)?(?P<rest>.*)"
)
"""Every line: its indentation, list marker, checkbox and the text after them."""
BROKEN_BOX_RE = re.compile(r"\[[ \t]*[xX~-]?[ \t]*\](?!\()")
STEP_ID_RE = re.compile(r"(?P<id>\d+(?:\.\d+)*)\.?(?:[ \t]+|$)")
HEADING_RE = re.compile(r"(?P<hashes>#{1,6})(?:[ \t]+(?P<text>.*?))?(?:[ \t]+#+)?[ \t]*$")
FENCE_RE = re.compile(r"[ \t]*(?P<fence>`{3,}|~{3,})(?P<info>.*)")
KEY_RE = re.compile(r"[_*]{0,2}(?P<key>[A-Za-z]+)[_*]{0,2}[ \t]*:[_*]{0,2}[ \t]*(?P<value>.*)")
"""A 'Key: value' line, as directives and '_Requirements: 1.1_' lines are written."""
CODE_SPAN_RE = re.compile(r"(?P<ticks>`+)(?P<code>.*?[^`])(?P=ticks)(?!`)")
REQUIREMENT_PREFIX_RE = re.compile(r"^req(?:uirement)?s?\.?[ \t]*(?=\d)", re.I)
ID_LIST_SPLIT_RE = re.compile(r"[,;\s]+")


class TaskFileError(AkiraError):
    """A task file that cannot be read or parsed; the message is one line with the fix."""


def read_task_bytes(path: Path) -> bytes:
    """The raw bytes of a task file, or a `TaskFileError` that says how to fix the path."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise TaskFileError(f"{path}: task file not found; check the path or run 'akira init'") from None
    except OSError as exc:
        if path.is_dir():
            raise TaskFileError(
                f"{path}: is a directory, not a task file; pass the path of its tasks.md"
            ) from None
        raise TaskFileError(
            f"{path}: cannot read the task file ({exc.strerror or exc}); check its permissions"
        ) from None


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
        self.top_level_count = 0
        self.stack: list[tuple[int, Step]] = []
        self.continued: Step | None = None
        """The step whose last detail an unbulleted line right below would continue."""
        self.depends_lines: list[tuple[int, Step, str]] = []
        self.comment_since = 0
        self.fence = ""
        self.fence_since = 0
        self.hidden_checkbox_line = 0
        self.directive_handlers: dict[str, Callable[[Step, str, str, int], None]] = {
            "run": self._add_command,
            "fallback": self._add_command,
            "verify": self._add_command,
            "exists": self._add_command,
            "contains": self._add_contains,
            "timeout": self._set_timeout,
            "depends": self._add_depends,
        }

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
        if heading["hashes"] == "#" and not self.title:
            self.title = (heading["text"] or "").strip()
        self.stack.clear()
        self.continued = None

    # --- steps -------------------------------------------------------------------------------

    def _add_step(
        self, number: int, box_offset: int, indent: int, box: str, optional: bool, rest: str
    ) -> None:
        numbered = STEP_ID_RE.match(rest)
        explicit_id = numbered.group(1) if numbered else None
        parent = self._parent_for(indent, explicit_id)
        step_id = explicit_id or self._position_id(parent)
        if step_id in self.by_id:
            self._refuse_duplicate(step_id, number, positional=explicit_id is None)
        step = Step(
            id=step_id,
            title=(rest[numbered.end() :] if numbered else rest).strip(),
            box=box,
            optional=optional,
            line=number,
            box_offset=box_offset,
            depth=parent.depth + 1 if parent else 0,
            parent_id=parent.id if parent else None,
        )
        self._register(step, parent, indent)

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
            if parent := self.by_id.get(".".join(parts[:length])):
                return parent
        return None

    def _position_id(self, parent: Step | None) -> str:
        if parent is None:
            return str(self.top_level_count + 1)
        return f"{parent.id}.{len(parent.children) + 1}"

    def _refuse_duplicate(self, step_id: str, number: int, positional: bool) -> None:
        first = self.by_id[step_id]
        why = " (an unnumbered step takes its position as id)" if positional else ""
        raise self.error(
            number,
            f"duplicate step id '{step_id}' (first used on line {first.line}){why}",
            "give every step its own number",
        )

    def _register(self, step: Step, parent: Step | None, indent: int) -> None:
        if parent is None:
            self.top_level_count += 1
        else:
            parent.children.append(step.id)
        self.steps.append(step)
        self.by_id[step.id] = step
        self.stack.append((indent, step))
        self.continued = None

    # --- lines under a step ------------------------------------------------------------------

    def _body_line(self, number: int, indent: int, bulleted: bool, content: str) -> None:
        if bulleted and content[:1] == "[" and (broken := BROKEN_BOX_RE.match(content)):
            raise self.error(
                number, f"malformed checkbox '{broken[0]}'", "write '[ ]', '[x]', '[-]' or '[~]'"
            )
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
        """Apply a requirements line or a directive; False when it is prose with a colon."""
        match = KEY_RE.match(content)
        if match is None:
            return False
        key = match["key"].lower()
        if key in ("requirements", "requirement"):
            owner.requirements.extend(_requirement_ids(match["value"]))
            return True
        if not bulleted:
            return False
        if handler := self.directive_handlers.get(key):
            handler(owner, key, match["value"].strip(), number)
            return True
        self._refuse_misspelled_directive(match["key"], number)
        return False

    def _refuse_misspelled_directive(self, key: str, number: int) -> None:
        guess = difflib.get_close_matches(key.lower(), DIRECTIVES, n=1, cutoff=MISSPELLING_CUTOFF)
        if guess:
            raise self.error(
                number,
                f"unknown directive '{key}' (did you mean '{guess[0].capitalize()}'?)",
                "fix the spelling, or reword the bullet if it is a note",
            )

    def _add_command(self, owner: Step, key: str, value: str, number: int) -> None:
        target: list[str] = getattr(owner, key)
        target.append(self._required(key, _unwrap(value), number))

    def _required(self, key: str, value: str, number: int) -> str:
        if not value:
            what = "path" if key == "exists" else "command"
            name = key.capitalize()
            raise self.error(number, f"empty '{name}:' directive", f"write the {what} after it")
        return value

    def _add_contains(self, owner: Step, key: str, value: str, number: int) -> None:
        path_and_text = _path_and_text(value)
        if path_and_text is None:
            raise self.error(
                number,
                f"'Contains:' needs a path and a text, got '{value}'",
                "write it as Contains: `path/to/file` `text`",
            )
        owner.contains.append(path_and_text)

    def _set_timeout(self, owner: Step, key: str, value: str, number: int) -> None:
        raw = _unwrap(value)
        try:
            seconds = float(raw.removesuffix("s").strip())
        except ValueError:
            seconds = math.nan
        if not (math.isfinite(seconds) and seconds > 0):
            raise self.error(
                number,
                f"'Timeout:' must be a positive number of seconds, got '{raw}'",
                "write it as e.g. 'Timeout: 120'",
            )
        owner.timeout = seconds

    def _add_depends(self, owner: Step, key: str, value: str, number: int) -> None:
        words = [word.rstrip(".") for word in ID_LIST_SPLIT_RE.split(value.replace("`", ""))]
        step_ids = [word for word in words if word]
        if not step_ids:
            raise self.error(number, "empty 'Depends:' directive", "list step ids, e.g. 'Depends: 1, 2.1'")
        if owner.depends is None:
            owner.depends = []
        if [word.lower() for word in step_ids] == ["none"]:
            return
        owner.depends.extend(step_ids)
        self.depends_lines.extend((number, owner, step_id) for step_id in step_ids)

    # --- end of file -------------------------------------------------------------------------

    def finish(self) -> TaskFile:
        self._refuse_unclosed_block()
        if not self.steps:
            raise TaskFileError(f"{self.path}: no checkbox items ('- [ ] 1. ...'); add at least one task")
        self._check_depends()
        return TaskFile(path=self.path, title=self.title, steps=self.steps)

    def _refuse_unclosed_block(self) -> None:
        """An unclosed fence or comment would silently hide the tasks after it."""
        if not self.hidden_checkbox_line:
            return
        if self.fence:
            raise self.error(
                self.fence_since,
                f"code fence is never closed, so the task on line {self.hidden_checkbox_line} is ignored",
                f"close it with a line of {self.fence}",
            )
        if self.comment_since:
            raise self.error(
                self.comment_since,
                f"HTML comment is never closed, so the task on line {self.hidden_checkbox_line} is ignored",
                "close it with '-->'",
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


def _byte_index(text: str, index: int) -> int:
    return index if text.isascii() else len(text[:index].encode("utf-8"))


def _code_span(text: str) -> tuple[str, str] | None:
    """The content of a code span at the start of `text`, and what follows it."""
    match = CODE_SPAN_RE.match(text)
    if match is None:
        return None
    code = match["code"]
    if len(code) > 2 and code[0] == code[-1] == " ":
        code = code[1:-1]
    return code, text[match.end() :].strip()


def _unwrap(value: str) -> str:
    """A value that starts with a code span is that span; otherwise it is the whole text."""
    span = _code_span(value)
    if span:
        return span[0].strip()
    return value.strip() if value.strip("` ") else ""


def _path_and_text(value: str) -> tuple[str, str] | None:
    span = _code_span(value)
    if span:
        path, rest = span[0].strip(), span[1]
        text_span = _code_span(rest)
        text = text_span[0] if text_span else rest
    else:
        path, _, text = value.partition(" ")
        text = text.strip()
    return (path, text) if path and text else None


def _requirement_ids(text: str) -> list[str]:
    """'1.1, 2.3' -> ['1.1', '2.3']; a 'Req'/'Requirement' prefix on an id is dropped."""
    ids = []
    for word in text.split(","):
        word = word.strip(" _*`")
        if word[:3].lower() == "req":
            word = REQUIREMENT_PREFIX_RE.sub("", word)
        if word:
            ids.append(word)
    return ids
