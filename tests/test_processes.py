"""No orphans, one live process per task, unique ids (docs/guarantees.md). Real processes, real signals,
real kill -9; every wait is for a condition with a generous deadline."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from akira_cli.errors import AkiraError
from akira_cli.state.lock import TaskLock
from akira_cli.state.store import StateStore
from tests.support.processes import alive, kill_with_its_reaper, reapers
from tests.support.workspace import Akira


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_resume_after_kill_9_kills_the_leftover_command_before_the_step_runs_again(akira: Akira) -> None:
    pids = akira.root / "pids"
    task = akira.write_task(
        "long", "- [ ] 1. long\n  - Run: `echo $$ >> pids; sleep 100`\n  - Timeout: 200\n"
    )
    # Unsandboxed: in the sandbox $$ is a pid of its own namespace, and the command dies with
    # akira by itself (--die-with-parent; test_sandbox.py); this is the reaper's own test.
    first = akira.spawn("loop", "start", "--task", str(task), "--no-sandbox")
    akira.wait_for(lambda: pids.read_text().strip() != "", 60, "the first command")
    kill_with_its_reaper(first, akira.task_id(), akira.root)
    first.communicate(timeout=30)
    old = int(pids.read_text().split()[0])
    assert alive(old)  # nothing is left to kill it but the resume
    second = akira.spawn("loop", "resume", "--task-id", akira.task_id())
    akira.wait_for(lambda: len(pids.read_text().split()) == 2, 60, "the step to run again")
    assert not alive(old)  # the leftover group died before the step ran a second time
    new = int(pids.read_text().split()[1])
    second.send_signal(signal.SIGHUP)  # the terminal closes
    _, err = second.communicate(timeout=60)
    assert second.returncode == 3, err
    akira.wait_for(lambda: not alive(new), 30, "the command to die with akira")
    state = akira.state()
    assert state.status == "paused"
    assert [a.outcome for a in state.steps["1"].attempts][-1] == "interrupted"
    assert not (akira.root / ".state" / f"autonomous_loop_{state.task_id}.pgid").exists()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_two_starts_on_one_file_at_the_same_moment_run_it_once(akira: Akira) -> None:
    for race in range(4):
        task = akira.write_task(f"r{race}", f"- [ ] 1. once\n  - Run: `echo x >> r{race}.runs; sleep 0.5`\n")
        both = [akira.spawn("loop", "start", "--task", str(task)) for _ in range(2)]
        results = [(p.wait(timeout=60), p.communicate()[1]) for p in both]
        assert sorted(code for code, _ in results) == [0, 1], results
        refused = next(err for code, err in results if code == 1)
        assert "process" in refused or "akira loop resume" in refused
        assert (akira.root / f"r{race}.runs").read_text() == "x\n"
    ids = [p.stem for p in akira.state_files()]
    assert len(ids) == len(set(ids)) == 4


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_readers_never_touch_the_lock_so_a_real_acquire_never_fails(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    stop = threading.Event()

    def read() -> None:
        reader = store.lock("task_1")
        while not stop.is_set():
            reader.is_held()
            reader.holder()

    readers = [threading.Thread(target=read) for _ in range(2)]
    for thread in readers:
        thread.start()
    try:
        for _ in range(300):
            lock = TaskLock(tmp_path / "autonomous_loop_task_1.lock")
            lock.acquire("task 1")  # raises if a reader held the lock at this moment
            assert store.lock("task_1").holder() == os.getpid()
            lock.release()
    finally:
        stop.set()
        for thread in readers:
            thread.join(10)
    assert not store.lock("task_1").is_held()


HOLD = r"""
import sys, time
from pathlib import Path
from akira_cli.state.lock import TaskLock
lock = TaskLock(Path(sys.argv[1]))
lock.acquire("task 1")
Path(sys.argv[2]).write_text(sys.argv[3])  # the pid file as a lost race can find it: another live pid
print("held", flush=True)
time.sleep(60)
"""


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_refused_acquire_names_the_process_that_holds_the_lock(tmp_path: Path) -> None:
    """The pid file is written after the lock is won: a loser can find it naming another live
    process (the holder before, or a stale line). The refusal names the kernel's holder."""
    other = subprocess.Popen(["sleep", "60"])
    lock_path = tmp_path / "autonomous_loop_task_1.lock"
    pid_path = lock_path.with_suffix(".pid")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(lock_path), str(pid_path), f"{other.pid}\n"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(AkiraError) as refused:
            TaskLock(lock_path).acquire("task 1")
        assert f"already being run by process {holder.pid};" in str(refused.value)
    finally:
        for process in (holder, other):
            process.kill()
            process.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_racing_resumes_name_the_process_that_runs_the_task(akira: Akira) -> None:
    for race in range(5):
        marks = akira.root / f"started{race}"
        task = akira.write_task(f"race{race}", f"- [ ] 1. once\n  - Run: `echo x >> {marks.name}; sleep 1`\n")
        first = akira.spawn("loop", "start", "--task", str(task))
        akira.wait_for(lambda marks=marks: marks.exists(), 60, "the step to start")
        first.kill()
        first.communicate(timeout=30)
        both = [akira.spawn("loop", "resume", "--task-id", f"race{race}") for _ in range(2)]
        results = [(p, p.wait(timeout=90), p.communicate()[1]) for p in both]
        winners = [p for p, code, _ in results if code == 0 and "already completed" not in _]
        assert len(winners) == 1, [(code, err) for _, code, err in results]
        for _, code, err in results:
            if code == 1:
                assert f"process {winners[0].pid}" in err, (winners[0].pid, err)
        assert marks.read_text() == "x\nx\n"  # the killed run and the resumed one, never both resumes


@pytest.mark.slow
def test_a_pid_file_of_a_dead_process_is_not_a_holder(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    lock = StateStore(tmp_path).lock("task_1")
    lock.pid_path.write_text(dead.stdout.decode())
    assert lock.holder() is None and not lock.is_held()
    lock.pid_path.write_text(f"{os.getpid()} 1\n")  # our pid, but another process's start time
    assert lock.holder() is None


@pytest.mark.slow
def test_status_of_a_live_loop_shows_its_holder(akira: Akira) -> None:
    task = akira.write_task("s", "- [ ] 1. wait\n  - Run: `touch started; sleep 30`\n")
    process = akira.spawn("loop", "start", "--task", str(task))
    try:
        akira.wait_for(lambda: (akira.root / "started").exists(), 60, "the step to start")
        status = json.loads(akira.cli("loop", "status", "--task-id", akira.task_id(), "--json").out)
        assert status["status"] == "running"
        again = akira.cli("loop", "start", "--task", str(task))
        assert again.code == 1 and str(process.pid) in again.err
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
    assert process.returncode == 3


@pytest.mark.timeout(120)
def test_a_kill_9_of_akira_kills_its_commands_and_their_children_without_a_resume(akira: Akira) -> None:
    pids = akira.root / "pids"
    task = akira.write_task(
        "orphan", "- [ ] 1. long\n  - Run: `sleep 100 & echo $! $$ >> pids; wait`\n  - Timeout: 200\n"
    )
    first = akira.spawn("loop", "start", "--task", str(task), "--no-sandbox")  # $$ and $! as akira sees them
    akira.wait_for(lambda: len(pids.read_text().split()) == 2, 60, "the command and its child")
    task_id = akira.task_id()
    akira.wait_for(lambda: reapers(task_id, akira.root) != [], 60, "the reaper")
    first.kill()
    first.communicate(timeout=30)
    children = [int(pid) for pid in pids.read_text().split()]
    akira.wait_for(lambda: not any(map(alive, children)), 30, "the command and its child to die")
    akira.wait_for(lambda: reapers(task_id, akira.root) == [], 30, "the reaper to exit")
    assert akira.state().status == "running"  # interrupted: the resume continues it
    status = json.loads(akira.cli("loop", "status", "--task-id", task_id, "--json").out)
    assert status["status"] == "interrupted"


@pytest.mark.slow
def test_a_run_that_ends_as_it_should_leaves_no_reaper(akira: Akira) -> None:
    task = akira.write_task("clean", "- [ ] 1. quick\n  - Run: `echo ok > ok.txt`\n")
    assert akira.cli("loop", "start", "--task", str(task)).code == 0
    assert reapers(akira.task_id(), akira.root) == []


KILL_BEFORE_PGID_RECORDED = r"""
import os, sys, time
from pathlib import Path
from akira_cli.cli import main
from akira_cli.children.ledger import ChildLedger

def die(self, pgid):  # a kill -9 after the spawn, before the group reached the sidecar
    pids = Path("pids")
    while not pids.exists() or not pids.read_text().strip():
        time.sleep(0.01)
    os._exit(137)

ChildLedger.started = die
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_command_spawned_just_before_a_kill_9_is_killed_by_its_marks(akira: Akira) -> None:
    """The sidecar lists a group a moment after the spawn; a kill -9 in that moment must not
    leave the command running (it carries AKIRA_TASK_ID and AKIRA_WORKSPACE)."""
    pids = akira.root / "pids"
    task = akira.write_task("race", "- [ ] 1. long\n  - Run: `echo $$ >> pids; sleep 100`\n")
    first = subprocess.Popen(
        [
            sys.executable,
            "-c",
            KILL_BEFORE_PGID_RECORDED,
            "loop",
            "start",
            "--task",
            str(task),
            "--no-sandbox",  # $$ as akira sees it
            "--root",
            str(akira.root),
        ],
        cwd=akira.root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert first.wait(timeout=60) == 137
    old = int(pids.read_text().split()[0])
    # The reaper finds it by its marks, as the resume would.
    akira.wait_for(lambda: not alive(old), 30, "the command to die without a resume")
    second = akira.spawn("loop", "resume", "--task-id", akira.task_id())
    akira.wait_for(lambda: len(pids.read_text().split()) == 2, 60, "the step to run again")
    assert not alive(old)
    second.send_signal(signal.SIGTERM)
    second.communicate(timeout=60)
    new = int(pids.read_text().split()[1])
    akira.wait_for(lambda: not alive(new), 30, "the second command to die with akira")


@pytest.mark.slow
def test_the_sidecar_lists_each_group_with_its_real_start_time(tmp_path: Path) -> None:
    """The start time keeps a reused pid from being taken for the old group. It is read from
    /proc once; later ones come from the boot clock when the spawn fits in one clock tick."""
    from akira_cli.children.ledger import ChildLedger
    from akira_cli.runner import CommandRunner

    sidecar = tmp_path / "x.pgid"
    seen: list[tuple[str, str]] = []

    def look() -> None:
        pgid, started = sidecar.read_text().split()
        with open(f"/proc/{pgid}/stat") as handle:
            seen.append((started, handle.read().rsplit(")", 1)[-1].split()[19]))

    ledger = ChildLedger(sidecar)
    runner = CommandRunner(tmp_path, ledger=ledger, on_start=look)
    trusted = 0
    while trusted < 10 and len(seen) < 200:  # a loaded machine may make every spawn span a tick
        assert runner.run("sleep 0.01", 30).ok
        trusted += ledger._clock is True
    assert seen and all(listed == real for listed, real in seen), seen
    assert ledger._clock is not False  # the boot clock never disagreed with /proc


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_failure_while_a_command_starts_kills_its_group(tmp_path: Path) -> None:
    """Nothing would wait for the command any more: it must not run on alone."""
    from akira_cli.runner import CommandRunner

    pid = tmp_path / "pid"

    def fail_once_it_runs() -> None:
        for _ in range(3000):
            if pid.exists() and pid.read_text().strip():
                raise OSError(28, "No space left on device")
            threading.Event().wait(0.01)
        raise AssertionError("the command never started")

    runner = CommandRunner(tmp_path, on_start=fail_once_it_runs)
    with pytest.raises(OSError, match="No space"):
        runner.run("echo $$ > pid; exec sleep 100", 30)
    started = int(pid.read_text())
    for _ in range(3000):
        if not alive(started):
            break
        threading.Event().wait(0.01)
    assert not alive(started)


@pytest.mark.slow
def test_commands_leave_no_descriptor_behind_and_keep_their_output(tmp_path: Path) -> None:
    """The runner's own pipe and the shared /dev/null: nothing piles up over many commands, on
    success, failure or timeout, and stdout and stderr still arrive together."""
    from akira_cli.runner import CommandRunner

    runner = CommandRunner(tmp_path)
    assert runner.run("true", 30).ok  # the shared /dev/null is opened by the first command
    before = len(os.listdir("/proc/self/fd"))
    for n in range(30):
        result = runner.run(f"echo out {n}; echo err {n} >&2; read line; echo stdin=$line", 30)
        assert result.ok and result.output == f"out {n}\nerr {n}\nstdin=\n", result.output
    assert runner.run("exit 3", 30).exit_code == 3
    assert runner.run("sleep 5", 0.2).timed_out
    assert len(os.listdir("/proc/self/fd")) == before
