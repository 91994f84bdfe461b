"""The task-file parser against realistic Kiro files, odd formatting, and every error case."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from types import FrameType

import pytest

from akira_cli.errors import AkiraError
from akira_cli.tasks.model import Step, TaskFile
from akira_cli.tasks.parser import parse_task_file, parse_task_text
from akira_cli.tasks.reading import SETTLE_SECONDS, TaskFileError, read_task_bytes
from tests.support.servers.plans import kiro_plan

DATA = Path(__file__).parent / "data" / "tasks"


def parse(tmp_path: Path, text: str, name: str = "tasks.md") -> TaskFile:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return parse_task_file(path)


def step(task_file: TaskFile, step_id: str) -> Step:
    found = task_file.get(step_id)
    assert found is not None, f"no step {step_id}"
    return found


def ids(task_file: TaskFile) -> list[str]:
    return [step.id for step in task_file.steps]


def boxes_at_offsets(data: bytes, task_file: TaskFile) -> list[str]:
    return [data[s.box_offset : s.box_offset + 1].decode() for s in task_file.steps]


# --- realistic files ---------------------------------------------------------------------------


def test_kiro_plan_ids_hierarchy_and_boxes() -> None:
    plan = parse_task_file(DATA / "kiro_plan.md")
    assert plan.title == "Implementation Plan"
    assert ids(plan) == [
        "1", "2", "2.1", "2.2", "2.3", "3", "3.1", "3.2", "3.3",
        "4", "4.1", "4.2", "4.2.1", "#14", "5",
    ]  # fmt: skip
    assert [s.box for s in plan.steps] == [
        "x", " ", "x", "-", " ", " ", " ", "~", " ", " ", " ", " ", " ", " ", "X",
    ]  # fmt: skip
    assert step(plan, "2").children == ["2.1", "2.2", "2.3"]
    assert step(plan, "4").children == ["4.1", "4.2", "#14"]  # unnumbered: a position id
    assert (step(plan, "4.2.1").parent_id, step(plan, "4.2.1").depth) == ("4.2", 2)
    assert step(plan, "1").parent_id is None and step(plan, "1").depth == 0
    assert step(plan, "#14").title == "Wire the routes into the application factory"
    assert step(plan, "4.1").title == "Add the `GET /recipes` and `GET /recipes/{id}` endpoints"
    assert [s.line for s in plan.steps][:4] == [5, 10, 11, 16]


def test_kiro_plan_optional_requirements_and_details() -> None:
    plan = parse_task_file(DATA / "kiro_plan.md")
    assert [s.id for s in plan.steps if s.optional] == ["2.3", "3.3"]
    assert step(plan, "1").requirements == ["1.1", "1.2"]
    assert step(plan, "3.2").requirements == ["3.3"]  # *Requirements: 3.3*
    assert step(plan, "5").requirements == ["5.1"]  # no emphasis at all
    assert step(plan, "2.1").details[1] == (
        'Normalise ingredient names such as "Café — naïve crème brûlée" to NFC'
    )
    assert step(plan, "2.2").details == [
        "Reject negative quantities and unknown units",
        "Convert between metric and imperial units with a lookup table",
    ]
    assert step(plan, "3.1").details == [
        "Create the schema migration for `recipes` and `ingredients`",
        "Example of the expected schema:",
    ]
    assert step(plan, "#14").details == ["Note: keep the factory free of global state"]
    leaves = ["1", "2.1", "2.2", "3.1", "3.2", "4.1", "4.2.1", "#14", "5"]
    assert [s.id for s in plan.leaves()] == leaves


def test_comments_and_fences_hide_their_checkboxes() -> None:
    plan = parse_task_file(DATA / "kiro_plan.md")
    assert "9" not in ids(plan)
    assert [s.title for s in plan.steps if s.id == "4"] == ["Expose the REST API"]
    assert step(plan, "3.1").requirements == ["3.1", "3.2"]  # picked up after the fence


@pytest.mark.parametrize("name", ["kiro_plan.md", "flat_dotted.md", "runbook.md"])
def test_box_offsets_point_at_the_box_byte(name: str) -> None:
    data = (DATA / name).read_bytes()
    task_file = parse_task_text(data, DATA / name)
    assert boxes_at_offsets(data, task_file) == [s.box for s in task_file.steps]


def test_crlf_and_bom_parse_like_lf(tmp_path: Path) -> None:
    lf_bytes = (DATA / "kiro_plan.md").read_bytes()
    crlf_bytes = b"\xef\xbb\xbf" + lf_bytes.replace(b"\n", b"\r\n")
    lf = parse_task_text(lf_bytes, DATA / "kiro_plan.md")
    crlf = parse(tmp_path, crlf_bytes.decode("utf-8"))
    assert crlf.title == lf.title
    assert [s.model_dump(exclude={"box_offset"}) for s in crlf.steps] == [
        s.model_dump(exclude={"box_offset"}) for s in lf.steps
    ]
    assert boxes_at_offsets(crlf_bytes, crlf) == [s.box for s in lf.steps]


def test_flat_file_nests_by_dotted_ids() -> None:
    flat = parse_task_file(DATA / "flat_dotted.md")
    assert flat.title == "Tasks"
    assert ids(flat) == ["1", "1.1", "1.2", "2", "2.1", "2.1.1", "2.2", "3", "4", "#10"]
    assert step(flat, "1").children == ["1.1", "1.2"]
    assert step(flat, "2.1").children == ["2.1.1"]
    assert step(flat, "2.1.1").depth == 2
    assert step(flat, "1.2").details == ["Log to stderr, never to stdout"]
    assert step(flat, "#10").title == "Release checklist"  # '1.' list marker, no number
    assert [s.id for s in flat.leaves()] == ["1.1", "1.2", "2.1.1", "2.2", "3", "4", "#10"]


def test_runbook_directives() -> None:
    runbook = parse_task_file(DATA / "runbook.md")
    prepare, store, fmt, smoke = (step(runbook, i) for i in ("1", "2.1", "2.2", "2.3"))
    assert prepare.run == ["mkdir -p src tests"]
    assert prepare.exists == ["src", "tests"]
    assert prepare.depends is None
    assert store.run == ["python tools/gen_store.py", "python tools/gen_store.py --index"]
    assert store.fallback == ["cp templates/store.py src/store.py"]
    assert store.verify == ["python -m pytest -q tests/test_store.py"]
    assert store.exists == ["src/store.py"]
    assert store.contains == [("src/store.py", "class Store"), ("src/store.py", "def load(")]
    assert store.timeout == 120.0
    assert store.depends == ["1"]
    assert (fmt.run, fmt.verify, fmt.timeout, fmt.depends) == (
        ["ruff format src"],
        ["ruff check src"],
        3.0,
        ["2.1"],  # Kiro's `_Depends: 2.1_`
    )
    assert smoke.verify == ['python -c "import src.store as s; print(s.Store)"']
    assert smoke.details == ["Exercise the store once from the command line"]
    assert (smoke.timeout, smoke.depends) == (30.0, ["1", "2.1", "2.2"])
    assert store.has_checks and not step(runbook, "2").has_checks


# --- formatting variants -----------------------------------------------------------------------


def test_markers_optional_forms_and_unnumbered_ids(tmp_path: Path) -> None:
    plan = parse(
        tmp_path,
        "- [ ] Alpha\n"
        "  - [ ]* Alpha child\n"
        "  - [x]\\* Second child\n"
        "* [-] **Beta** with _markdown_\n"
        "\t- [~] Tab-indented child\n"
        "\t\t+ [X] Grandchild   \n"
        "3) [ ] Gamma\n",
    )
    assert ids(plan) == ["#1", "#2", "#3", "#4", "#5", "#6", "#7"]
    assert [s.parent_id for s in plan.steps] == [None, "#1", "#1", None, "#4", "#5", None]
    assert [s.optional for s in plan.steps] == [False, True, True, False, False, False, False]
    assert step(plan, "#4").title == "**Beta** with _markdown_"
    assert step(plan, "#6").title == "Grandchild"
    assert [s.box for s in plan.steps] == [" ", " ", "x", "-", "~", "X", " "]


def test_trailing_dot_ids_and_mixed_numbering(tmp_path: Path) -> None:
    plan = parse(tmp_path, "- [ ] 1. A\n  - [ ] 1.1. B\n  - [ ] C\n- [ ] 2.\n")
    assert ids(plan) == ["1", "1.1", "#3", "2"]  # a position id never equals a written number
    assert step(plan, "2").title == ""


def test_blank_lines_headings_and_prose_between_steps(tmp_path: Path) -> None:
    plan = parse(
        tmp_path,
        "Intro text\n\n- Not a task: just a note\n\n# Plan\n\n## Part A\n\n\n\n"
        "- [ ] 1. A\n\n\n  - detail after blanks\n\n## Part B\n- stray bullet\n- [ ] 2. B\n",
    )
    assert plan.title == "Plan"
    assert ids(plan) == ["1", "2"]
    assert step(plan, "1").details == ["detail after blanks"]
    assert step(plan, "2").details == []


def test_multiline_comment_with_text_after_it(tmp_path: Path) -> None:
    plan = parse(
        tmp_path,
        "- [ ] 1. A <!-- inline comment -->\n<!-- start\n- [ ] 2. hidden\n--> \n"
        "  - detail <!-- hidden --> kept\n- [ ] 2. B\n",
    )
    assert ids(plan) == ["1", "2"]
    assert step(plan, "1").title == "A"
    assert step(plan, "1").details == ["detail kept"]
    assert step(plan, "2").line == 6


def test_detail_owner_is_the_innermost_less_indented_step(tmp_path: Path) -> None:
    plan = parse(
        tmp_path,
        "- [ ] 1. Parent\n    - [ ] 1.1 Child\n      - child detail\n  - parent detail\n",
    )
    assert step(plan, "1.1").details == ["child detail"]
    assert step(plan, "1").details == ["parent detail"]


def test_requirement_line_forms(tmp_path: Path) -> None:
    plan = parse(
        tmp_path,
        "- [ ] 1. A\n  - _Requirements: 1.1, 2.3_\n  - *requirements: 4*\n"
        "  - **Requirements:** Req 5.1, Requirement 6\n  _Requirement: 7.2_\n",
    )
    assert step(plan, "1").requirements == ["1.1", "2.3", "4", "5.1", "6", "7.2"]


def test_prose_with_colons_is_not_a_directive(tmp_path: Path) -> None:
    plan = parse(
        tmp_path,
        "- [ ] 1. A\n  - Note: read the design first\n  - Run tests for the parser\n"
        "  - Exit: code 0 on success\n  - Context: see design.md\n  - Verified by hand\n",
    )
    assert step(plan, "1").details == [
        "Note: read the design first",
        "Run tests for the parser",
        "Exit: code 0 on success",
        "Context: see design.md",
        "Verified by hand",
    ]
    assert step(plan, "1").verify == [] and step(plan, "1").run == []


def test_only_the_strict_shapes_are_directives(tmp_path: Path) -> None:
    plan = parse(
        tmp_path,
        "- [ ] 1. A\n  - Run: `echo hi`\n  - Contains: `a b.txt` `plain text here`\n"
        "  - Timeout: 30\n  - **Verify:** `pytest -q`\n"
        "- [ ] 2. B\n  - _Depends: 1_\n  - Exists: `out.txt`\n",
    )
    a, b = step(plan, "1"), step(plan, "2")
    assert (a.run, a.verify, a.timeout) == (["echo hi"], ["pytest -q"], 30.0)
    assert a.contains == [("a b.txt", "plain text here")]
    assert (b.depends, b.exists) == (["1"], ["out.txt"])
    assert plan.warnings == []


PROSE = [
    ("Fallback: System uses the cached rates when the API is down", ""),
    ("Verify: the error message is shown", ""),
    (
        "Verify: `cmake --build build` succeeds with and without the SDK",
        "tasks.md:2: 'Verify:' is read as a note",
    ),
    ("Run: echo `date`", ""),
    ("Run: `make` then `make install`", "only one backticked value"),
    ("Exists: tests", ""),
    ("Contains: `src/a.py`", "a backticked path, then backticked text"),
    ("Contains: README.md Hello world", ""),
    ("Timeout: 2 minutes", "a whole number of seconds"),
    ("Timeout: soon", ""),
    ("Timeout: `30`", ""),
    ("Depends: get_current_user.", ""),
    ("Depends: 1 (after the schema)", "step ids separated by commas"),
    ("Depends: none", ""),
    ("Verfy: `pytest`", "did you mean 'Verify'?"),
    ("Fallbak: x", "did you mean 'Fallback'?"),
    ("Rnu: `npm ci`", "did you mean 'Run'?"),
    ("Run: npm ci", "the command must be between backticks (write it as Run: `command`)"),
    ("Verify: python -m pytest -q tests/test_store.py", "the command must be between backticks"),
    ("Fallback: ./gen.sh --fast", "the command must be between backticks"),
    ("Verify: make sure the form shows an error", ""),
    ("Run: tests until they pass", ""),
    ("Run:", ""),
    ("Run: ``", ""),
]


@pytest.mark.parametrize(("bullet", "warning"), PROSE)
def test_prose_after_a_key_is_a_detail_never_a_directive(tmp_path: Path, bullet: str, warning: str) -> None:
    plan = parse(tmp_path, f"- [ ] 1. A\n  - {bullet}\n")
    a = step(plan, "1")
    assert not (a.run or a.fallback or a.verify or a.exists or a.contains or a.timeout or a.depends)
    assert a.details == [bullet]
    if warning:
        [line] = plan.warnings
        assert "tasks.md:2: " in line and warning in line
    else:
        assert plan.warnings == []


ID_FORMS = [
    ("- [ ] **8.1** Add the API", "8.1", "Add the API"),
    ("- [ ] 4.1.1.1: Write the schema", "4.1.1.1", "Write the schema"),
    ("- [ ] **Task 3:** Wire it", "3", "Wire it"),
    ("- [ ] Task 3.2 - Search", "3.2", "Search"),
    ("- [ ] P2.1. Migrate", "P2.1", "Migrate"),
    ("- [ ] 14a. Fix the edge case", "14a", "Fix the edge case"),
    ("- [ ] 1) First", "1", "First"),
    (
        "- [ ] T012 [P] [US1] Create the User model in src/models/user.py",
        "T012",
        "Create the User model in src/models/user.py",
    ),
    ("- [x] T009.5 Document soft delete", "T009.5", "Document soft delete"),
    ("- [ ] 2024-01 release notes", "#1", "2024-01 release notes"),
]


@pytest.mark.parametrize(("line", "step_id", "title"), ID_FORMS)
def test_every_written_id_form(tmp_path: Path, line: str, step_id: str, title: str) -> None:
    plan = parse(tmp_path, line + "\n")
    assert (plan.steps[0].id, plan.steps[0].title) == (step_id, title)


def test_spec_kit_markers_headings_and_repeated_numbers(tmp_path: Path) -> None:
    plan = parse(
        tmp_path,
        "# Tasks\n\n## Phase 1: Setup\n- [ ] T001 [P] Create the folders\n"
        "## Phase 3: User Story 1\n- [ ] T012 [P] [US1] Create the User model\n- [ ] T013 [US1] Wire it\n"
        "### Task 4: Search\n- [ ] 1. Index\n  - [ ] 1.1 Tokenise\n- [ ] 1. Query\n  - [ ] 1.1 Parse\n",
    )
    assert ids(plan) == ["T001", "T012", "T013", "1", "1.1", "1~2", "1.1~2"]
    assert [(s.parallel, s.story) for s in plan.steps[:3]] == [(True, None), (True, "US1"), (False, "US1")]
    assert [s.heading for s in plan.steps] == [
        "Phase 1: Setup", "Phase 3: User Story 1", "Phase 3: User Story 1",
        "Task 4: Search", "Task 4: Search", "Task 4: Search", "Task 4: Search",
    ]  # fmt: skip
    assert step(plan, "1.1~2").parent_id == "1~2"
    assert len(plan.warnings) == 2 and "this one is 1~2" in plan.warnings[0]


def test_flat_dotted_children_follow_the_latest_repeated_parent(tmp_path: Path) -> None:
    plan = parse(tmp_path, "- [ ] 1. Phase one\n- [ ] 1.1 A\n- [ ] 1. Phase two\n- [ ] 1.1 B\n")
    assert ids(plan) == ["1", "1.1", "1~2", "1.1~2"]
    assert step(plan, "1.1~2").parent_id == "1~2" and step(plan, "1.1").parent_id == "1"


def test_parse_text_accepts_str(tmp_path: Path) -> None:
    plan = parse_task_text("- [ ] 1. Café\n- [ ] 2. Next\n", tmp_path / "t.md")
    assert step(plan, "2").box_offset == len("- [ ] 1. Café\n".encode()) + 3


def test_five_hundred_steps_parse_whole(tmp_path: Path) -> None:
    """How fast is `benchmarks/parse_speed.py`'s to say (a timed assertion fails on a loaded
    machine); this checks that a large Kiro-style file is read whole."""
    data = kiro_plan(100)
    plan = parse_task_text(data, tmp_path / "t.md")
    assert len(plan.steps) == 500 and plan.warnings == []
    last = step(plan, "100.4")
    assert last.parent_id == "100" and last.ticked and last.verify == ["pytest -q tests/test_100_4.py"]


# --- errors ------------------------------------------------------------------------------------

ERROR_CASES = [
    ("   \n\n", None, "task file is empty"),
    ("# Plan\n\nJust prose.\n- a bullet\n", None, "no checkbox items ('- [ ] 1. ...')"),
    ("- [ ] 1. A\n- [ ] 2. B\n  - Depends: 1, 9\n", 3, "unknown step '9'"),
    ("- [ ] 1. A\n  - Depends: 1\n", 2, "step '1' depends on itself"),
    ("- [ ] 1. A\n  - Depends: 2\n- [ ] 2. B\n  - Depends: 1\n", 1, "cycle (1 -> 2 -> 1)"),
    (
        "- [ ] 1. a\n- [y] 2. b\n- [xx] 3. c\n",
        2,
        "2 lines hold no checkbox: '[y]' on line 2, '[xx]' on line 3",
    ),
    ("- [ ] 1. a\n- [ ] 2. b\n- [xx] 3. c\n", 3, "'[xx]' is not a checkbox"),
    ("- [ ] 1. A\n- [] 2. B\n", 2, "'[]' is not a checkbox"),
    ("- [ ] 1. A\n  - [ x ] 1.1 B\n", 2, "'[ x ]' is not a checkbox"),
    ("- [ ] 1. A\n* [✓] 2. B\n", 2, "'[✓]' is not a checkbox"),
    ("- [ ] 3. A\n  - Run: `true`\n-[ ] 4. B\n", 3, "'-[ ]' has no space after its list marker"),
    ("- [ ] 1. A\n-[x] 2. B\n", 2, "'-[x]' has no space after its list marker"),
    ("- [ ] 1. A\n  *[ ] 1.1 B\n", 2, "'*[ ]' has no space after its list marker"),
    ("- [ ] 1. A\n\n+[ ] 2. B\n", 3, "'+[ ]' has no space after its list marker"),
]


def test_brackets_that_are_no_checkbox_are_text(tmp_path: Path) -> None:
    text = "- [ ] 1. A\n  - [P] runs beside its neighbours\n  - [1] a footnote\n  - [docs](x.md)\n  - [the guide]\n"
    plan = parse(tmp_path, text)
    assert step(plan, "1").details == [
        "[P] runs beside its neighbours",
        "[1] a footnote",
        "[docs](x.md)",
        "[the guide]",
    ]


WARNING_CASES = [
    (
        "- [ ] 1. A\n- [ ] 2. B\n- [ ] 1. C\n",
        3,
        "step number 1 is used again (first on line 1); this one is 1~2",
    ),
    ("- [ ] 1. A\n\n```\n- [ ] 2. B\n", 3, "code fence is never closed"),
    ("- [ ] 1. A\n<!--\n- [ ] 2. B\n", 2, "HTML comment is never closed"),
]


@pytest.mark.parametrize(("text", "line", "warning"), WARNING_CASES)
def test_what_real_files_do_parses_with_a_warning(tmp_path: Path, text: str, line: int, warning: str) -> None:
    plan = parse(tmp_path, text, name="odd.md")
    assert any(f"odd.md:{line}: " in w and warning in w for w in plan.warnings), plan.warnings
    assert len({s.id for s in plan.steps}) == len(plan.steps)


@pytest.mark.parametrize(("text", "line", "problem"), ERROR_CASES)
def test_errors_name_file_line_and_fix(tmp_path: Path, text: str, line: int | None, problem: str) -> None:
    with pytest.raises(TaskFileError) as raised:
        parse(tmp_path, text, name="broken.md")
    message = str(raised.value)
    where = f"broken.md:{line}: " if line else "broken.md: "
    assert where in message
    assert problem in message
    assert "; " in message and "\n" not in message


def test_error_is_an_akira_error() -> None:
    assert issubclass(TaskFileError, AkiraError)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="task file not found; check the path or run 'akira"):
        parse_task_file(tmp_path / "nope.md")


def test_directory_instead_of_file(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="is a directory"):
        parse_task_file(tmp_path)


def test_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.md"
    path.write_bytes("- [ ] 1. A\n- [ ] 2. Café\n".encode("latin-1"))
    with pytest.raises(TaskFileError, match=r"latin1\.md:2: not valid UTF-8; save the file"):
        parse_task_file(path)


def test_unreadable_path_even_as_root(tmp_path: Path) -> None:
    (tmp_path / "file.md").write_text("not a folder")
    with pytest.raises(TaskFileError, match=r"cannot read the task file \(.+\); check"):
        parse_task_file(tmp_path / "file.md" / "tasks.md")


# --- a file read while an editor saves it -------------------------------------------------------


def test_a_file_read_while_an_editor_saves_it_is_read_again(tmp_path: Path) -> None:
    """An editor that saves by truncating and then writing leaves the file empty for a moment."""
    path = tmp_path / "tasks.md"
    path.write_text("")  # truncated: the editor has not written yet
    reads = threading.Semaphore(0)
    got: list[bytes | BaseException] = []

    def count_reads(frame: FrameType, event: str, _: object) -> None:
        """Each read of the file by `tasks.reading` (watched, never changed)."""
        code = frame.f_code
        if event == "return" and code.co_name == "_read_once" and code.co_filename.endswith("reading.py"):
            reads.release()

    def read() -> None:
        sys.setprofile(count_reads)  # this thread's only
        try:
            got.append(read_task_bytes(path))
        except BaseException as exc:
            got.append(exc)
        finally:
            sys.setprofile(None)

    reader = threading.Thread(target=read)
    reader.start()
    assert reads.acquire(timeout=30), "the reader never read the file"  # and found it empty
    path.write_text("- [ ] 1. a\n")  # the editor writes a moment later
    reader.join(60)
    assert got == [b"- [ ] 1. a\n"]


def test_a_file_that_stays_empty_is_refused_after_the_settle_time(tmp_path: Path) -> None:
    path = tmp_path / "tasks.md"
    path.write_text("\n")
    began = time.monotonic()
    with pytest.raises(TaskFileError, match="task file is empty"):
        parse_task_file(path)
    assert time.monotonic() - began >= SETTLE_SECONDS


def test_a_fifo_is_refused_never_waited_on(tmp_path: Path) -> None:
    path = tmp_path / "tasks.md"
    os.mkfifo(path)
    with pytest.raises(TaskFileError, match="not a regular file"):
        read_task_bytes(path)
