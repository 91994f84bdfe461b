"""The task-file parser against realistic Kiro files, odd formatting, and every error case."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from akira_cli.errors import AkiraError
from akira_cli.tasks.model import Step, TaskFile
from akira_cli.tasks.parser import TaskFileError, parse_task_file, parse_task_text

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
        "4", "4.1", "4.2", "4.2.1", "4.3", "5",
    ]  # fmt: skip
    assert [s.box for s in plan.steps] == [
        "x", " ", "x", "-", " ", " ", " ", "~", " ", " ", " ", " ", " ", " ", "X",
    ]  # fmt: skip
    assert step(plan, "2").children == ["2.1", "2.2", "2.3"]
    assert step(plan, "4").children == ["4.1", "4.2", "4.3"]
    assert (step(plan, "4.2.1").parent_id, step(plan, "4.2.1").depth) == ("4.2", 2)
    assert step(plan, "1").parent_id is None and step(plan, "1").depth == 0
    assert step(plan, "4.3").title == "Wire the routes into the application factory"
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
    assert step(plan, "4.3").details == ["Note: keep the factory free of global state"]
    leaves = ["1", "2.1", "2.2", "3.1", "3.2", "4.1", "4.2.1", "4.3", "5"]
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
    assert ids(flat) == ["1", "1.1", "1.2", "2", "2.1", "2.1.1", "2.2", "3", "4", "5"]
    assert step(flat, "1").children == ["1.1", "1.2"]
    assert step(flat, "2.1").children == ["2.1.1"]
    assert step(flat, "2.1.1").depth == 2
    assert step(flat, "1.2").details == ["Log to stderr, never to stdout"]
    assert step(flat, "5").title == "Release checklist"  # '1.' list marker, position 5
    assert [s.id for s in flat.leaves()] == ["1.1", "1.2", "2.1.1", "2.2", "3", "4", "5"]


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
        2.5,
        ["2.1"],
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
    assert ids(plan) == ["1", "1.1", "1.2", "2", "2.1", "2.1.1", "3"]
    assert [s.optional for s in plan.steps] == [False, True, True, False, False, False, False]
    assert step(plan, "2").title == "**Beta** with _markdown_"
    assert step(plan, "2.1.1").title == "Grandchild"
    assert [s.box for s in plan.steps] == [" ", " ", "x", "-", "~", "X", " "]


def test_trailing_dot_ids_and_mixed_numbering(tmp_path: Path) -> None:
    plan = parse(tmp_path, "- [ ] 1. A\n  - [ ] 1.1. B\n  - [ ] C\n- [ ] 2.\n")
    assert ids(plan) == ["1", "1.1", "1.2", "2"]
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


def test_directive_value_forms(tmp_path: Path) -> None:
    plan = parse(
        tmp_path,
        "- [ ] 1. A\n  - Run: echo `date`\n  - Contains: README.md Hello world\n"
        "  - Contains: `a b.txt` plain text here\n  - Timeout: `30`\n  - Depends: none\n",
    )
    a = step(plan, "1")
    assert a.run == ["echo `date`"]
    assert a.contains == [("README.md", "Hello world"), ("a b.txt", "plain text here")]
    assert a.timeout == 30.0
    assert a.depends == []


def test_parse_text_accepts_str(tmp_path: Path) -> None:
    plan = parse_task_text("- [ ] 1. Café\n- [ ] 2. Next\n", tmp_path / "t.md")
    assert step(plan, "2").box_offset == len("- [ ] 1. Café\n".encode()) + 3


def test_five_hundred_steps_parse_fast(tmp_path: Path) -> None:
    lines = ["# Implementation Plan", ""]
    for top in range(1, 101):
        lines.append(f"- [ ] {top}. Top-level task {top}")
        for sub in range(1, 5):
            lines += [
                f"  - [x] {top}.{sub} Sub-task {sub}",
                "    - Implement it carefully",
                f"    - Verify: `pytest -q tests/test_{top}_{sub}.py`",
                f"    - _Requirements: 1.{sub}, 2.{sub}_",
                "",
            ]
    data = "\n".join(lines).encode()
    best = min(_time_parse(data, tmp_path) for _ in range(5))
    assert len(parse_task_text(data, tmp_path / "t.md").steps) == 500
    assert best < 0.025  # about 4 ms on a 2-core CI box; generous to avoid flakiness


def _time_parse(data: bytes, tmp_path: Path) -> float:
    start = time.perf_counter()
    parse_task_text(data, tmp_path / "t.md")
    return time.perf_counter() - start


# --- errors ------------------------------------------------------------------------------------

ERROR_CASES = [
    ("   \n\n", None, "task file is empty"),
    ("# Plan\n\nJust prose.\n- a bullet\n", None, "no checkbox items ('- [ ] 1. ...')"),
    ("- [ ] 1. A\n  - Timeout: abc\n", 2, "'Timeout:' must be a positive number"),
    ("- [ ] 1. A\n\n  - Timeout: 0\n", 3, "'Timeout:' must be a positive number"),
    ("- [ ] 1. A\n  - Verify:\n", 2, "empty 'Verify:' directive"),
    ("- [ ] 1. A\n  - Run: ``\n", 2, "empty 'Run:' directive"),
    ("- [ ] 1. A\n  - Exists:   \n", 2, "empty 'Exists:' directive"),
    ("- [ ] 1. A\n  - Contains: `src/a.py`\n", 2, "'Contains:' needs a path and a text"),
    ("- [ ] 1. A\n  - Contains:\n", 2, "'Contains:' needs a path and a text"),
    ("- [ ] 1. A\n  - Depends:\n", 2, "empty 'Depends:' directive"),
    ("- [ ] 1. A\n- [ ] 2. B\n  - Depends: 1, 9\n", 3, "unknown step '9'"),
    ("- [ ] 1. A\n  - Depends: 1\n", 2, "step '1' depends on itself"),
    ("- [ ] 1. A\n- [ ] 2. B\n- [ ] 1. C\n", 3, "duplicate step id '1' (first used on line 1)"),
    ("- [ ] 2. A\n- [ ] B\n", 2, "an unnumbered step takes its position as id"),
    ("- [ ] 1. A\n  - Verfy: `pytest`\n", 2, "unknown directive 'Verfy' (did you mean 'Verify'?)"),
    ("- [ ] 1. A\n  - Fallbak: x\n", 2, "unknown directive 'Fallbak' (did you mean 'Fallback'?)"),
    ("- [ ] 1. A\n  - Timout: 5\n", 2, "(did you mean 'Timeout'?)"),
    ("- [ ] 1. A\n- [] 2. B\n", 2, "malformed checkbox '[]'"),
    ("- [ ] 1. A\n\n```\n- [ ] 2. B\n", 3, "code fence is never closed"),
    ("- [ ] 1. A\n<!--\n- [ ] 2. B\n", 2, "HTML comment is never closed"),
]


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
