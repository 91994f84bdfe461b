"""What an attempt changed (akira_cli.loop.witness): one attempt's "after" look is the next one's
"before" only while nothing but akira's bookkeeping happened in between."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from akira_cli.changes import Walker
from akira_cli.control_plane import ControlPlane
from akira_cli.loop.witness import Witness
from akira_cli.runner import CommandRunner
from tests.support.workspace import Akira


def witness(root: Path) -> tuple[Witness, CommandRunner]:
    for folder in ("config", ".hooks", ".state/memory", "Specs/f"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    task = root / "Specs" / "f" / "tasks.md"
    task.write_text("- [ ] 1. one\n")
    runner = CommandRunner(root)
    return Witness(root, root, ControlPlane(root, lambda: task), runner), runner


def attempt(seen: Witness, *writes: Path) -> tuple[list[str], list[str]]:
    seen.before()
    for path in writes:
        path.write_text(path.name)
    return seen.after()


def test_each_attempt_sees_only_its_own_changes_when_looks_are_shared(tmp_path: Path) -> None:
    seen, _ = witness(tmp_path)
    assert attempt(seen, tmp_path / "a.txt") == ([], ["a.txt"])
    assert attempt(seen, tmp_path / "b.txt") == ([], ["b.txt"])  # the last "after" was reused
    assert attempt(seen) == ([], [])


def test_the_loop_s_own_writes_between_attempts_are_not_the_agent_s(tmp_path: Path) -> None:
    seen, _ = witness(tmp_path)
    attempt(seen)
    (tmp_path / ".state" / "autonomous_loop_x.json").write_text("{}")  # akira's save
    (tmp_path / ".state" / "memory" / "reflections.jsonl").write_text("{}\n")  # its memory
    (tmp_path / "Specs" / "f" / "tasks.md").write_text("- [x] 1. one\n")  # its tick
    assert attempt(seen) == ([], [])
    plane, _ = attempt(seen, tmp_path / ".state" / "autonomous_loop_x.json", tmp_path / "config" / "c.yaml")
    assert plane == [".state/autonomous_loop_x.json", "config/c.yaml"]  # the agent's, reported


def test_a_command_run_after_the_look_makes_the_next_attempt_look_again(tmp_path: Path) -> None:
    """A step's checks run after the agent's "after" look, and may write files (a build, a
    coverage file): those are neither that attempt's work nor the next one's."""
    seen, runner = witness(tmp_path)
    attempt(seen)
    assert runner.run("touch built.txt", 30).ok  # a Verify: command
    assert attempt(seen) == ([], [])


def test_a_stop_forgets_the_last_look(tmp_path: Path) -> None:
    """What a person does while the loop is stopped is not the next agent's doing."""
    seen, _ = witness(tmp_path)
    attempt(seen)
    seen.forget()
    (tmp_path / "persons_edit.txt").write_text("mine")
    assert attempt(seen, tmp_path / "agent.txt") == ([], ["agent.txt"])


def test_an_old_look_is_not_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen, _ = witness(tmp_path)
    attempt(seen)
    monkeypatch.setattr("akira_cli.loop.witness.FRESH_SECONDS", 0.0)
    (tmp_path / "later.txt").write_text("someone")
    assert attempt(seen) == ([], [])


def test_files_written_by_a_step_s_checks_are_no_step_s_evidence(akira: Akira) -> None:
    akira.write_task(
        "built",
        """
        - [ ] 1. Build
          - Run: `touch source.txt`
          - Verify: `touch built.txt`
        - [ ] 2. Nothing
          - Run: `true`
        - [ ] 3. Something
          - Run: `touch more.txt`
    """,
    )
    assert akira.run("loop", "start", "--task", "Specs/built/tasks.md").code == 0
    state = akira.state()
    changed = {n: state.steps[n].attempts[0].files_changed for n in ("1", "2", "3")}
    assert changed == {"1": ["source.txt"], "2": [], "3": ["more.txt"]}


def old(path: Path, seconds: float = 5.0) -> None:
    """Gives a folder (or file) a modification time well in the past."""
    when = time.time() - seconds
    os.utime(path, (when, when))


def test_a_remembering_walk_sees_every_change_a_fresh_walk_sees(tmp_path: Path) -> None:
    """Folders unchanged since a listing are not listed again; every kind of change still shows,
    the same as in a walk from scratch."""
    tree = tmp_path / "work"
    (tree / "src" / "deep").mkdir(parents=True)
    (tree / "src" / "a.py").write_text("a")
    (tree / "src" / "deep" / "b.py").write_text("b")
    for folder in (tree, tree / "src", tree / "src" / "deep"):
        old(folder)
    walker = Walker()
    assert walker.walk(tree) == Walker().walk(tree)

    def same() -> None:
        assert walker.walk(tree) == Walker().walk(tree)

    (tree / "src" / "a.py").write_text("a, edited in place")  # its folder's time does not move
    same()
    (tree / "src" / "deep" / "c.py").write_text("new")
    same()
    (tree / "src" / "deep" / "b.py").unlink()
    same()
    os.rename(tree / "src" / "a.py", tree / "src" / "renamed.py")
    same()
    (tree / "src" / "deep").rename(tree / "moved")
    same()
    (tree / "src" / "new" / "inner").mkdir(parents=True)
    (tree / "src" / "new" / "inner" / "d.py").write_text("d")
    same()
    assert "src/new/inner/d.py" in walker.walk(tree)  # type: ignore[operator]


def test_a_folder_listed_in_the_tick_of_its_last_change_is_listed_again(tmp_path: Path) -> None:
    """An entry added in the same timestamp tick as a listing leaves the folder's time as it
    was: such a folder is listed every time until its time is well before a listing."""
    tree = tmp_path / "work"
    tree.mkdir()
    walker = Walker()
    (tree / "a.txt").write_text("a")
    assert walker.walk(tree) == {"a.txt": Walker().walk(tree)["a.txt"]}  # type: ignore[index]
    stamp = tree.stat().st_mtime_ns
    (tree / "b.txt").write_text("b")
    os.utime(tree, ns=(stamp, stamp))  # as if b.txt had come within the same tick
    assert set(walker.walk(tree) or {}) == {"a.txt", "b.txt"}
