"""akira's directives have strict shapes (the task-file format): a bullet is a directive only when its whole
text is a known key, a colon and a value of the right shape. Real Kiro files are full of prose
such as `- Verify: the form shows an error` or `- Fallback: use the cache when the API is down`;
those are details, and nothing in them is ever executed. A bullet with the key and almost the
shape (a backticked command followed by prose, say) is a detail too, with a warning.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

DIRECTIVES = ("run", "fallback", "verify", "exists", "contains", "timeout", "depends")
COMMAND_KEYS = ("run", "fallback", "verify")
CODE_SPAN = r"(?P<ticks>`+)(?P<code>[^`](?:.*?[^`])?)(?P=ticks)(?!`)"
CODE_SPAN_RE = re.compile(CODE_SPAN)
STEP_ID = r"(?:T\d{3,}|P?\d+)(?:\.\d+)*[a-z]?"
ID_LIST_RE = re.compile(rf"{STEP_ID}(?:[ \t]*,[ \t]*{STEP_ID})*")
WHOLE_NUMBER_RE = re.compile(r"\d+")
EXAMPLES = {
    "run": "Run: `command`",
    "fallback": "Fallback: `command`",
    "verify": "Verify: `command`",
    "exists": "Exists: `path`",
    "contains": "Contains: `path` `text`",
    "timeout": "Timeout: 120",
    "depends": "Depends: 2.1, 3",
}


@dataclass(frozen=True)
class Reading:
    """A value read in its directive's shape (`value`), or why it is not one (`near_miss`)."""

    value: object = None
    near_miss: str = ""


def _spans(text: str) -> tuple[list[str], str]:
    """The code spans at the start of `text`, one after another, and what is left after them."""
    spans = []
    rest = text.strip()
    while match := CODE_SPAN_RE.match(rest):
        code = match["code"]
        if len(code) > 2 and code[0] == code[-1] == " ":
            code = code[1:-1]
        spans.append(code)
        rest = rest[match.end() :].strip()
    return spans, rest


def read(key: str, value: str) -> Reading:
    """`value` in the shape `key` requires, or a near miss (worth a warning), or nothing."""
    reader = _READERS.get(key)
    return reader(value.strip()) if reader is not None else Reading()


def _command(value: str) -> Reading:
    """One backticked value (a command, or a path for `Exists`)."""
    spans, rest = _spans(value)
    if len(spans) == 1 and not rest and spans[0].strip():
        return Reading(spans[0].strip())
    if spans:
        return Reading(near_miss="only one backticked value may follow the key, and nothing else")
    return Reading()


_PROGRAM_NAMES = (
    "npm npx pnpm yarn node deno bun python python3 pip pip3 pytest uv poetry tox ruff mypy make cmake "
    "cargo go gcc bash sh git docker mkdir cp mv rm echo touch cat ls test grep sed curl ruby bundle "
    "rake gradle mvn java dotnet tsc jest eslint"
)
COMMON_PROGRAMS = frozenset(_PROGRAM_NAMES.split())
"""Programs a command line starts with: `Run: npm ci` without its backticks is a near miss, while
`Verify: make sure the form works` (a long line without a flag) stays prose."""


def _shell(value: str) -> Reading:
    """A backticked command, as `_command`; a command written without its backticks is a near miss."""
    reading = _command(value)
    if reading.value is not None or reading.near_miss or "`" in value:
        return reading
    words = value.split()
    if words and (
        words[0].startswith("./")
        or (words[0] in COMMON_PROGRAMS and (len(words) <= 3 or any(w.startswith("-") for w in words[1:])))
    ):
        return Reading(near_miss="the command must be between backticks")
    return reading


def _path_and_text(value: str) -> Reading:
    spans, rest = _spans(value)
    if len(spans) == 2 and not rest and spans[0].strip() and spans[1]:
        return Reading((spans[0].strip(), spans[1]))
    if spans:
        return Reading(near_miss="it needs a backticked path, then backticked text, and nothing else")
    return Reading()


def _seconds(value: str) -> Reading:
    if WHOLE_NUMBER_RE.fullmatch(value) and int(value) > 0:
        return Reading(float(value))
    if value[:1].isdigit():
        return Reading(near_miss="it needs a whole number of seconds, such as 120")
    return Reading()


def _step_ids(value: str) -> Reading:
    if ID_LIST_RE.fullmatch(value):
        return Reading([word.strip() for word in value.split(",")])
    if re.match(STEP_ID + r"\b", value):
        return Reading(near_miss="it needs step ids separated by commas, and nothing else")
    return Reading()


_READERS: dict[str, Callable[[str], Reading]] = {
    **dict.fromkeys(COMMAND_KEYS, _shell),
    "exists": _command,
    "contains": _path_and_text,
    "timeout": _seconds,
    "depends": _step_ids,
}


def find_cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """One dependency cycle (`[a, b, a]`), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for dep in graph.get(node, []):
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if dep not in state and (found := visit(dep, [*path, dep])):
                return found
        state[node] = 2
        return None

    for node in graph:
        if node not in state and (found := visit(node, [node])):
            return found
    return None


REQUIREMENT_PREFIX_RE = re.compile(r"^req(?:uirement)?s?\.?[ \t]*(?=\d)", re.I)


def requirement_ids(text: str) -> list[str]:
    """'1.1, 2.3' -> ['1.1', '2.3']; a 'Req'/'Requirement' prefix on an id is dropped."""
    ids = []
    for word in text.split(","):
        word = word.strip(" _*`")
        if word[:3].lower() == "req":
            word = REQUIREMENT_PREFIX_RE.sub("", word)
        if word:
            ids.append(word)
    return ids
