"""The state file swapped in whole (`fileio.swap_in`), and what a power cut leaves of it.

A save between status changes writes the state file into a file of its own and swaps the two
names in one step: every reader and a kill -9 see one save whole, and ext4 does not write the
file out on the spot as it does for a rename over a file. A power cut can then leave the state
file empty or cut short; its save log holds the same bytes, and a load takes them from there.
A power cut cannot be made in a test; what it leaves can, and is built here by hand.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from akira_cli import fileio
from akira_cli.errors import AkiraError
from akira_cli.state import savelog
from akira_cli.state.models import LoopState
from akira_cli.state.records import Attempt
from akira_cli.state.store import StateStore

if TYPE_CHECKING:
    from tests.support.crash import Tracker

TASK = "task_20260101_000000"


def new_state() -> LoopState:
    return LoopState(task_id=TASK, task_path="/w/Specs/x/tasks.md")


def advance(state: LoopState, n: int) -> None:
    state.iteration = n
    state.record(str(n), f"step {n} " + "y" * 300).add(
        Attempt(step_id=str(n), number=1, iteration=n, approach="Run " + "z" * 300)
    )


def test_a_swap_puts_a_new_file_in_place_and_a_reader_of_the_old_one_reads_it_whole(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(b"old " * 3000)
    old = path.stat().st_ino
    with path.open("rb") as reader:
        assert fileio.swap_in(path, b"new " * 2000)
        assert fileio.swap_in(path, b"newer")  # the file the reader holds is not written again
        assert reader.read() == b"old " * 3000
    assert path.read_bytes() == b"newer"
    assert path.stat().st_ino != old and path.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]  # the old one is gone


def test_a_left_over_or_planted_spare_is_never_written_through(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text("old")
    spare = tmp_path / ".state.json.swap"
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    spare.symlink_to(outside)  # an agent's, or a regular file a kill -9 left: replaced, not opened
    assert fileio.swap_in(path, b"new")
    assert path.read_text() == "new" and outside.read_text() == "keep" and not spare.exists()
    spare.write_text("left by a kill -9")
    assert fileio.swap_in(path, b"newer") and path.read_text() == "newer"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside.txt", "state.json"]


def failing(code: int) -> Callable[..., int]:
    def renameat2(*args: object) -> int:
        ctypes.set_errno(code)
        return -1

    return renameat2


def test_without_a_file_to_swap_with_or_a_way_to_swap_the_store_replaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system that cannot swap (EINVAL: NFS, some FUSE ones) is simulated by libc's
    answer: its errno. The store then replaces the state file as before, for good."""
    assert not fileio.swap_in(tmp_path / "missing.json", b"x")
    assert list(tmp_path.iterdir()) == []
    path = tmp_path / "x.json"
    path.write_text("old")
    fileio._renameat2()
    monkeypatch.setattr(fileio, "_swap", failing(errno.EIO))  # a real error is one
    with pytest.raises(OSError, match="Input/output error") as raised:
        fileio.swap_in(path, b"new")
    assert raised.value.filename == str(path) and path.read_text() == "old"
    monkeypatch.setattr(fileio, "_swap", failing(errno.EINVAL))
    store = StateStore(tmp_path)
    state = new_state()
    store.save(state)
    advance(state, 1)
    store.save(state)  # cannot swap: replaced instead, and never tried again
    assert fileio._swap is False
    assert StateStore(tmp_path).load(TASK).iteration == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["x.json", store.path(TASK).name, store.log_path(TASK).name, "history"]
    )


def test_saves_while_running_swap_and_status_changes_replace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replaced: list[str] = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (replaced.append(Path(dst).name), real(src, dst))[1])
    store = StateStore(tmp_path)
    state = new_state()
    store.save(state)
    assert replaced == [store.path(TASK).name]  # the first save of a process: durable itself
    for n in range(1, 4):
        advance(state, n)
        store.save(state)
        assert savelog.latest(store.log_path(TASK)) == (state.saves, store.path(TASK).read_bytes())
    assert replaced == [store.path(TASK).name]  # swapped in, not replaced
    state.status = "paused"
    store.save(state)
    assert replaced == [store.path(TASK).name] * 2


def test_the_state_file_a_deferred_save_swaps_out_is_unlinked_by_the_sync(tmp_path: Path) -> None:
    """The save that starts an attempt leaves the old state file to `sync_pending` (run while
    the attempt's first command starts); any later save, or a durable one, unlinks it too."""
    store = StateStore(tmp_path)
    state = new_state()
    store.save(state)
    spare = fileio.spare_of(store.path(TASK))
    for then in ("sync", "save", "durable save"):
        before = store.path(TASK).read_bytes()
        advance(state, state.iteration + 1)
        store.save(state, defer_sync=True)
        assert spare.read_bytes() == before  # the old one, whole
        if then == "sync":
            store.sync_pending()
        else:
            state.status = "paused" if then == "durable save" else "running"
            store.save(state)
        assert not spare.exists(), then
        assert StateStore(tmp_path).load(TASK).saves == state.saves


@pytest.mark.parametrize("left", ["empty", "cut at a page", "cut mid-record"])
def test_a_state_file_a_power_cut_left_empty_or_cut_short_is_read_from_the_log(
    tmp_path: Path, left: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = StateStore(tmp_path)
    state = new_state()
    store.save(state)
    for n in range(1, 16):
        advance(state, n)
        store.save(state)
    whole = store.path(TASK).read_bytes()
    assert len(whole) > 8192
    cut = {"empty": 0, "cut at a page": 4096, "cut mid-record": len(whole) - 7}[left]
    store.path(TASK).write_bytes(whole[:cut])

    loaded = StateStore(tmp_path).load(TASK)
    assert loaded.saves == state.saves and loaded.iteration == 15
    said = capsys.readouterr().err
    assert f"{store.path(TASK)} is {'empty' if left == 'empty' else 'cut short'}" in said
    assert f"read from {store.log_path(TASK)}" in said
    assert [s for _, s in StateStore(tmp_path).scan()] == [loaded]
    assert not store.corrupt_dir.exists()


def test_a_state_file_with_anything_else_in_it_is_quarantined(tmp_path: Path) -> None:
    """Not a cut: it is moved to .state/corrupt/, and the log's last save of this loop takes
    its place; a log that holds another loop's save recovers nothing."""
    store = StateStore(tmp_path)
    state = new_state()
    store.save(state)
    advance(state, 1)
    store.save(state)
    whole = store.path(TASK).read_bytes()
    store.path(TASK).write_bytes(whole[:100] + b"X")  # a person's edit, not a cut
    assert [s.iteration for _, s in StateStore(tmp_path).scan() if s is not None] == [1]
    assert StateStore(tmp_path).load(TASK).iteration == 1
    assert [p.read_bytes() for p in store.corrupt_dir.iterdir()] == [whole[:100] + b"X"]
    store.log_path(TASK).unlink()
    # a cut file next to another loop's log (a copied .wal) is not recovered from it either
    other = LoopState(task_id="task_20260101_000001", task_path="/w/Specs/x/tasks.md", saves=9)
    data = other.model_dump_json().encode()
    savelog.SaveLog(store.log_path(TASK)).write(9, data)
    store.path(TASK).write_bytes(data[:50])
    with pytest.raises(AkiraError, match="corrupt state file"):
        StateStore(tmp_path).load(TASK)


# The driver of test_crash, dying (os._exit: on disk the same as a kill -9) at a swap of the
# state file: argv: POINT N akira-args...
SWAP_DRIVER = r"""
import os, sys
from akira_cli import fileio
from akira_cli.cli import main

point, n, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
real = fileio._renameat2()
calls = []

def swap(*args):
    calls.append(1)
    if point == "before" and len(calls) == n:
        os._exit(137)
    result = real(*args)
    if point == "after" and len(calls) == n:
        os._exit(137)
    return result

fileio._swap = swap
sys.exit(main(argv))
"""


def killed_at_a_swap(tmp_path: Path, point: str, n: int) -> tuple[Path, Path, Tracker]:
    """A loop killed with SIGKILL `point` ("before" or "after") its `n`th swap of the state file:
    its workspace, the file its output went to, and the tracker of what its steps ran."""
    from tests.support.crash import KILLED, SMALL, Tracker, init_workspace, output_of, spawn

    ws = init_workspace(tmp_path, SMALL)
    out = tmp_path / "akira.out"
    tracker = Tracker(ws, SMALL)
    proc = spawn(ws, [sys.executable, "-c", SWAP_DRIVER, point, str(n)], out)
    code = proc.wait(timeout=90)
    assert code == KILLED, f"the swap was not reached (exit {code}):\n{output_of(out)}"
    tracker.after_crash()
    return ws, out, tracker


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("point", "n"),
    [
        pytest.param("before", 2, id="spare-written-not-swapped"),
        pytest.param("after", 2, id="swapped-old-not-unlinked"),
        pytest.param("after", 4, id="swapped-later"),
    ],
)
def test_kill9_at_a_swap_then_resume(tmp_path: Path, point: str, n: int) -> None:
    from tests.support.crash import AKIRA, run_to_end

    ws, out, tracker = killed_at_a_swap(tmp_path, point, n)
    run_to_end(ws, out, AKIRA)
    tracker.finish()
    assert not list((ws / ".state").glob(".*.swap")), "the resumed loop left a spare behind"


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_loop_whose_state_file_a_power_cut_emptied_resumes_from_its_log(tmp_path: Path) -> None:
    """Killed at a save (the state file and the log hold the save before it), the state file
    then emptied as a power cut leaves it: `status` shows the loop, and `resume` goes on from
    the log's save, running again only the step that was in flight."""
    from tests.support.crash import AKIRA, output_of, run_to_end

    ws, out, tracker = killed_at_a_swap(tmp_path, "before", 3)
    [state_file] = (ws / ".state").glob("autonomous_loop_*.json")
    state_file.write_bytes(b"")

    status = subprocess.run(
        [*AKIRA, "loop", "status", "--json", "--root", str(ws)], capture_output=True, text=True, timeout=60
    )
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["corrupt"] == [], status.stdout
    run_to_end(ws, out, AKIRA)
    assert "is empty, as a power cut leaves it" in output_of(out)
    tracker.finish()
    assert not (ws / ".state" / "corrupt").exists()
