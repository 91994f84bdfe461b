"""The spec's acceptance criteria (the morning review): real Kiro requirements.md and spec-kit spec.md files
(tests/data/criteria, sources in its SOURCES.tsv), the ids steps name, unknown ids warned about
at start with their line, and the table the completion report and `loop progress --json` end
with, from real loops."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from akira_cli.cli import main
from akira_cli.criteria.refs import requirement_texts, served, unknown_id_warnings
from akira_cli.criteria.spec import load_spec
from akira_cli.tasks.parser import parse_task_text
from akira_cli.tasks.reading import read_task_bytes
from tests.support.workspace import Akira

DATA = Path(__file__).parent / "data" / "criteria"
REAL = sorted(path.parent for path in DATA.glob("*/*/tasks.md"))

REQUIREMENTS = """
# Requirements Document

## Introduction

A tiny feature.

## Requirements

### Requirement 1: Files

**User Story:** As a user, I want files, so that I can read them.

#### Acceptance Criteria

1. WHEN the step runs THEN the system SHALL write a.txt
2. IF b.txt is missing THEN the system SHALL write it
   and say so

### Requirement 2

**User Story:** As a user, I want c.

#### Acceptance Criteria

1. WHEN asked THE system SHALL write c.txt

### Requirement 3

#### Acceptance Criteria

1. THE system SHALL log every write
"""

TASKS = """
# Implementation Plan

- [ ] 1. Write a
  - Run: `echo a > a.txt`
  - Exists: `a.txt`
  - _Requirements: 1.1_
- [ ] 2. Write b and c
  - Run: `echo b > b.txt && echo c > c.txt`
  - _Requirements: 1.2, 2.1_
- [ ] 3. Write d
  - Run: `echo d > d.txt`
  - Contains: `d.txt` `d`
  - _Requirements: 9.9_
"""


@pytest.mark.parametrize("folder", REAL, ids=lambda p: p.name)
def test_real_spec_files_parse_into_criteria(folder: Path) -> None:
    """Every real sample parses without a warning, each criterion with its text and line."""
    task_path = folder / "tasks.md"
    spec = load_spec(task_path)
    assert spec is not None and spec.warnings == []
    assert spec.kind == ("kiro" if folder.parent.name == "kiro" else "spec-kit")
    assert len(spec.criteria) >= 8
    lines = spec.path.read_text(encoding="utf-8").splitlines()
    for criterion in spec.criteria.values():
        line = lines[criterion.line - 1]
        number = criterion.id.rsplit(".", 1)[-1] + "." if spec.kind == "kiro" else criterion.id
        assert (
            criterion.text
            and number in line
            and criterion.text.startswith(line.split(number, 1)[1][:20].strip(" *:"))
        )
        if spec.kind == "kiro":
            assert "SHALL" in criterion.text.upper() or "MUST" in criterion.text.upper()
    task = parse_task_text(read_task_bytes(task_path), task_path)
    assert unknown_id_warnings(task, spec) == []


def test_real_kiro_ranges_and_whole_requirements_are_expanded() -> None:
    """kythira's tasks.md writes `_Requirements: 2.1–2.4, 3.1–3.4_` and `4.1–4.6, 5.1–5.3`."""
    task_path = DATA / "kiro" / "kythira-clang-format" / "tasks.md"
    spec = load_spec(task_path)
    assert spec is not None
    task = parse_task_text(read_task_bytes(task_path), task_path)
    step7, step8 = task.get("7"), task.get("8")
    assert step7 is not None and step8 is not None
    assert served(step7, spec) == ["2.1", "2.2", "2.3", "2.4", "3.1", "3.2", "3.3", "3.4"]
    assert served(step8, spec) == [*(f"4.{n}" for n in range(1, 7)), "5.1", "5.2", "5.3"]
    texts = requirement_texts(step7, task)
    assert texts[0].startswith("2.1: WHEN the `format` target is invoked THEN it SHALL apply")
    assert len(texts) == 8


def test_real_spec_kit_steps_name_criteria_in_their_text() -> None:
    """dnd-tracker's steps say `(covers FR-006)` and `Reference spec.md FR-004`."""
    task_path = DATA / "spec-kit" / "dnd-tracker-007-monster-management" / "tasks.md"
    spec = load_spec(task_path)
    assert spec is not None and {"FR-001", "SC-001"} <= set(spec.criteria)
    task = parse_task_text(read_task_bytes(task_path), task_path)
    named = {step.id: served(step, spec) for step in task.steps if served(step, spec)}
    assert named == {"T031": ["FR-006"], "T032": ["FR-010"]}
    step = task.get("T031")
    assert step is not None
    assert requirement_texts(step, task_path) == [f"FR-006: {spec.criteria['FR-006'].text}"]


def test_requirement_texts_for_a_whole_requirement_and_without_a_spec(tmp_path: Path) -> None:
    folder = tmp_path / "feat"
    folder.mkdir()
    (folder / "tasks.md").write_text("- [ ] 1. Files\n  - _Requirements: 1, 3.1_\n")
    task = parse_task_text(read_task_bytes(folder / "tasks.md"), folder / "tasks.md")
    step = task.steps[0]
    assert requirement_texts(step, task) == []
    (folder / "requirements.md").write_text(textwrap.dedent(REQUIREMENTS))
    assert requirement_texts(step, task) == [
        "1: Files — As a user, I want files, so that I can read them.",
        "1.1: WHEN the step runs THEN the system SHALL write a.txt",
        "1.2: IF b.txt is missing THEN the system SHALL write it and say so",
        "3.1: THE system SHALL log every write",
    ]


def kiro_workspace(tmp_path: Path) -> Akira:
    root = tmp_path / "ws"
    assert main(["init", str(root)]) == 0
    akira = Akira(root)
    tasks = akira.write_task("feat", TASKS)
    (tasks.parent / "requirements.md").write_text(textwrap.dedent(REQUIREMENTS).lstrip())
    return akira


@pytest.mark.slow
def test_the_criteria_table_on_a_kiro_spec(tmp_path: Path) -> None:
    """A criterion no step names, one whose step is unverified, and an unknown id (a warning at
    start with its line); the report ends with the table and "Not covered by evidence"."""
    akira = kiro_workspace(tmp_path)
    done = akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "script")
    assert done.code == 0, done.err
    warnings = [line for line in done.err.splitlines() if "names requirement" in line]
    assert warnings == [
        f"akira: warning: {akira.root / 'Specs/feat/tasks.md'}:13: step 3 names requirement 9.9, which "
        f"{akira.root / 'Specs/feat/requirements.md'} lacks; fix the id in tasks.md or add it to requirements.md"
    ]
    task_id = akira.task_id()
    report = (akira.root / "Logs" / "completion_reports" / f"{task_id}.md").read_text()
    table = report[report.index("## Acceptance criteria") :]
    assert table.index("## Not covered by evidence") > table.index("| **3.1**")
    rows = {line.split("**")[1]: line for line in table.splitlines() if line.startswith("| **")}
    assert list(rows) == ["1.1", "1.2", "2.1", "3.1"]
    assert "| 1: yes |" in rows["1.1"] and "Exists `a.txt`" in rows["1.1"]
    assert "| 2: no |" in rows["1.2"] and "| 2: no |" in rows["2.1"]
    assert rows["3.1"].startswith("| **3.1** THE system SHALL log every write | — | — |")
    missing = table[table.index("## Not covered by evidence") :]
    assert "**1.1**" not in missing
    assert (
        "- **1.2** IF b.txt is missing THEN the system SHALL write it and say so: no step that names"
        in missing
    )
    assert "- **3.1** THE system SHALL log every write: no step names it" in missing
    progress = akira.cli("loop", "progress", "--task-id", task_id, "--json")
    data = json.loads(progress.out)
    assert [row["id"] for row in data["criteria"]] == ["1.1", "1.2", "2.1", "3.1"]
    assert data["not_covered"] == ["1.2", "2.1", "3.1"]
    first = data["criteria"][0]
    assert first["covered"] and first["steps"][0]["step_id"] == "1" and first["steps"][0]["verified"]
    assert first["steps"][0]["checks"] == ["Exists `a.txt`"] and first["steps"][0]["review"] is None
    plain = akira.cli("loop", "progress", "--task-id", task_id)
    assert plain.out.splitlines()[-1] == "criteria with evidence: 1/4; without: 1.2, 2.1, 3.1"


@pytest.mark.slow
def test_a_requirements_file_that_does_not_parse_is_a_warning_never_a_refusal(tmp_path: Path) -> None:
    akira = kiro_workspace(tmp_path)
    (akira.root / "Specs" / "feat" / "requirements.md").write_text("# Notes\n\nJust prose, no criteria.\n")
    done = akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "script")
    assert done.code == 0, done.err
    assert "requirements.md: no acceptance criteria found" in done.err
    report = (akira.root / "Logs" / "completion_reports" / f"{akira.task_id()}.md").read_text()
    assert "## Acceptance criteria" not in report


SPEC_MD = """
# Feature Specification: Notes

## Requirements *(mandatory)*

### Functional Requirements

- **FR-001**: System MUST write notes.txt
- **FR-002**: System MUST keep a log
  of every note

## Success Criteria *(mandatory)*

- **SC-001**: A user finds their note within 1 second
"""

SPEC_TASKS = """
# Tasks: Notes

## Phase 1: Setup

- [ ] T001 Write the notes file (covers FR-001)
  - Run: `echo n > notes.txt`
  - Exists: `notes.txt`
- [ ] T002 [P] Keep a log
  - Run: `echo l > log.txt`
  - _Requirements: FR-002_
"""


@pytest.mark.slow
def test_a_spec_kit_spec_md(tmp_path: Path) -> None:
    """spec-kit's layout: specs/<NNN-feature>/ with spec.md beside tasks.md, `.specify/` at the root."""
    root = tmp_path / "proj"
    (root / ".specify").mkdir(parents=True)
    feature = root / "specs" / "001-notes"
    feature.mkdir(parents=True)
    (feature / "spec.md").write_text(textwrap.dedent(SPEC_MD).lstrip())
    (feature / "tasks.md").write_text(textwrap.dedent(SPEC_TASKS).lstrip())
    akira = Akira(root)
    done = akira.cli("loop", "start", "--task", "specs/001-notes/tasks.md", "--agent", "script")
    assert done.code == 0, done.err
    assert "names requirement" not in done.err
    report = (root / "Logs" / "completion_reports" / f"{akira.task_id()}.md").read_text()
    rows = [line for line in report.splitlines() if line.startswith("| **")]
    assert [row.split("**")[1] for row in rows] == ["FR-001", "FR-002", "SC-001"]
    assert "| T001 | T001: yes |" in rows[0] and "| T002 | T002: no |" in rows[1]
    assert "FR-002** System MUST keep a log of every note" in rows[1]
    missing = report[report.index("## Not covered by evidence") :]
    assert "**FR-001**" not in missing and "**FR-002**" in missing and "**SC-001**" in missing


@pytest.mark.slow
def test_a_parent_that_names_criteria_is_evidenced_by_its_steps(tmp_path: Path) -> None:
    """Kiro files often name requirements on a parent task: its executed children carry them."""
    akira = kiro_workspace(tmp_path)
    akira.write_task(
        "feat",
        """
        - [ ] 1. Files
          - _Requirements: 1_
          - [ ] 1.1 Write a
            - Run: `echo a > a.txt`
            - Exists: `a.txt`
          - [ ] 1.2 Write b
            - Run: `echo b > b.txt`
        """,
    )
    done = akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "script")
    assert done.code == 0, done.err
    data = json.loads(akira.cli("loop", "progress", "--task-id", akira.task_id(), "--json").out)
    rows = {row["id"]: row for row in data["criteria"]}
    assert [step["step_id"] for step in rows["1.1"]["steps"]] == ["1.1", "1.2"]
    assert [step["verified"] for step in rows["1.2"]["steps"]] == [True, False]
    assert data["not_covered"] == ["2.1", "3.1"]


def test_a_parent_whose_steps_are_all_optional_stands_for_itself(tmp_path: Path) -> None:
    """RpiDNS's custom-period writes `- [ ] 1. Create the picker` with only `- [ ]* 1.1` under it."""
    task_path = DATA / "kiro" / "rpidns-custom-period" / "tasks.md"
    spec = load_spec(task_path)
    assert spec is not None
    from akira_cli.criteria.table import rows_for
    from akira_cli.state.models import LoopState

    task = parse_task_text(read_task_bytes(task_path), task_path)
    state = LoopState(task_id="task_20261125_000000", task_path=str(task_path))
    rows = {row.criterion.id: row for row in rows_for(spec, task, state, [])}
    assert [step.step_id for step in rows["1.1"].steps] == ["1"]
    assert rows["1.1"].steps[0].done and not rows["1.1"].covered  # ticked by a person: no evidence
    assert rows["1.1"].steps[0].review is None


def test_bulleted_criteria_are_numbered_by_place_and_sub_bullets_belong_to_their_criterion(
    tmp_path: Path,
) -> None:
    (tmp_path / "requirements.md").write_text(
        "### Requirement 3 - Bulleted\n#### Acceptance Criteria\n- first\n- second\n"
        "### Requirement 4\n#### Acceptance Criteria\n"
        "1. WHEN checks are chosen THEN they SHALL come from:\n   - `bugprone-*`\n   - `modernize-*`\n"
        "2. WHEN one is off THEN a comment SHALL say why\n"
    )
    spec = load_spec(tmp_path / "tasks.md")
    assert spec is not None
    assert {c.id: c.text for c in spec.criteria.values()} == {
        "3.1": "first",
        "3.2": "second",
        "4.1": "WHEN checks are chosen THEN they SHALL come from: `bugprone-*` `modernize-*`",
        "4.2": "WHEN one is off THEN a comment SHALL say why",
    }


@pytest.mark.slow
def test_the_agents_prompt_gets_the_criteria_a_range_names(tmp_path: Path) -> None:
    """kythira writes `_Requirements: 2.1–2.4_`; the prompt used to get none of them."""
    root = tmp_path / "ws"
    assert main(["init", str(root)]) == 0
    akira = Akira(root)
    path = akira.write_task(
        "feat", "- [ ] 1. Format target\n  - Run: `echo ok > ok.txt`\n  - _Requirements: 2.1–2.2_\n"
    )
    (path.parent / "requirements.md").write_text(
        (DATA / "kiro" / "kythira-clang-format" / "requirements.md").read_text()
    )
    akira.write_config("agent:\n  kind: command\n  command: cp {prompt_file} prompt.md\n")
    done = akira.cli("loop", "start", "--task", "Specs/feat/tasks.md")
    assert done.code == 0, done.err
    prompt = (root / "prompt.md").read_text()
    assert "- 2.1: WHEN the `format` target is invoked THEN it SHALL apply `clang-format -i`" in prompt
    assert "- 2.2: WHEN `format` runs THEN it SHALL process all matching files" in prompt


def test_what_real_tasks_write_after_requirements(tmp_path: Path) -> None:
    """Seen in kythira's 47 Kiro specs: spans across requirements (`15.1-18.7`), notes after an
    id (`3.4 (done)`), prose (`All SSL requirements`), and sub-headings among the criteria."""
    (tmp_path / "requirements.md").write_text(
        "### Requirement 1\n#### Acceptance Criteria\n1. THE a SHALL x\n2. THE a SHALL y\n"
        "### Requirement 2\n#### Acceptance Criteria\n##### Unit tests\n1. THE b SHALL x\n"
        "##### Real tests\n2. THE b SHALL y\n3. THE b SHALL z\n"
    )
    (tmp_path / "tasks.md").write_text(
        "- [ ] 1. Span\n  - _Requirements: 1.2-2.2_\n- [ ] 2. Noted\n  - _Requirements: 2.3 (done), 9.9 (later)_\n"
        "- [ ] 3. Prose\n  - _Requirements: All SSL requirements_\n"
    )
    spec = load_spec(tmp_path / "tasks.md")
    assert spec is not None and list(spec.criteria) == ["1.1", "1.2", "2.1", "2.2", "2.3"]
    task = parse_task_text(read_task_bytes(tmp_path / "tasks.md"), tmp_path / "tasks.md")
    assert [served(step, spec) for step in task.steps] == [["1.2", "2.1", "2.2"], ["2.3"], []]
    warnings = unknown_id_warnings(task, spec)
    assert len(warnings) == 1 and warnings[0].startswith(
        f"{tmp_path / 'tasks.md'}:4: step 2 names requirement 9.9,"
    )
