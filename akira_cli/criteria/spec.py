"""Reading a feature's acceptance criteria: Kiro's `requirements.md` (`### Requirement N`, its
numbered criteria under "Acceptance Criteria", ids `N.M`) or spec-kit's `spec.md` (`FR-###`,
`SC-###`), whichever lies beside the tasks.md.

A real file read leniently: what does not parse is a warning, never a refusal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from shlex import quote
from typing import Literal

from akira_cli import nofollow

SPEC_FILES = (("requirements.md", "kiro"), ("spec.md", "spec-kit"))
MAX_SPEC_BYTES = 2 * 1024 * 1024

REQUIREMENT_HEADING_RE = re.compile(
    r"#{2,4}[ \t]+(?:\*\*)?Requirement[ \t]+(?P<id>\d+(?:\.\d+)*)\.?(?:\*\*)?[ \t]*"
    r"(?:[:.\-–—][ \t]*(?P<title>.*?))?[ \t#*]*$",
    re.I,
)
CRITERIA_HEADING_RE = re.compile(r"[ \t]*(?:#{2,6}[ \t]+)?(?:\*\*|__)?acceptance criteria\b", re.I)
CRITERION_RE = re.compile(r"(?P<indent>[ \t]*)(?:(?P<number>\d+)[.)]|[-*+])[ \t]+(?P<text>\S.*)")
SPECKIT_RE = re.compile(
    r"[ \t]*(?:[-*+][ \t]+)?(?:\*\*|__)?(?P<id>(?:FR|SC|NFR)-\d+[A-Za-z]?)(?:\*\*|__)?"
    r"[ \t]*[:.\-–—]?[ \t]*(?:\*\*|__)?[ \t]*(?P<text>.*)"
)
SPECKIT_MENTION_RE = re.compile(r"\b(?:FR|SC|NFR)-\d+[A-Za-z]?\b")
MARKUP_RE = re.compile(r"\*\*|__")
FENCE_RE = re.compile(r"[ \t]*(```|~~~)")


@dataclass(frozen=True)
class Criterion:
    id: str
    """`1.2` (Kiro) or `FR-001` / `SC-003` (spec-kit)."""
    text: str
    line: int
    """1-based line in the spec file."""
    requirement: str = ""
    """Kiro: the requirement it belongs to (`1`); empty for spec-kit."""


@dataclass
class Spec:
    path: Path
    kind: Literal["kiro", "spec-kit"]
    criteria: dict[str, Criterion] = field(default_factory=dict)
    requirements: dict[str, str] = field(default_factory=dict)
    """Kiro: a requirement's title and user story by its id (`1`)."""
    warnings: list[str] = field(default_factory=list)

    def members(self, requirement_id: str) -> list[str]:
        """A Kiro requirement's criteria ids, in order."""
        return [c.id for c in self.criteria.values() if c.requirement == requirement_id]


def find_spec_file(task_path: Path) -> tuple[Path, Literal["kiro", "spec-kit"]] | None:
    """The criteria file beside a tasks.md (Kiro's first, then spec-kit's), or None."""
    for name, kind in SPEC_FILES:
        candidate = task_path.parent / name
        if candidate.is_symlink() or candidate.is_file():  # a link out: `load_spec` says it is refused
            return candidate, kind  # type: ignore[return-value]
    return None


def load_spec(task_path: Path) -> Spec | None:
    """The feature's criteria, or None when no criteria file lies beside the task file."""
    found = find_spec_file(task_path)
    if found is None:
        return None
    path, kind = found
    spec = Spec(path, kind)
    try:  # a regular file whose links stay in the spec's folder: a planted link is never followed
        data = nofollow.read(path.parent, path.name, MAX_SPEC_BYTES + 1)
    except OSError as exc:
        spec.warnings.append(
            f"{quote(str(path))}: cannot read it ({exc.strerror}); the report has no criteria table"
        )
        return spec
    if len(data) > MAX_SPEC_BYTES:
        spec.warnings.append(
            f"{quote(str(path))}: larger than {MAX_SPEC_BYTES} bytes; only its start is read"
        )
        data = data[:MAX_SPEC_BYTES]
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    if kind == "kiro":
        _KiroReader(spec).read(text)
    else:
        _read_speckit(spec, text)
    if not spec.criteria:
        shape = (
            "'### Requirement N' headings with numbered criteria under 'Acceptance Criteria'"
            if kind == "kiro"
            else "'- **FR-001**: ...' or '- **SC-001**: ...' lines"
        )
        spec.warnings.append(
            f"{quote(str(path))}: no acceptance criteria found (akira reads {shape}); "
            "the report has no criteria table"
        )
    return spec


class _KiroReader:
    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.requirement = ""
        self.in_criteria = False
        self.criterion: str = ""
        self.count = 0
        self.level = 99
        self.indent = 0
        self.fenced = False

    def read(self, text: str) -> None:
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.rstrip()
            if FENCE_RE.match(line):
                self.fenced = not self.fenced
                continue
            if not self.fenced:
                self._line(number, line)

    def _line(self, number: int, line: str) -> None:
        if heading := REQUIREMENT_HEADING_RE.match(line):
            self.requirement, self.in_criteria, self.criterion, self.count = heading["id"], False, "", 0
            self.spec.requirements[self.requirement] = _plain(heading["title"] or "")
        elif self.requirement and CRITERIA_HEADING_RE.match(line):
            self.in_criteria, self.criterion = True, ""
            self.level = _level(line) or 99  # a bold "**Acceptance Criteria:**" line: no level
        elif self.in_criteria and _level(line) > self.level:
            self.criterion = ""  # a sub-heading among the criteria ("##### Unit tests")
        elif line.startswith("#"):
            self.in_criteria, self.criterion = False, ""
            if not line.startswith("####"):
                self.requirement = ""  # a new section: what follows belongs to no requirement
        elif not line.strip():
            return
        elif self.in_criteria:
            self._criterion_line(number, line)
        elif self.requirement:
            self._story(line)

    def _criterion_line(self, number: int, line: str) -> None:
        found = CRITERION_RE.match(line)
        indent = len(line) - len(line.lstrip())
        if found and (not self.criterion or indent <= self.indent):
            self.count += 1  # a bulleted criterion is numbered by its place, as Kiro counts
            criterion_id = f"{self.requirement}.{found['number'] or self.count}"
            if criterion_id in self.spec.criteria:
                first = self.spec.criteria[criterion_id].line
                self.spec.warnings.append(
                    f"{quote(str(self.spec.path))}:{number}: criterion {criterion_id} is numbered again "
                    "(first on "
                    f"line {first}); the first one counts"
                )
                self.criterion = ""
                return
            self.criterion, self.indent = criterion_id, indent
            self.spec.criteria[criterion_id] = Criterion(
                criterion_id, _plain(found["text"]), number, self.requirement
            )
        elif self.criterion:  # a wrapped line or a sub-bullet: part of the criterion
            old = self.spec.criteria[self.criterion]
            text = f"{old.text} {_plain(line.strip().lstrip('-*+ '))}".strip()
            self.spec.criteria[self.criterion] = Criterion(old.id, text, old.line, old.requirement)

    def _story(self, line: str) -> None:
        text = re.sub(r"^user story:\s*", "", _plain(line), flags=re.I)
        old = self.spec.requirements.get(self.requirement, "")
        joiner = " — " if old and "—" not in old else " "
        self.spec.requirements[self.requirement] = f"{old}{joiner}{text}" if old else text


def _read_speckit(spec: Spec, text: str) -> None:
    fenced = False
    current = ""
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if FENCE_RE.match(line):
            fenced, current = not fenced, ""
            continue
        if fenced:
            continue
        found = SPECKIT_RE.match(line)
        if found and found["text"]:
            criterion_id = found["id"].upper()
            if criterion_id in spec.criteria:
                first = spec.criteria[criterion_id].line
                spec.warnings.append(
                    f"{quote(str(spec.path))}:{number}: {criterion_id} is defined again "
                    f"(first on line {first}); "
                    "the first one counts"
                )
                current = ""
                continue
            spec.criteria[criterion_id] = Criterion(criterion_id, _plain(found["text"]), number)
            current = criterion_id
        elif current and line.startswith((" ", "\t")) and line.strip():
            old = spec.criteria[current]
            spec.criteria[current] = Criterion(old.id, f"{old.text} {_plain(line.strip())}", old.line)
        else:
            current = ""


def _level(line: str) -> int:
    """A markdown heading's level (`#####` is 5), 0 for any other line."""
    stripped = line.lstrip()
    level = len(stripped) - len(stripped.lstrip("#"))
    return level if 0 < level <= 6 and stripped[level : level + 1] in (" ", "\t") else 0


def _plain(text: str) -> str:
    return MARKUP_RE.sub("", text).strip()
