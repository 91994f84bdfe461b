"""Which criteria a step names: its `_Requirements:` ids (ranges such as `2.1–2.4` and a whole
requirement `3` expanded), and for spec-kit the `FR-###`/`SC-###` its text mentions. Ids the
spec lacks are warnings at `loop start`, with their line in tasks.md."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from shlex import quote

from akira_cli.criteria.spec import SPECKIT_MENTION_RE, Spec, load_spec
from akira_cli.tasks.model import Step, TaskFile

RANGE_RE = re.compile(
    r"(?P<head>(?:\d+\.)*)(?P<first>\d+)[ \t]*(?:[–—]|-|\.\.|to)[ \t]*(?:(?P=head))?(?P<last>\d+)$"
)
EVERY = frozenset({"all", "*"})
SPAN_RE = re.compile(r"(?P<first>\d+(?:\.\d+)+)[ \t]*(?:[–—]|-|\.\.|to)[ \t]*(?P<last>\d+(?:\.\d+)+)")
ID_RE = re.compile(r"\d+(?:\.\d+)*[a-z]?", re.I)
"""What a requirement id looks like (`3`, `1.2`, `4.1.2`, `2a`); anything else is prose."""
NOTE_RE = re.compile(r"[ \t]*\([^)]*\)[ \t]*$")
"""A note after an id: `3.4 (done)`."""


def named_ids(step: Step, spec: Spec | None) -> list[str]:
    """The ids a step names, as written (ranges expanded), in order, each once."""
    ids: list[str] = []
    for raw in step.requirements:
        ids.extend(_expand(raw.strip(), spec))
    if spec is None or spec.kind == "spec-kit":
        for text in (step.title, *step.details):
            ids.extend(match.upper() for match in SPECKIT_MENTION_RE.findall(text))
    return list(dict.fromkeys(i for i in ids if i))


def served(step: Step, spec: Spec) -> list[str]:
    """The criteria ids a step serves: a whole requirement's id stands for all its criteria."""
    found: list[str] = []
    for named in named_ids(step, spec):
        if named.lower() in EVERY:
            found.extend(spec.criteria)
        elif named in spec.criteria:
            found.append(named)
        else:
            found.extend(spec.members(named))
    return list(dict.fromkeys(found))


def unknown(step: Step, spec: Spec) -> list[str]:
    """Ids the step names that are neither a criterion nor a requirement of the spec."""
    return [
        named
        for named in named_ids(step, spec)
        if named.lower() not in EVERY and named not in spec.criteria and named not in spec.requirements
    ]


def unknown_id_warnings(task: TaskFile, spec: Spec) -> list[str]:
    """One line per id a step names that the spec lacks, with its line in tasks.md."""
    lines: list[str] | None = None
    warnings = []
    for step in task.steps:
        missing = unknown(step, spec)
        if not missing:
            continue
        if lines is None:
            lines = _read_lines(task.path)
        for named in missing:
            where = _line_of(lines, step, named)
            warnings.append(
                f"{quote(str(task.path))}:{where}: step {step.id} names requirement {named}, which "
                f"{quote(str(spec.path))} lacks; fix the id in tasks.md or add it to {spec.path.name}"
            )
    return warnings


def requirement_texts(step: Step, task: TaskFile | Path) -> list[str]:
    """The texts of the criteria a step names (for the agent's and the reviewer's prompt):
    `"1.2: WHEN … SHALL …"`, preceded by `"1: <title> — <user story>"` for a Kiro requirement the
    step names whole. Empty when the feature has no criteria file."""
    path = task.path if isinstance(task, TaskFile) else task
    spec = _cached_spec(path.resolve(), *_stamp(path))
    if spec is None:
        return []
    texts: list[str] = []
    for named in named_ids(step, spec):
        if named in spec.criteria:
            texts.append(f"{named}: {spec.criteria[named].text}")
        elif named in spec.requirements:
            texts.append(f"{named}: {spec.requirements[named]}")
            texts.extend(f"{member}: {spec.criteria[member].text}" for member in spec.members(named))
        elif named.lower() in EVERY:
            texts.extend(f"{c.id}: {c.text}" for c in spec.criteria.values())
    return list(dict.fromkeys(texts))


def _stamp(task_path: Path) -> tuple[int, int]:
    """What changes when either criteria file changes: a cache key."""
    stamps = []
    for name in ("requirements.md", "spec.md"):
        try:
            stat = (task_path.parent / name).stat()
            stamps.append(stat.st_mtime_ns ^ stat.st_size)
        except OSError:
            stamps.append(0)
    return stamps[0], stamps[1]


@lru_cache(maxsize=16)
def _cached_spec(task_path: Path, kiro: int, speckit: int) -> Spec | None:
    return load_spec(task_path)


def _expand(raw: str, spec: Spec | None) -> list[str]:
    """`2.1–2.4` -> 2.1 … 2.4 and `15.1-18.7` -> every criterion from 15.1 to 18.7 in the spec
    (real Kiro habits); `FR-001` upper-cased; `3.4 (done)` -> 3.4. Prose that is no id
    (`All SSL requirements`) names nothing: only a bare `All` names every criterion."""
    raw = NOTE_RE.sub("", raw).strip()
    if SPECKIT_MENTION_RE.fullmatch(raw.upper()):
        return [raw.upper()]
    if raw.lower() in EVERY:
        return [raw]
    ends = SPAN_RE.fullmatch(raw)
    if ends and spec is not None and ends["first"] in spec.criteria and ends["last"] in spec.criteria:
        order = list(spec.criteria)
        first, last = order.index(ends["first"]), order.index(ends["last"])
        if first <= last:
            return order[first : last + 1]
    found = RANGE_RE.match(raw)
    if found and int(found["first"]) <= int(found["last"]) <= int(found["first"]) + 100:
        head = found["head"]
        return [f"{head}{n}" for n in range(int(found["first"]), int(found["last"]) + 1)]
    return [raw] if ID_RE.fullmatch(raw) else []


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_bytes().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return []


def _line_of(lines: list[str], step: Step, named: str) -> int:
    """The line under the step that names the id (its `_Requirements:` line), else the step's."""
    end = min(len(lines), step.line + 60)
    for number in range(step.line, end + 1):
        text = lines[number - 1] if number - 1 < len(lines) else ""
        if number > step.line and re.match(r"[ \t]*[-*+][ \t]+\[.\]", text):
            break  # the next step
        if named in text or (named[:1].isdigit() and "requirement" in text.lower()):
            return number
    return step.line
