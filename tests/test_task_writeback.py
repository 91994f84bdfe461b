"""Exact write-back of checkboxes, and reading requirements.md."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from akira_cli.tasks.parser import parse_task_file
from akira_cli.tasks.reading import TaskFileError
from akira_cli.tasks.writeback import load_requirements, set_box, write_boxes

DATA = Path(__file__).parent / "data" / "tasks"
FIXTURES = ["kiro_plan.md", "flat_dotted.md", "runbook.md"]


def copy_fixture(tmp_path: Path, name: str, crlf: bool = False) -> Path:
    data = (DATA / name).read_bytes()
    if crlf:
        data = b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n")
    path = tmp_path / "tasks.md"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf-bom"])
@pytest.mark.parametrize("name", FIXTURES)
def test_round_trip_is_byte_identical(tmp_path: Path, name: str, crlf: bool) -> None:
    path = copy_fixture(tmp_path, name, crlf)
    original = path.read_bytes()
    for step in parse_task_file(path).steps:
        assert set_box(path, step.id, "-").get(step.id).box == "-"  # type: ignore[union-attr]
        set_box(path, step.id, step.box)
    assert path.read_bytes() == original


@pytest.mark.parametrize("name", FIXTURES)
def test_ticking_changes_exactly_one_byte(tmp_path: Path, name: str) -> None:
    path = copy_fixture(tmp_path, name, crlf=name == "kiro_plan.md")
    original = path.read_bytes()
    target = next(step for step in parse_task_file(path).steps if step.box != "x")
    set_box(path, target.id, "x")
    changed = path.read_bytes()
    assert len(changed) == len(original)
    diff = [i for i, (a, b) in enumerate(zip(original, changed, strict=True)) if a != b]
    assert diff == [target.box_offset]
    assert changed[target.box_offset : target.box_offset + 1] == b"x"


def test_several_boxes_in_one_write_change_exactly_their_bytes(tmp_path: Path) -> None:
    """The loop ticks a step and marks the next one running in one write of the file."""
    path = copy_fixture(tmp_path, "runbook.md")
    original = path.read_bytes()
    open_steps = [step for step in parse_task_file(path).steps if step.box == " "][:2]
    boxes = {open_steps[0].id: "x", open_steps[1].id: "-"}
    written, data = write_boxes(path, boxes)
    changed = path.read_bytes()
    assert data == changed and len(changed) == len(original)
    diff = {i: changed[i : i + 1] for i, (a, b) in enumerate(zip(original, changed, strict=True)) if a != b}
    assert diff == {open_steps[0].box_offset: b"x", open_steps[1].box_offset: b"-"}
    assert {step_id: written.get(step_id).box for step_id in boxes} == boxes  # type: ignore[union-attr]
    assert [step.box for step in parse_task_file(path).steps] == [step.box for step in written.steps]


def test_a_step_the_file_no_longer_has_fails_the_whole_write_before_a_byte_changes(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "runbook.md")
    original = path.read_bytes()
    first = next(step for step in parse_task_file(path).steps if step.box == " ")
    with pytest.raises(TaskFileError, match=r"no step with id '9\.9'"):
        write_boxes(path, {first.id: "x", "9.9": "-"})
    assert path.read_bytes() == original


def test_non_ascii_line_before_the_box(tmp_path: Path) -> None:
    path = tmp_path / "tasks.md"
    path.write_text("# Café — naïve\n- [ ] 1. crème brûlée\n- [ ] 2. 日本語\n", encoding="utf-8")
    set_box(path, "2", "x")
    assert path.read_text(encoding="utf-8") == ("# Café — naïve\n- [ ] 1. crème brûlée\n- [x] 2. 日本語\n")


def test_returns_the_file_as_written(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "runbook.md")
    task_file = set_box(path, "2.1", "x")
    assert task_file.get("2.1").box == "x"  # type: ignore[union-attr]
    assert task_file.model_dump() == parse_task_file(path).model_dump()


def test_same_char_does_not_write(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "kiro_plan.md")
    before = path.stat()
    set_box(path, "1", "x")
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_keeps_mode_and_leaves_no_temp_files(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "kiro_plan.md")
    path.chmod(0o640)
    set_box(path, "2.3", "x")
    assert path.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tasks.md"]


def test_writes_through_a_symlink(tmp_path: Path) -> None:
    real = copy_fixture(tmp_path, "flat_dotted.md")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    set_box(link, "3", "-")
    assert link.is_symlink()
    assert parse_task_file(real).get("3").box == "-"  # type: ignore[union-attr]


def test_unknown_step_id(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "kiro_plan.md")
    with pytest.raises(TaskFileError, match=r"tasks\.md: no step with id '9\.9'"):
        set_box(path, "9.9", "x")


def test_refuses_a_bad_box_char(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "kiro_plan.md")
    with pytest.raises(ValueError, match="checkbox character"):
        set_box(path, "1", "v")
    assert path.read_bytes() == (DATA / "kiro_plan.md").read_bytes()


def test_missing_task_file(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="task file not found"):
        set_box(tmp_path / "gone.md", "1", "x")


# --- requirements.md ---------------------------------------------------------------------------


def test_load_requirements(tmp_path: Path) -> None:
    shutil.copy(DATA / "requirements.md", tmp_path / "requirements.md")
    texts = load_requirements(tmp_path)
    assert list(texts) == ["1", "1.1", "1.2", "2", "2.1", "2.2", "2.3"]
    assert texts["1"] == (
        "Project layout — As a developer, I want a clear package layout, "
        "so that each layer can be tested on its own."
    )
    assert texts["2"].startswith("As a cook, I want quantities validated")
    assert texts["1.2"] == (
        "WHEN the storage layer is imported THE system SHALL NOT import the web framework"
    )
    assert texts["2.2"].endswith("reject the ingredient and name the offending field")
    assert texts["2.3"].endswith('normalise it to NFC ("Café")')


def test_load_requirements_missing_or_odd(tmp_path: Path) -> None:
    assert load_requirements(tmp_path) == {}
    (tmp_path / "requirements.md").mkdir()
    assert load_requirements(tmp_path) == {}
    (tmp_path / "requirements.md").rmdir()
    (tmp_path / "requirements.md").write_bytes(b"\xff\xfe garbage\n### Requirement\n1. stray\n")
    assert load_requirements(tmp_path) == {}
    odd = "### Requirement 3 - Bulleted\n#### Acceptance Criteria\n- first\n- second\n"
    (tmp_path / "requirements.md").write_text(odd, encoding="utf-8")
    assert load_requirements(tmp_path) == {"3": "Bulleted", "3.1": "first", "3.2": "second"}


def test_the_source_parses_only_on_change_and_sees_an_edit_hidden_by_the_timestamp(
    tmp_path: Path,
) -> None:
    """A person's same-size edit within one timestamp tick of akira's own write keeps size and
    mtime; the source compares the bytes then (git's racily-clean check) and reads the edit."""
    import os

    from akira_cli.tasks.source import TaskSource

    path = tmp_path / "tasks.md"
    path.write_text("- [ ] 1. one\n  - Run: `true`\n- [ ] 2. two\n  - Run: `true`\n")
    source = TaskSource()
    first = source.load(path)
    assert source.load(path) is first  # unchanged: the same parse, not a new one
    marked = source.mark(path, {"1": "x"})
    assert marked is first and source.load(path) is first  # akira's own write: no parse
    stat = path.stat()
    data = path.read_bytes().replace(b"- [ ] 2. two", b"- [x] 2. two")
    with path.open("r+b") as handle:  # in place, same size
        handle.write(data)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the same timestamp
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    again = source.load(path)
    assert again is not first and again.get("2") is not None and again.get("2").ticked  # type: ignore[union-attr]


def test_the_loop_writes_the_other_boxes_when_a_person_removed_one_steps_line(tmp_path: Path) -> None:
    """The loop writes a completed step's tick and the next step's `[-]` in one write; when a
    person's edit removed the completed step's line, the write fails as a whole, and the book
    writes the boxes one by one: the missing step's is a warning, the next one is marked."""
    from akira_cli.events import EventBus, EventType
    from akira_cli.loop.conditions import TaskLocator
    from akira_cli.loop.taskbook import TaskBook
    from akira_cli.state.models import LoopState
    from akira_cli.workspace import Workspace

    path = tmp_path / "tasks.md"
    path.write_text("- [ ] 1. One\n  - Run: `true`\n- [ ] 2. Two\n  - Run: `true`\n")
    workspace = Workspace(tmp_path.resolve())
    state = LoopState(task_id="task_20261127_000000", task_path=str(path.resolve()))
    bus, events = EventBus(state.task_id), []
    bus.subscribe(events.append)
    book = TaskBook(workspace, state, bus, TaskLocator(workspace, None), lambda step: False)
    task = book.load(path.resolve())
    one, two = task.get("1"), task.get("2")
    assert one is not None and two is not None
    book.hold(one)
    path.write_text("- [ ] 2. Two\n  - Run: `true`\n")  # the person's save, while step 1 ran
    book.flush(running=two)
    assert path.read_text() == "- [-] 2. Two\n  - Run: `true`\n"
    warnings = [(e.step_id, e.data["message"]) for e in events if e.type == EventType.WARNING]
    assert len(warnings) == 1 and warnings[0][0] == "1", warnings
    assert "checkbox not written" in warnings[0][1] and "no step with id '1'" in warnings[0][1]
    assert book.marks == {"2": " "}  # a stop puts the `[ ]` back
