"""The fleet for real: DBOS on a SQLite file (and on a throwaway Postgres cluster when
its binaries are on PATH), real worker processes, real git remotes, real kill -9 and SIGTERM.

Steps write a ledger outside the repositories (`start`/`end` lines, `overlap` when a step found
another run of itself still alive), which says what ran, where, and how often."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from akira_cli.cli import main
from tests.support.fleet import Fleet, branch_steps, commit_task, ledger_lines, steps
from tests.support.git import first_commit, git
from tests.support.workspace import share_with_steps

pytestmark = pytest.mark.slow
FLEET_KEYS = [
    "run_id", "task", "repo", "ref", "branch", "status", "worker", "step",
    "steps_done", "steps_total", "cost_usd", "updated_at", "message",
]  # fmt: skip


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A person's repository: an akira workspace with one commit."""
    root = tmp_path / "origin"
    assert main(["init", str(root)]) == 0
    share_with_steps(root, tmp_path)  # the steps' ledger is outside the repositories
    first_commit(root)
    return root


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    running = Fleet(f"sqlite:///{tmp_path / 'fleet.sqlite'}", tmp_path)
    yield running
    running.stop()


def test_a_run_is_worked_by_a_worker_and_lands_a_commit_per_step_on_its_branch(
    fleet: Fleet, origin: Path, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    task = commit_task(origin, "feat", steps(ledger, 3))
    run_id = fleet.add(task)
    assert run_id.startswith("run-") and "\n" not in run_id  # the run id alone on stdout
    queued = fleet.status()
    assert [row["status"] for row in queued] == ["queued"] and list(queued[0]) == FLEET_KEYS
    fleet.worker("w1")
    rows = fleet.wait(lambda rows: rows[0]["status"] == "completed", what="the run to complete")
    row = rows[0]
    assert row["run_id"] == run_id and row["worker"] == "w1" and row["branch"] == "akira/feat"
    assert (row["steps_done"], row["steps_total"]) == (3, 3) and row["task"] == "Specs/feat/tasks.md"
    assert branch_steps(origin, "akira/feat") == Counter({"1": 1, "2": 1, "3": 1})
    assert git(origin, "branch", "--show-current") == "main"  # the person's checkout untouched
    table = fleet.cli("status")
    assert run_id in table.stdout and "completed" in table.stdout and "3/3" in table.stdout
    worker = fleet.workers[0]
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0


def test_bad_inputs_are_one_line_each(fleet: Fleet, origin: Path, tmp_path: Path) -> None:
    task = commit_task(origin, "feat", "- [ ] 1. One\n  - Run: `true`\n")
    loose = tmp_path / "loose" / "tasks.md"
    loose.parent.mkdir()
    loose.write_text("- [ ] 1. One\n")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cases = {
        "bad url": [*fleet_args("status"), "--database-url", "mysql://root:hunter2secret@db/x"],
        "unreachable": [
            *fleet_args("status"),
            "--database-url",
            f"postgresql://akira:hunter2secret@127.0.0.1:{port}/q",
        ],
        "not in a repository": [*fleet_args("add", "--task", str(loose)), "--database-url", fleet.url],
        "cannot be cloned": [
            *fleet_args("add", "--task", "Specs/feat/tasks.md", "--repo", str(tmp_path / "nowhere")),
            "--database-url",
            fleet.url,
        ],
        "not committed": [
            *fleet_args("add", "--task", str(task), "--ref", "no-such-branch"),
            "--database-url",
            fleet.url,
        ],
        "unknown run": [*fleet_args("cancel", "run-nope"), "--database-url", fleet.url],
        "missing": [
            *fleet_args("add", "--task", str(origin / "Specs" / "nope" / "tasks.md")),
            "--database-url",
            fleet.url,
        ],
    }
    fleet.add(task)
    cases["duplicate"] = [*fleet_args("add", "--task", str(task)), "--database-url", fleet.url]
    for what, command in cases.items():
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert done.returncode == 1, f"{what}: {done.stderr}"
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr, (
            f"{what}: {done.stderr}"
        )
        assert "hunter2secret" not in done.stderr + done.stdout, what
    unreachable = subprocess.run(cases["unreachable"], capture_output=True, text=True, timeout=60)
    assert f"127.0.0.1:{port}" in unreachable.stderr and "akira:***@" in unreachable.stderr
    missing = subprocess.run(cases["missing"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert "task file not found; check the --task path" in missing.stderr and "git -C" not in missing.stderr
    duplicate = subprocess.run(cases["duplicate"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert "already has a live run (run-" in duplicate.stderr


def fleet_args(*args: str) -> list[str]:
    return [sys.executable, "-m", "akira_cli", "fleet", *args]


def test_a_worker_killed_mid_step_is_recovered_by_another_and_each_step_lands_once(
    fleet: Fleet, origin: Path, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    run_id = fleet.add(commit_task(origin, "feat", steps(ledger, 4, seconds=1.5)))
    first = fleet.worker("doomed")
    deadline = time.monotonic() + 90
    while not any(line[:2] == ["start", "2"] for line in ledger_lines(ledger)):
        assert time.monotonic() < deadline and first.poll() is None, "step 2 never started"
        time.sleep(0.1)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    killed_at = time.monotonic()
    fleet.worker("rescuer")
    rows = fleet.wait(lambda rows: rows[0]["status"] == "completed", timeout=180, what="the recovery")
    assert time.monotonic() - killed_at >= 2  # not before the dead worker's timeout
    assert rows[0]["worker"] == "rescuer" and rows[0]["run_id"] == run_id
    assert branch_steps(origin, "akira/feat") == Counter({"1": 1, "2": 1, "3": 1, "4": 1})
    ends = Counter(line[1] for line in ledger_lines(ledger) if line[0] == "end")
    assert ends == Counter({"1": 1, "2": 1, "3": 1, "4": 1})  # the killed attempt never finished
    assert_no_step_ran_twice_at_once(ledger)


def assert_no_step_ran_twice_at_once(ledger: Path) -> None:
    """No step's command started while an earlier one of the same step still lived: each holds a
    lock of its step for its life (the kernel lets go when its processes are gone) and notes an
    `overlap` when it finds the lock taken. A lock, not a pid: in the sandbox a command's `$$` is
    a pid of its own PID namespace (the sandbox's)."""
    overlaps = [line for line in ledger_lines(ledger) if line[0] == "overlap"]
    assert overlaps == [], f"steps ran twice at once: {overlaps}"


def test_two_workers_never_run_one_run_twice(fleet: Fleet, origin: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    runs = [fleet.add(commit_task(origin, f"f{n}", steps(ledger, 2, prefix=f"r{n}-"))) for n in range(4)]
    fleet.worker("a")
    fleet.worker("b")
    rows = fleet.wait(
        lambda rows: all(r["status"] == "completed" for r in rows), timeout=180, what="four runs"
    )
    assert sorted(row["run_id"] for row in rows) == sorted(runs)
    ends = Counter(line[1] for line in ledger_lines(ledger) if line[0] == "end")
    assert ends == Counter({f"r{n}-{s}": 1 for n in range(4) for s in (1, 2)})


def test_sigterm_hands_a_running_loop_back_at_a_step_boundary(
    fleet: Fleet, origin: Path, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    run_id = fleet.add(commit_task(origin, "feat", steps(ledger, 3, seconds=2)))
    first = fleet.worker("leaving", timeout=60)
    deadline = time.monotonic() + 90
    while not any(line[:2] == ["start", "1"] for line in ledger_lines(ledger)):
        assert time.monotonic() < deadline, "step 1 never started"
        time.sleep(0.1)
    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=40) == 0  # handed back when the running step ends
    ends = [line[1] for line in ledger_lines(ledger) if line[0] == "end"]
    assert ends == ["1"]  # the running step finished; the next one never started
    assert first.stderr is not None
    said = first.stderr.read().splitlines()
    assert f"akira: {run_id} paused after 1/3 steps; it goes back to the queue" in said, said
    assert said[-1] == "akira: fleet worker leaving stopped; its 1 run goes back to the queue", said
    [row] = fleet.status()  # no worker holds it now: queued, not running on the one that left
    assert (row["status"], row["worker"]) == ("queued", None), row
    assert "handed back by leaving after 1/3 steps" in str(row["message"]), row
    fleet.worker("staying", timeout=60)
    rows = fleet.wait(lambda rows: rows[0]["status"] == "completed", timeout=120, what="the run handed back")
    assert rows[0]["worker"] == "staying" and rows[0]["run_id"] == run_id
    assert branch_steps(origin, "akira/feat") == Counter({"1": 1, "2": 1, "3": 1})


def test_a_failing_setup_marks_the_run_needs_action_with_its_output(fleet: Fleet, origin: Path) -> None:
    config = origin / "config" / "autonomous_loop.yaml"
    config.write_text(config.read_text().replace('setup: ""', 'setup: "echo the-setup-broke >&2; exit 3"'))
    fleet.add(commit_task(origin, "feat", "- [ ] 1. One\n  - Run: `echo 1 > one.txt`\n"))
    fleet.worker("w")
    rows = fleet.wait(lambda rows: rows[0]["status"] == "needs_action", what="needs_action")
    assert "the-setup-broke" in str(rows[0]["message"]) and "exited 3" in str(rows[0]["message"])


def test_a_setup_that_changes_a_tracked_file_still_runs_in_the_workers_own_clone(
    fleet: Fleet, origin: Path
) -> None:
    (origin / "lock.txt").write_text("pinned\n")  # as `npm install` rewrites a lock file
    config = origin / "config" / "autonomous_loop.yaml"
    config.write_text(config.read_text().replace('setup: ""', 'setup: "echo regenerated >> lock.txt"'))
    fleet.add(commit_task(origin, "feat", "- [ ] 1. One\n  - Run: `echo 1 > one.txt`\n"))
    fleet.worker("w")
    rows = fleet.wait(
        lambda rows: rows[0]["status"] in ("completed", "failed", "needs_action"), what="the end"
    )
    assert rows[0]["status"] == "completed", rows[0]  # no person's work to refuse in akira's clone


def test_cancel_drops_a_queued_run(fleet: Fleet, origin: Path) -> None:
    run_id = fleet.add(commit_task(origin, "feat", "- [ ] 1. One\n  - Run: `true`\n"))
    done = fleet.cli("cancel", run_id)
    assert done.returncode == 0 and "dropped from the queue" in done.stderr
    assert [row["status"] for row in fleet.status()] == ["cancelled"]
    again = fleet.cli("cancel", run_id)
    assert again.returncode == 1 and "has ended" in again.stderr


def test_the_fleet_without_dbos_names_the_extra_and_nothing_else_imports_it(tmp_path: Path) -> None:
    blocked = (
        "import sys; sys.modules['dbos'] = None; from akira_cli.cli import main; "
        "sys.exit(main(['fleet', 'status', '--database-url', 'sqlite:///x.sqlite']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", blocked], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 1 and 'pip install -e ".[fleet]"' in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    probe = (
        "import sys, contextlib, io; from akira_cli.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()): main(['--help'])\n"
        "print('dbos' in sys.modules, 'sqlalchemy' in sys.modules)"
    )
    seen = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert seen.stdout.split() == ["False", "False"], seen.stderr


# -- Postgres -------------------------------------------------------------------------------------


@pytest.fixture
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A throwaway Postgres cluster on a free port, as `nobody` when the tests run as root."""
    if shutil.which("initdb") is None or shutil.which("pg_ctl") is None:
        pytest.skip("Postgres binaries (initdb, pg_ctl) are not on PATH: the Postgres fleet test is skipped")
    folder = Path("/tmp") / f"akira-pg-{os.getpid()}-{time.monotonic_ns()}"
    folder.mkdir(mode=0o777)
    data, password = folder / "data", "pg-secret-9f3k2"
    (folder / "pw").write_text(password)
    as_user = ["runuser", "-u", "nobody", "--"] if os.geteuid() == 0 else []
    if as_user:
        shutil.chown(folder, "nobody")
        shutil.chown(folder / "pw", "nobody")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    run = lambda *args: subprocess.run([*as_user, *args], capture_output=True, text=True, timeout=120)  # noqa: E731
    made = run("initdb", "-D", str(data), "-U", "akira", f"--pwfile={folder / 'pw'}", "--auth=scram-sha-256")
    assert made.returncode == 0, made.stderr
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
    started = run("pg_ctl", "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "start")
    assert started.returncode == 0, started.stderr + (folder / "log").read_text()
    try:
        yield f"postgresql://akira:{password}@127.0.0.1:{port}/akira_fleet"
    finally:
        run("pg_ctl", "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(folder, ignore_errors=True)


def test_the_fleet_on_postgres_recovers_a_killed_worker_and_never_shows_the_password(
    postgres: str, origin: Path, tmp_path: Path
) -> None:
    fleet = Fleet(postgres, tmp_path)
    try:
        ledger = tmp_path / "ledger"
        run_id = fleet.add(commit_task(origin, "feat", steps(ledger, 3, seconds=1.5)))
        other = fleet.add(commit_task(origin, "other", steps(ledger, 2, prefix="o")))
        first = fleet.worker("pg-doomed")
        deadline = time.monotonic() + 90
        while not any(line[0] == "start" for line in ledger_lines(ledger)):
            assert time.monotonic() < deadline, "no step started"
            time.sleep(0.1)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        fleet.worker("pg-a")
        fleet.worker("pg-b")
        rows = fleet.wait(
            lambda rows: all(r["status"] == "completed" for r in rows), timeout=180, what="both runs"
        )
        assert {row["run_id"] for row in rows} == {run_id, other}
        assert branch_steps(origin, "akira/feat") == Counter({"1": 1, "2": 1, "3": 1})
        assert branch_steps(origin, "akira/other") == Counter({"1": 1, "2": 1})
        assert_no_step_ran_twice_at_once(ledger)
        password = postgres.split(":")[2].split("@")[0]
        shown = fleet.cli("status").stdout + json.dumps(rows)
        for process in fleet.workers:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            out, err = process.communicate(timeout=40)
            shown += out + err
        assert password not in shown
    finally:
        fleet.stop()


def test_an_idle_worker_waits_quietly_and_sigterm_ends_it(fleet: Fleet) -> None:
    worker = fleet.worker("idle")
    assert worker.stderr is not None
    first = worker.stderr.readline()  # once it is ready for runs (the test's timeout bounds it)
    assert first.strip() == "akira: fleet worker idle is waiting for runs"
    assert fleet.status() == []
    worker.send_signal(signal.SIGTERM)
    out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0
    assert out == "" and err.strip().splitlines() == [
        "akira: fleet worker idle stopped"
    ]  # nothing between: it waited quietly, and it had no runs to hand back
    from akira_cli.fleet.database import Tables

    tables = Tables(fleet.url)
    try:  # forgotten, not left stale: no worker "recovers" one that held nothing
        assert "idle" not in tables.stale("nobody", timeout=-3600)
    finally:
        tables.close()


def test_a_run_recovered_after_its_loop_finished_is_completed_not_run_again(
    fleet: Fleet, origin: Path
) -> None:
    run_id = fleet.add(commit_task(origin, "feat", "- [ ] 1. One\n  - Run: `echo 1 > one.txt`\n"))
    from akira_cli.fleet.database import Tables

    tables = Tables(fleet.url)  # as a worker that died at the very end left it: the branch recorded…
    tables.report(run_id, status="running", worker="gone", branch="akira/feat")
    tables.close()
    git(origin, "switch", "-q", "-c", "akira/feat")  # …and pushed with every step
    (origin / "one.txt").write_text("1\n")
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "1 One", "-m", "Akira-Step: 1")
    (origin / "Done").mkdir(exist_ok=True)
    git(origin, "mv", "Specs/feat", "Done/feat")
    git(origin, "commit", "-q", "-m", "feat: done")
    git(origin, "switch", "-q", "main")
    fleet.worker("late")
    rows = fleet.wait(
        lambda rows: rows[0]["status"] != "queued" and rows[0]["status"] != "running", what="the end"
    )
    assert rows[0]["status"] == "completed" and rows[0]["steps_done"] == 1
    assert git(origin, "log", "-1", "--format=%s", "akira/feat") == "feat: done"  # nothing new
