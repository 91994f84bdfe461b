"""The fleet's edges a new user meets, for real: workers on SQLite with their log in a file,
real git with a bare origin. Cancelling a running run, the run's branch from `git.branch`, and
what a worker says and leaves behind in --work-dir."""

from __future__ import annotations

import signal
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


class LoggedFleet(Fleet):
    """Workers whose stderr goes to a file the test reads while they run."""

    def __init__(self, url: str, tmp_path: Path) -> None:
        super().__init__(url, tmp_path)
        self.logs: dict[str, Path] = {}
        self.work = tmp_path / "work"

    def worker(self, name: str, timeout: float = 3, concurrency: int = 1) -> subprocess.Popen[str]:
        log = self.tmp / f"worker-{name}.log"
        self.logs[name] = log
        command = [sys.executable, "-m", "akira_cli", "fleet", "worker", "--name", name]
        command += ["--database-url", self.url, "--work-dir", str(self.work)]
        command += ["--worker-timeout", str(timeout), "--concurrency", str(concurrency)]
        with log.open("w") as out:
            process = subprocess.Popen(command, stdout=out, stderr=out, text=True, cwd=self.tmp)
        self.workers.append(process)
        return process

    def log(self, name: str) -> str:
        return self.logs[name].read_text()

    def wait_log(self, name: str, *parts: str, timeout: float = 120) -> str:
        """The worker's log once one of its lines holds every part."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log(name)
            if any(all(part in line for part in parts) for line in text.splitlines()):
                return text
            time.sleep(0.2)
        raise AssertionError(f"no line with {parts} in worker {name}'s log:\n{self.log(name)}")

    def add_repo(self, repo: str, task: str) -> str:
        done = self.cli("add", "--task", task, "--repo", repo)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def stop_gracefully(self, process: subprocess.Popen[str]) -> int:
        process.send_signal(signal.SIGTERM)
        return process.wait(timeout=60)


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[LoggedFleet]:
    running = LoggedFleet(f"sqlite:///{tmp_path / 'fleet.sqlite'}", tmp_path)
    yield running
    running.stop()


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A person's repository (an akira workspace) with a bare origin the workers clone."""
    root = tmp_path / "repo"
    assert main(["init", str(root)]) == 0
    share_with_steps(root, tmp_path)  # the steps' ledger and gate: outside the work tree
    first_commit(root)
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(root), str(bare))
    git(root, "remote", "add", "origin", str(bare))
    git(root, "fetch", "-q", "origin")
    return root


def push(origin: Path) -> None:
    git(origin, "push", "-q", "origin", "main")


def pushed_steps(bare: Path) -> Counter[str]:
    """The steps committed on the origin's task branches, by their trailers."""
    names = git(bare, "for-each-ref", "--format=%(refname)", "refs/heads/akira").split()
    return sum((branch_steps(bare, name) for name in names), Counter())


def gated(ledger: Path, gate: Path, count: int) -> str:
    """Step 1 waits for the gate file; the others run at once."""
    first = (
        f"- [ ] 1. Step 1\n  - Run: `echo start 1 $$ >> {ledger}; while [ ! -e {gate} ]; do sleep 0.1; done; "
        f"echo 1 > s1.txt; echo end 1 $$ >> {ledger}`\n  - Exists: `s1.txt`\n"
    )
    rest = steps(ledger, count)
    return first + rest[rest.index("- [ ] 2.") :]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_cancelling_a_running_run_pauses_its_loop_at_the_next_step_boundary(
    fleet: LoggedFleet, origin: Path, tmp_path: Path
) -> None:
    ledger, gate = tmp_path / "ledger", tmp_path / "gate"
    commit_task(origin, "feat", gated(ledger, gate, 3))
    push(origin)
    bare = tmp_path / "origin.git"
    run_id = fleet.add_repo(str(bare), "Specs/feat/tasks.md")
    worker = fleet.worker("w")
    deadline = time.monotonic() + 90
    while not any(line[:2] == ["start", "1"] for line in ledger_lines(ledger)):
        assert time.monotonic() < deadline and worker.poll() is None, fleet.log("w")
        time.sleep(0.1)
    done = fleet.cli("cancel", run_id)
    assert done.returncode == 0 and "stops at its next step" in done.stderr, done.stderr
    fleet.wait_log(
        "w", run_id, "cancelled", "next step", timeout=60
    )  # the worker saw it and asked its loop to pause
    gate.write_text("")
    log = fleet.wait_log("w", run_id, "cancelled after")
    assert [line[:2] for line in ledger_lines(ledger)] == [["start", "1"], ["end", "1"]]  # step 2 never ran
    assert sum(pushed_steps(bare).values()) <= 1  # the step in flight may land, nothing after it
    rows = fleet.status()
    assert rows[0]["status"] == "cancelled" and rows[0]["steps_done"] in (0, 1)
    assert "Traceback" not in log and "DBOSAwaitedWorkflowCancelledError" not in log, log
    assert worker.poll() is None  # the worker lives on, ready for the next run
    assert fleet.stop_gracefully(worker) == 0
    assert "Traceback" not in fleet.log("w"), fleet.log("w")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_runs_branch_follows_git_branch_takes_the_next_free_name_and_survives_recovery(
    fleet: LoggedFleet, origin: Path, tmp_path: Path
) -> None:
    ledger, gate = tmp_path / "ledger", tmp_path / "gate"
    config = origin / "config" / "autonomous_loop.yaml"
    assert "branch: akira/{feature}" in config.read_text()
    config.write_text(config.read_text().replace("branch: akira/{feature}", 'branch: "night/{feature}"'))
    three = steps(ledger, 3)
    gated_second = (
        f"- [ ] 2. Step 2\n  - Run: `echo start 2 $$ >> {ledger}; while [ ! -e {gate} ]; do sleep 0.1; done; "
        f"echo 2 > s2.txt; echo end 2 $$ >> {ledger}`\n  - Exists: `s2.txt`\n"
    )
    commit_task(
        origin, "billing", three[: three.index("- [ ] 2.")] + gated_second + three[three.index("- [ ] 3.") :]
    )
    git(origin, "switch", "-q", "-c", "night/billing")  # an earlier run's branch, on the remote
    git(origin, "push", "-q", "origin", "night/billing")
    git(origin, "switch", "-q", "main")
    taken = git(origin, "rev-parse", "night/billing")
    push(origin)
    bare = tmp_path / "origin.git"
    run_id = fleet.add_repo(str(bare), "Specs/billing/tasks.md")
    doomed = fleet.worker("doomed")
    deadline = time.monotonic() + 90
    while not any(line[:2] == ["start", "2"] for line in ledger_lines(ledger)):
        assert time.monotonic() < deadline and doomed.poll() is None, fleet.log("doomed")
        time.sleep(0.1)
    assert fleet.status()[0]["branch"] == "night/billing-2"
    assert branch_steps(bare, "night/billing-2") == Counter({"1": 1})  # step 1 pushed before step 2 began
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(timeout=30)
    gate.write_text("")
    fleet.worker("rescuer")
    rows = fleet.wait(lambda rows: rows[0]["status"] == "completed", timeout=180, what="the recovery")
    assert rows[0]["branch"] == "night/billing-2" and rows[0]["worker"] == "rescuer"
    assert rows[0]["run_id"] == run_id
    assert branch_steps(bare, "night/billing-2") == Counter({"1": 1, "2": 1, "3": 1})
    heads = git(bare, "for-each-ref", "--format=%(refname:short)", "refs/heads/night").split()
    assert sorted(heads) == ["night/billing", "night/billing-2"]  # recovery made no -3
    assert git(bare, "rev-parse", "night/billing") == taken  # the earlier branch untouched
    rescued = fleet.log("rescuer").splitlines()
    assert "akira: fleet worker rescuer recovers the runs of worker doomed, silent for 3s" in rescued
    assert any(
        line.startswith(f"akira: fleet worker rescuer recovers {run_id} (")
        and line.endswith("from its branch night/billing-2")
        for line in rescued
    ), rescued


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_worker_logs_its_runs_counts_queued_steps_and_keeps_only_a_failed_runs_clone(
    fleet: LoggedFleet, origin: Path, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    fleet.work = tmp_path / "my work"  # a path a shell must see quoted
    commit_task(origin, "good", steps(ledger, 2))
    commit_task(origin, "bad", "- [ ] 1. Never\n  - Run: `echo no > never.txt`\n  - Exists: `absent.txt`\n")
    push(origin)
    bare = tmp_path / "origin.git"
    good = fleet.add_repo(str(bare), "Specs/good/tasks.md")
    bad = fleet.add_repo(str(bare), "Specs/bad/tasks.md")
    queued = {row["run_id"]: row for row in fleet.status()}
    assert (queued[good]["status"], queued[good]["steps_done"], queued[good]["steps_total"]) == (
        "queued",
        0,
        2,
    )
    assert queued[bad]["steps_total"] == 1
    assert "0/2" in fleet.cli("status").stdout
    worker = fleet.worker("w")
    ended = fleet.wait(
        lambda rows: {row["status"] for row in rows} == {"completed", "needs_action"},
        timeout=240,
        what="both",
    )
    by_id = {row["run_id"]: row for row in ended}
    assert by_id[good]["status"] == "completed" and by_id[bad]["status"] == "needs_action"
    fleet.wait_log("w", bad, "needs_action")
    log = fleet.wait_log("w", good, "completed")
    kept = fleet.work / f"{bad}-w"
    assert sorted(path.name for path in fleet.work.iterdir()) == [kept.name]  # the finished one's is gone
    assert (kept / "Specs" / "bad" / "tasks.md").is_file()
    lines = log.splitlines()
    assert f"akira: fleet worker w took {good} (Specs/good/tasks.md in {bare} at main)" in lines
    assert f"akira: fleet worker w took {bad} (Specs/bad/tasks.md in {bare} at main)" in lines
    assert f"akira: {good} completed after 2/2 steps on branch akira/good" in lines
    failed = next(line for line in lines if line.startswith(f"akira: {bad} needs_action"))
    assert f"needs_action after 0/1 steps (its clone is kept in '{kept}'): " in failed, failed
    assert fleet.stop_gracefully(worker) == 0
    assert (
        fleet.log("w").splitlines()[-1] == "akira: fleet worker w stopped"
    )  # no runs of its own to hand back


@pytest.mark.slow
def test_fleet_add_of_an_uncommitted_task_names_git_commands_that_paste(
    fleet: LoggedFleet, tmp_path: Path
) -> None:
    root = tmp_path / "my repo"
    assert main(["init", str(root)]) == 0
    first_commit(root)
    task = root / "Specs" / "new feat" / "tasks.md"
    task.parent.mkdir(parents=True)
    task.write_text("- [ ] 1. One\n  - Run: `true`\n")
    refused = fleet.cli("add", "--task", str(task))
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "'Specs/new feat/tasks.md' is not in" in refused.stderr, refused.stderr
    command = refused.stderr.split("commit the task file there (", 1)[1].split("), or give --ref", 1)[0]
    assert command.startswith(f"git -C '{root}' add 'Specs/new feat/tasks.md' && git -C '{root}' commit")
    pasted = subprocess.run(
        ["bash", "-c", command.replace(" commit", " commit -q -m tasks")], cwd=tmp_path, capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip
    assert pasted.returncode == 0, pasted.stderr
    run_id = fleet.add(task)
    assert [(row["run_id"], row["steps_total"]) for row in fleet.status()] == [(run_id, 1)]


def test_a_fleet_database_made_before_the_branch_column_gets_it(tmp_path: Path) -> None:
    import sqlalchemy as sa

    from akira_cli.fleet.database import Tables

    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:  # the table as the version before it made it
        conn.execute(
            sa.text(
                "CREATE TABLE akira_fleet_progress (run_id VARCHAR(64) PRIMARY KEY, status VARCHAR(32), "
                "worker VARCHAR(200), step VARCHAR(200), steps_done INTEGER, steps_total INTEGER, "
                "cost_usd DOUBLE PRECISION, message TEXT, loop_seconds DOUBLE PRECISION, updated_at DOUBLE PRECISION)"
            )
        )
        conn.execute(
            sa.text("INSERT INTO akira_fleet_progress (run_id, status) VALUES ('run-old', 'running')")
        )
    engine.dispose()
    tables = Tables(url)
    try:
        assert tables.branch("run-old") is None
        tables.report("run-old", status="running", branch="akira/feat")
        assert tables.branch("run-old") == "akira/feat"
        assert tables.live_branches(but="run-new") == ["akira/feat"]
        assert tables.progress()["run-old"]["status"] == "running"
    finally:
        tables.close()
