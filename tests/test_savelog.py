"""The save log: one fdatasync per save, and what it gives back after a power cut.

A power cut cannot be made in a test; what it leaves can. The state file's last replacement was
never fsynced, so the disk may hold an older save (or a torn slot in the log): those files are
built here by hand, and the load must find the newest whole save.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from akira_cli.errors import AkiraError
from akira_cli.state import savelog
from akira_cli.state.models import LoopState
from akira_cli.state.records import Attempt
from akira_cli.state.store import StateStore
from tests.support.workspace import Akira

TASK = "task_20260101_000000"


def new_state() -> LoopState:
    return LoopState(task_id=TASK, task_path="/w/Specs/x/tasks.md")


def advance(state: LoopState, n: int) -> None:
    state.iteration = n
    state.record(str(n), f"step {n}").add(Attempt(step_id=str(n), number=1, iteration=n, approach="Run"))


def test_the_newest_whole_record_wins_and_a_torn_slot_falls_back(tmp_path: Path) -> None:
    log = savelog.SaveLog(tmp_path / "x.wal")
    for seq in range(1, 6):
        log.write(seq, f"save {seq}".encode())
    assert savelog.latest(log.path) == (5, b"save 5")
    # a power cut in the middle of save 6's write: its slot (the one save 4 was in) is torn
    slot = os.path.getsize(log.path) // 2
    log.write(6, b"save 6 " + b"x" * 100)
    with open(log.path, "r+b") as handle:
        handle.seek(0 * slot + savelog.HEADER.size + 50)
        handle.write(b"\0" * 20)
    assert savelog.latest(log.path) == (5, b"save 5")
    assert savelog.latest(tmp_path / "missing.wal") is None
    (tmp_path / "junk.wal").write_bytes(b"not a log")
    assert savelog.latest(tmp_path / "junk.wal") is None


def test_a_record_over_the_slot_size_grows_the_log(tmp_path: Path) -> None:
    log = savelog.SaveLog(tmp_path / "x.wal")
    log.write(1, b"small")
    big = os.urandom(savelog.SLOT + 10)
    log.write(2, big)
    assert os.path.getsize(log.path) >= 4 * savelog.SLOT
    assert savelog.latest(log.path) == (2, big)
    log.write(3, b"after")  # the other slot of the grown log; save 2 stays
    assert savelog.latest(log.path) == (3, b"after")
    log.close()
    reopened = savelog.SaveLog(log.path)
    reopened.write(4, b"again")
    assert savelog.latest(log.path) == (4, b"again")


def test_a_lost_state_file_replacement_is_taken_from_the_log(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    state = new_state()
    advance(state, 1)
    store.save(state)
    on_disk = tmp_path / "older.json"
    shutil.copy(store.path(TASK), on_disk)  # what a power cut may leave: the earlier save
    advance(state, 2)
    store.save(state)
    os.replace(on_disk, store.path(TASK))

    loaded = StateStore(tmp_path).load(TASK)
    assert loaded.iteration == 2 and loaded.saves == state.saves == 2
    assert set(loaded.steps) == {"1", "2"}


def test_the_log_never_overrides_a_newer_state_file_or_another_loop(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    state = new_state()
    for n in (1, 2, 3):
        advance(state, n)
        store.save(state)
    log = store.log_path(TASK)
    # a kill -9 between the state file's replacement and the log's write: the state file is newer
    savelog.SaveLog(log).write(2, b"{}")
    assert StateStore(tmp_path).load(TASK).iteration == 3
    # a newer record of another loop (a copied .wal) is not this loop's save
    other = LoopState(task_id="task_20260101_000001", task_path="/w/Specs/x/tasks.md", saves=9)
    savelog.SaveLog(log).write(9, other.model_dump_json().encode())
    assert StateStore(tmp_path).load(TASK).task_id == TASK


def test_saves_while_running_sync_the_log_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One fdatasync per save in between; the state file itself is fsynced on the first save
    and whenever the status is not `running` (a durable save: temp file, fsync, replace, folder fsync)."""
    calls: list[str] = []
    real_fsync, real_fdatasync = os.fsync, os.fdatasync

    def fsync(fd: int) -> None:
        calls.append("fsync")
        real_fsync(fd)

    def fdatasync(fd: int) -> None:
        calls.append(f"fdatasync {os.readlink(f'/proc/self/fd/{fd}')}")
        real_fdatasync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "fdatasync", fdatasync)
    store = StateStore(tmp_path)
    state = new_state()
    store.save(state)
    assert "fsync" in calls  # the first save: state file (and the new log) durable
    for n in range(1, 4):
        calls.clear()
        advance(state, n)
        store.save(state)
        assert calls == [f"fdatasync {store.log_path(TASK)}"]
    calls.clear()
    state.status = "paused"
    store.save(state)
    assert calls.count("fsync") == 2  # the temp file, then the folder


def test_a_corrupt_state_file_is_recovered_from_the_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = StateStore(tmp_path)
    state = new_state()
    advance(state, 1)
    store.save(state)
    advance(state, 2)
    store.save(state)
    store.path(TASK).write_text('{"task_id": ')
    assert [s.task_id for _, s in StateStore(tmp_path).scan()] == [TASK]  # status sees the loop
    loaded = StateStore(tmp_path).load(TASK)
    assert loaded.iteration == 2 and loaded.saves == state.saves
    (line,) = capsys.readouterr().err.splitlines()
    assert f"{store.path(TASK)} was corrupt (not valid JSON) and is moved to {store.corrupt_dir}/" in line
    assert f"is read from {store.log_path(TASK)}" in line
    assert [p.suffix for p in store.corrupt_dir.iterdir()] == [".json"]
    assert store.corrupt_dir.joinpath(next(store.corrupt_dir.iterdir()).name).read_text() == '{"task_id": '
    assert StateStore(tmp_path).load(TASK) == loaded  # the state file is whole again
    assert capsys.readouterr().err == ""


def test_quarantine_takes_the_log_along_when_it_holds_nothing_of_this_loop(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    state = new_state()
    advance(state, 1)
    store.save(state)
    backup = store.backup(state)
    other = LoopState(task_id="task_20260101_000001", task_path="/w/Specs/y/tasks.md")
    store.save(other)
    shutil.copy(store.log_path(other.task_id), store.log_path(TASK))  # another loop's log
    store.path(TASK).write_text('{"task_id": ')
    with pytest.raises(AkiraError, match="corrupt state file"):
        StateStore(tmp_path).load(TASK)
    assert not store.log_path(TASK).exists()
    assert sorted(p.suffix for p in store.corrupt_dir.iterdir()) == [".json", ".wal"]
    shutil.copy(backup, store.path(TASK))  # the fix the message prints
    assert StateStore(tmp_path).load(TASK).iteration == 1


@pytest.mark.slow
def test_resume_by_feature_recovers_a_corrupt_state_file_from_its_log(akira: Akira) -> None:
    task = akira.write_task(
        "fix",
        """
        - [ ] 1. Works
          - Run: `echo 1 >> runs.txt`
        - [ ] 2. Fails until fixed
          - Run: `test -f fixed || { echo broken; exit 3; }`
        """,
    )
    assert akira.cli("loop", "start", "--task", str(task)).code == 4  # persistent failure
    state = akira.state()
    akira.root.joinpath(f".state/autonomous_loop_{state.task_id}.json").write_text("{garbage")
    (akira.root / "fixed").touch()
    resumed = akira.cli("loop", "resume", "--task-id", "fix", "--reset-failures")
    assert resumed.code == 0, resumed.err
    assert "was corrupt (not valid JSON) and is moved to" in resumed.err
    assert (akira.root / "runs.txt").read_text() == "1\n"  # the ledger held: step 1 never ran again
    assert akira.state().status == "completed"


@pytest.mark.slow
def test_a_corrupt_state_file_without_a_log_is_named_when_a_feature_is_asked_for(akira: Akira) -> None:
    task = akira.write_task("gone", "- [ ] 1. Fails\n  - Run: `exit 3`\n")
    assert akira.cli("loop", "start", "--task", str(task)).code == 4
    task_id = akira.state().task_id
    akira.root.joinpath(f".state/autonomous_loop_{task_id}.wal").unlink()
    akira.root.joinpath(f".state/autonomous_loop_{task_id}.json").write_text("{garbage")
    refused = akira.cli("loop", "resume", "--task-id", "gone")
    assert refused.code == 1 and len(refused.err.strip().splitlines()) == 1, refused.err
    assert f".state/autonomous_loop_{task_id}.json is corrupt" in refused.err
    assert f"akira loop state --task-id {task_id}" in refused.err


def test_archive_removes_the_log_and_old_state_files_still_load(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    state = new_state()
    store.save(state)
    assert store.log_path(TASK).exists()
    state.status = "completed"
    store.archive(state)
    assert not store.log_path(TASK).exists()
    assert StateStore(tmp_path).load(TASK).status == "completed"

    old = new_state().model_dump(exclude={"saves"}) | {"task_id": "task_20260101_000002"}
    path = tmp_path / "autonomous_loop_task_20260101_000002.json"
    path.write_text(json.dumps(old))  # written before saves were counted
    assert StateStore(tmp_path).load("task_20260101_000002").saves == 0


def test_a_save_that_changes_the_status_leaves_nothing_else_in_the_log(tmp_path: Path) -> None:
    """What an agent may have forged in the other slot (a later save number, a right checksum)
    does not outlive a pause, a stop or the completion."""
    store = StateStore(tmp_path)
    state = new_state()
    store.save(state)
    advance(state, 1)
    store.save(state)
    forged = state.model_copy(update={"iteration": 99, "saves": 1000})
    savelog.SaveLog(store.log_path(TASK)).write(1000, forged.model_dump_json().encode())
    assert StateStore(tmp_path).load(TASK).iteration == 99  # read as a power cut would leave it
    state.status = "paused"
    store.save(state)
    assert savelog.latest(store.log_path(TASK)) == (state.saves, store.path(TASK).read_bytes())
    assert StateStore(tmp_path).load(TASK).iteration == 1


@pytest.mark.slow
def test_an_agent_that_writes_the_save_log_is_reported(akira: Akira) -> None:
    akira.write_task(
        "wal",
        "- [ ] 1. one\n  - Run: `printf junk >> .state/autonomous_loop_$AKIRA_TASK_ID.wal`\n"
        "- [ ] 2. two\n  - Run: `true`\n",
    )
    # without the sandbox, which would refuse the write: the report on its own
    assert akira.run("loop", "start", "--task", "Specs/wal/tasks.md", "--no-sandbox").code == 0
    changed = [(e.step_id, e.data["paths"]) for e in akira.events() if e.type == "control_plane_changed"]
    assert changed == [("1", [f".state/autonomous_loop_{akira.task_id()}.wal"])]


def test_a_deferred_save_is_durable_only_when_synced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (synced.append(fd), real(fd))[1])
    store = StateStore(tmp_path)
    state = new_state()
    store.save(state)  # the first save of a process is durable at once
    synced.clear()
    advance(state, 1)
    store.save(state, defer_sync=True)
    assert synced == []
    store.sync_pending()
    store.sync_pending()
    assert len(synced) == 1  # once, and only while something is pending
    advance(state, 2)
    store.save(state, defer_sync=True)
    store.save(state)  # a save syncs the file, the deferred record with it
    assert len(synced) == 2
    store.sync_pending()
    assert len(synced) == 2


@pytest.mark.slow
def test_an_attempts_start_is_synced_once_its_first_command_runs_and_before_its_result(
    akira: Akira, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The save that starts an attempt syncs while its first command starts (S then W); an
    attempt whose agent starts no command (a checkpoint, the llm agent) syncs before it runs."""
    import subprocess

    order: list[str] = []
    real_sync, real_popen = os.fdatasync, subprocess.Popen

    def fdatasync(fd: int) -> None:
        real_sync(fd)
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".wal"):
            order.append("W")

    class Popen(real_popen):  # type: ignore[type-arg, misc]
        def __init__(self, args: list[str], *rest: object, **kwargs: object) -> None:
            super().__init__(args, *rest, **kwargs)
            if len(args) > 1 and args[-2] == "-c":  # a command a step or a check runs (`bash -c`),
                order.append("S" if args[-1] == "true" else "C")  # not the sandbox's own set-up

    monkeypatch.setattr(os, "fdatasync", fdatasync)
    monkeypatch.setattr(subprocess, "Popen", Popen)
    # agent.command only satisfies the start's check: a checkpoint step runs no agent
    akira.write_config(
        "agent:\n  command: 'cat > /dev/null'\nchecks:\n  - run: 'true # suite'\n    name: suite\n"
    )
    akira.write_task(
        "order", "- [ ] 1. Checkpoint: make sure all tests pass\n- [ ] 2. two\n  - Run: `true`\n"
    )
    assert akira.run("loop", "start", "--task", "Specs/order/tasks.md").code == 0
    text = "".join(order)
    # start-up (the red baseline C, the first durable saves W), then: step 1 syncs before its
    # project check runs, step 2 syncs after its Run starts and before its check runs
    assert "WCSWC" in text, text
    assert text.index("WCSWC") == text.rindex("WCSWC"), text


@pytest.fixture(autouse=True)
def _no_leaked_fds(request: pytest.FixtureRequest) -> Iterator[None]:
    """A store keeps its log open while it lives, and closes it when it goes (a whole loop run
    leaves the watcher's threads closing theirs a moment later: not counted)."""
    before = len(os.listdir("/proc/self/fd"))
    yield
    import gc

    gc.collect()
    if "akira" not in request.fixturenames:
        assert len(os.listdir("/proc/self/fd")) <= before
