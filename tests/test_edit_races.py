"""A person edits tasks.md while the loop runs: a completed step never runs again, and a box is
written on its own step's line. Each test holds the loop at the exact moment of one race with a
gate it controls (a FIFO a step's command or a sandbox start waits on, an inotify event, or an
edit made by name inside the checkbox write), never with a sleep.

`benchmarks/edit_race.py` is the stress these windows were found with.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from watchdog.events import FileClosedNoWriteEvent, FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from akira_cli.sandbox.probe import find_bwrap, probe
from akira_cli.sections import SandboxSettings
from tests.support.workspace import Akira

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="FIFOs, inotify and file leases are Linux's"),
    pytest.mark.timeout(180),
]


def gate(folder: Path) -> Path:
    fifo = folder / "gate"
    os.mkfifo(fifo)
    return fifo


def release(fifo: Path) -> None:
    """Lets the command blocked reading `fifo` go on (its open waits for this one)."""
    with open(fifo, "w") as writer:
        writer.write("go\n")


def ledger(akira: Akira) -> list[str]:
    return (akira.root / "ledger.txt").read_text().split()


class ReadAttempts(FileSystemEventHandler):
    """Sets `read` each time a process opens `path` only to read it and closes it."""

    def __init__(self, path: Path) -> None:
        self.path, self.read = str(path), threading.Event()

    def on_closed_no_write(self, event: FileSystemEvent) -> None:
        if isinstance(event, FileClosedNoWriteEvent) and event.src_path == self.path:
            self.read.set()


def test_the_loop_never_reads_a_task_file_between_two_chunks_of_a_save(akira: Akira, tmp_path: Path) -> None:
    """A person saves as `cat >` does: truncate, then 512-byte chunks. The first chunk holds
    step 1 alone; read then, the file would say every step is done."""
    fifo = gate(tmp_path)
    notes = "".join(f"  - note {n}: what this step is for, in the person's words\n" for n in range(12))
    head = (
        f"# Plan\n\n- [ ] 1. One\n  - Run: `echo 1 >> ledger.txt; touch {tmp_path}/ran; read -r _ < {fifo}`\n"
    )
    tail = "- [ ] 2. Two\n  - Run: `echo 2 >> ledger.txt`\n"
    task = akira.write_task("f", head + notes + tail)
    saved = (head.replace("- [ ] 1.", "- [-] 1.") + notes + tail).encode()
    assert saved.index(b"- [ ] 2.") > 512  # the first chunk ends inside step 1's notes
    loop = akira.spawn("loop", "start", "--task", str(task), "--no-sandbox")
    akira.wait_for(lambda: (tmp_path / "ran").exists(), 90, "step 1's command")
    attempts = ReadAttempts(task)
    observer = Observer()
    observer.schedule(attempts, str(task.parent))
    observer.start()
    try:
        fd = os.open(task, os.O_WRONLY | os.O_TRUNC)
        try:
            os.write(fd, saved[:512])
            release(fifo)  # step 1 ends: the loop looks at the file, in the middle of the save
            assert attempts.read.wait(90), "the loop never looked at the task file"
            os.write(fd, saved[512:])
        finally:
            os.close(fd)
    finally:
        observer.stop()
        observer.join()
    _, err = loop.communicate(timeout=90)
    assert loop.returncode == 0, err
    assert ledger(akira) == ["1", "2"]
    assert {step.step_id for step in akira.state().completed_steps} == {"1", "2"}


# Runs the CLI with the checkbox write wrapped by name: the first time step 1's box is to become
# `[-]`, a person's save lands right then, in place, with steps 1 and 2 swapped.
SWAP_AT_WRITE = r"""
import os, sys
from pathlib import Path

import akira_cli.tasks.writeback as writeback
from akira_cli.cli import main

real, swapped = writeback._patch, []


def _patch(path, changes, *rest):
    if ("1", "-") in [(step.id, char) for step, char in changes] and not swapped:
        swapped.append(True)
        text = Path(path).read_text()
        one, two, three = (text.index(f"- [ ] {n}.") for n in (1, 2, 3))
        moved = text[:one] + text[two:three] + text[one:two] + text[three:]
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        os.write(fd, moved.encode())
        os.close(fd)
    return real(path, changes, *rest)


writeback._patch = _patch
sys.exit(main(sys.argv[1:]))
"""


def test_a_box_is_written_on_its_own_steps_line_when_a_save_moves_it(akira: Akira, tmp_path: Path) -> None:
    fifo = gate(tmp_path)
    task = akira.write_task(
        "f",
        f"""
        - [ ] 1. One
          - Run: `echo 1 >> ledger.txt; touch {tmp_path}/ran; read -r _ < {fifo}`
        - [ ] 2. Two, with a longer title
          - Run: `echo 2 >> ledger.txt`
        - [ ] 3. Three
          - Run: `echo 3 >> ledger.txt`
        """,
    )
    argv = ["loop", "start", "--task", str(task), "--no-sandbox", "--root", str(akira.root)]
    loop = subprocess.Popen([sys.executable, "-c", SWAP_AT_WRITE, *argv], stderr=subprocess.PIPE, text=True)
    akira.wait_for(lambda: (tmp_path / "ran").exists(), 90, "step 1's command")
    text = task.read_text()
    assert "- [-] 1. One" in text and "- [ ] 2. Two" in text, text  # the running mark is step 1's
    assert text.index("2. Two") < text.index("1. One")  # where the person's save moved it
    release(fifo)
    _, err = loop.communicate(timeout=90)
    assert loop.returncode == 0, err
    assert sorted(ledger(akira)) == ["1", "2", "3"]
    done = {step.step_id: step.done_by for step in akira.state().completed_steps}
    assert done == {"1": "akira", "2": "akira", "3": "akira"}
    assert "- [x] 2. Two" in (akira.root / "Done" / "f" / "tasks.md").read_text()


@pytest.mark.skipif(not probe(SandboxSettings()).ok, reason="needs a working bwrap")
def test_a_check_whose_sandbox_cannot_start_is_started_again_and_the_step_never_reruns(
    akira: Akira, tmp_path: Path
) -> None:
    """bwrap binds the task file read-only over the work tree; a person's save that takes the
    file away while it does so makes bwrap fail before the check runs. That check never ran:
    it is started again, and the step's command does not run a second time."""
    fifo = gate(tmp_path)
    gated = tmp_path / "gated-bwrap"  # the real bwrap, held once: at the first start of the check
    gated.write_text(
        "#!/bin/bash\n"
        f'case "$*" in *"grep -q"*) if [ ! -e {tmp_path}/held ]; then\n'
        f"  touch {tmp_path}/held; read -r _ < {fifo}\n"
        "fi;; esac\n"
        f'exec {find_bwrap(SandboxSettings())} "$@"\n'
    )
    gated.chmod(gated.stat().st_mode | stat.S_IXUSR)
    akira.write_config(f"sandbox:\n  mode: on\n  bwrap: {str(gated)!r}\n")
    task = akira.write_task(
        "f",
        """
        - [ ] 1. Count
          - Run: `echo 1 >> ledger.txt`
          - Verify: `grep -q '^1' ledger.txt`
        """,
    )
    loop = akira.spawn("loop", "start", "--task", str(task), "--no-wait")
    akira.wait_for(lambda: (tmp_path / "held").exists(), 90, "the check's sandbox starting")
    away = tmp_path / "tasks.md.saving"
    os.replace(task, away)  # the person's save has the file away at this instant
    release(fifo)
    _, err = loop.communicate(timeout=90)
    assert loop.returncode == 3, err  # the task file is gone: paused, after the step was recorded
    os.replace(away, task)
    resumed = akira.cli("loop", "resume", "--task-id", akira.task_id(), timeout=90)
    assert resumed.code == 0, resumed.err
    assert ledger(akira) == ["1"]
    (done,) = akira.state().completed_steps
    assert done.step_id == "1" and done.attempts == 1 and done.verified


def test_a_hook_between_a_steps_commands_lets_the_step_be_checked_and_recorded(
    akira: Akira, tmp_path: Path
) -> None:
    fifo = gate(tmp_path)
    task = akira.write_task(
        "f",
        f"""
        - [ ] 1. Two commands
          - Run: `echo 1 >> ledger.txt; touch {tmp_path}/ran; read -r _ < {fifo}`
          - Run: `echo 1b >> ledger.txt`
          - Verify: `grep -q '^1b' ledger.txt`
        - [ ] 2. Next
          - Run: `echo 2 >> ledger.txt`
        """,
    )
    loop = akira.spawn("loop", "start", "--task", str(task), "--no-wait")
    akira.wait_for(lambda: (tmp_path / "ran").exists(), 90, "step 1's first command")
    (akira.root / ".hooks" / "stop_autonomous_loop.md").write_text("a look between two commands\n")
    release(fifo)
    _, err = loop.communicate(timeout=90)
    assert loop.returncode == 3, err
    state = akira.state()
    assert state.status == "paused" and state.completed_ids() == {"1"}  # checked and recorded
    resumed = akira.cli("loop", "resume", "--task-id", state.task_id, timeout=90)
    assert resumed.code == 0, resumed.err
    assert ledger(akira) == ["1", "1b", "2"]  # step 1's commands ran once each


# Runs the CLI with one method of `TaskLock` held by name: its first call waits at a FIFO (for
# `holder`: `loop stop` or `loop resume` read the state and wait before asking who runs the task).
# argv: METHOD SIGNAL-FILE FIFO akira-args...
HOLD_AT = r"""
import sys
from pathlib import Path

from akira_cli.cli import main
from akira_cli.state.lock import TaskLock

method, signal_file, fifo, argv = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4:]
real = getattr(TaskLock, method)


def held(self, *args):
    if not signal_file.exists():
        signal_file.touch()
        with open(fifo) as gate:
            gate.read()
    return real(self, *args)


setattr(TaskLock, method, held)
sys.exit(main(argv))
"""


def held_at(method: str, signal: Path, fifo: Path, akira: Akira, *args: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-c", HOLD_AT, method, str(signal), str(fifo), *args, "--root", str(akira.root)]
    return subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)


def test_a_stop_that_finds_the_process_gone_keeps_what_it_saved(akira: Akira, tmp_path: Path) -> None:
    """`loop stop` reads the state, writes its hook and asks who runs the task. The process
    saw the hook, recorded its step and exited in between: the copy `loop stop` read is older
    than the state on disk, and saving it would drop that step from the ledger."""
    fifo, held, stop_gate = gate(tmp_path), tmp_path / "stop-held", tmp_path / "stop-gate"
    os.mkfifo(stop_gate)
    task = akira.write_task(
        "f",
        f"""
        - [ ] 1. One
          - Run: `echo 1 >> ledger.txt; touch {tmp_path}/ran; read -r _ < {fifo}`
        - [ ] 2. Two
          - Run: `echo 2 >> ledger.txt`
        """,
    )
    loop = akira.spawn("loop", "start", "--task", str(task), "--no-wait", "--no-sandbox")
    akira.wait_for(lambda: (tmp_path / "ran").exists(), 90, "step 1's command")
    stop = held_at("holder", held, stop_gate, akira, "loop", "stop", "--task-id", akira.task_id())
    akira.wait_for(held.exists, 90, "`loop stop` to read the state and write its hook")
    release(fifo)  # step 1 ends; the loop records it, sees the hook, pauses and exits
    _, err = loop.communicate(timeout=90)
    assert loop.returncode == 3, err
    release(stop_gate)
    _, err = stop.communicate(timeout=90)
    assert stop.returncode == 0, err
    state = akira.state()
    assert state.status == "paused" and state.completed_ids() == {"1"}
    task.write_text(task.read_text().replace("- [x] 1.", "- [ ] 1."))  # a person reverts the box
    resumed = akira.cli("loop", "resume", "--task-id", state.task_id, timeout=90)
    assert resumed.code == 0, resumed.err
    assert ledger(akira) == ["1", "2"]


@pytest.mark.parametrize("detach", [[], ["--detach"]], ids=["here", "detached"])
def test_a_resume_that_read_the_state_before_another_resume_ran_refuses_to_run(
    akira: Akira, tmp_path: Path, detach: list[str]
) -> None:
    """Two `loop resume` at once: the second read the state while the first ran step 1 and
    paused. Run from its copy (or, detached, saved for a child to run), it would run step 1
    again."""
    fifo, held, resume_gate = gate(tmp_path), tmp_path / "resume-held", tmp_path / "resume-gate"
    os.mkfifo(resume_gate)
    task = akira.write_task(
        "f",
        f"""
        - [ ] 1. One
          - Run: `echo 1 >> ledger.txt; [ -e {tmp_path}/ran ] || {{ touch {tmp_path}/ran; read -r _ < {fifo}; }}`
        - [ ] 2. Two
          - Run: `echo 2 >> ledger.txt`
        """,
    )
    hook = akira.root / ".hooks" / "stop_autonomous_loop.md"
    hook.write_text("not yet\n")
    assert akira.cli("loop", "start", "--task", str(task), "--no-wait", "--no-sandbox").code == 3
    task_id = akira.task_id()
    late = held_at(
        "holder", held, resume_gate, akira, "loop", "resume", "--task-id", task_id, "--no-wait", *detach
    )
    akira.wait_for(held.exists, 90, "the second resume to read the state")
    first = akira.spawn("loop", "resume", "--task-id", task_id, "--no-wait")
    akira.wait_for(lambda: (tmp_path / "ran").exists(), 90, "step 1's command")
    hook.write_text("a look\n")
    release(fifo)
    _, err = first.communicate(timeout=90)
    assert first.returncode == 3, err
    assert akira.state().completed_ids() == {"1"}
    task.write_text(task.read_text().replace("- [x] 1.", "- [ ] 1."))  # a person reverts the box
    hook.unlink()
    release(resume_gate)
    _, err = late.communicate(timeout=90)
    assert late.returncode == 1 and "another process ran" in err, err
    resumed = akira.cli("loop", "resume", "--task-id", task_id, timeout=90)
    assert resumed.code == 0, resumed.err
    assert ledger(akira) == ["1", "2"]
