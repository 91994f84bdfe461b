"""One fleet run on a worker (the fleet): clone, setup, a git-native loop that pushes each step's
commit, and progress reported while it runs.

The clone is made fresh each time the run is taken, by this worker or by one recovering it: if
the run's branch is on the remote already, it is cloned and the loop continues on it (its
committed ticks and `Akira-Step` trailers say which steps are done: git history is the ledger
across machines); else the ref is cloned and the loop makes the branch. The loop is a child
process that dies with the worker (`deathsig.py`), so a dead worker's loop never runs on beside
the one that recovers it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from akira_cli.fleet.database import Tables
from akira_cli.fleet.deathsig import tethered
from akira_cli.fleet.runs import HANDED_BACK, RunSpec, git_out
from akira_cli.redaction import url_without_password
from akira_cli.runner import tail

EXIT_STATUS = {0: "completed", 3: "needs_action", 4: "needs_action"}
"""A loop's exit code as the run's status: a pause nobody asked for waits for a person too."""
PAUSE_WAIT = 25.0
"""How long a worker that is told to stop lets a loop run to its next step boundary."""


@dataclass
class LoopRun:
    spec: RunSpec
    worker: str
    work_dir: Path
    tables: Tables
    stopping: threading.Event
    cancelled: Any
    """Called with the run id: True once the run was cancelled."""
    total: int | None = None
    branch: str = ""
    """The run's task branch: recorded, or chosen when the run is first taken."""
    done: int = 0
    cancel_seen: bool = False
    refused: bool = False
    looked_at: float = 0.0

    def report(self, status: str, **values: Any) -> None:
        self.tables.report(self.spec.run_id, status=status, worker=self.worker, **values)

    @property
    def clone(self) -> Path:
        return self.work_dir / f"{self.spec.run_id}-{self.worker}"

    def work(self) -> dict[str, str]:
        self.report("running", message="cloning")
        clone = self.clone
        shutil.rmtree(clone, ignore_errors=True)
        clone.parent.mkdir(parents=True, exist_ok=True)
        self.branch = self.tables.branch(self.spec.run_id) or self.spec.branch
        resumed = bool(self.branch) and self.branch_exists()
        where = f"{shlex.quote(self.spec.task)} in {shlex.quote(url_without_password(self.spec.repo))}"
        if resumed:
            say(
                f"fleet worker {self.worker} recovers {self.spec.run_id} ({where}) "
                f"from its branch {self.branch}"
            )
        else:
            say(f"fleet worker {self.worker} took {self.spec.run_id} ({where} at {self.spec.ref})")
        done = git_out(
            "clone", "-q", "--branch", self.branch if resumed else self.spec.ref, self.spec.repo, str(clone)
        )
        if done.returncode != 0:
            return self.end("failed", f"git clone failed: {tail(done.stderr.strip(), 500)}")
        setup = self.setup(clone)
        if setup is not None:
            return self.end("needs_action", f"fleet.setup failed: {setup}")
        if resumed and not (clone / self.spec.task).exists() and self.finished(clone):
            self.done = self.ledger(clone)
            self.report("running", steps_done=self.done)
            return self.end("completed", "")  # the loop had finished when its worker died
        if not self.branch:
            self.branch = self.choose_branch(clone)
            self.report("running", branch=self.branch)  # before the first push: recovery finds it
        self.total = steps_total(clone / self.spec.task)
        self.done = self.ledger(clone) if resumed else 0
        if self.cancelled(self.spec.run_id):
            return self.end("cancelled", "cancelled")  # while it was cloned: no step starts
        self.report(
            "running",
            steps_done=self.done,
            steps_total=self.total,
            message="resumed from the run's branch" if resumed else "",
        )
        return self.loop(clone, resumed)

    def choose_branch(self, clone: Path) -> str:
        from akira_cli.fleet import branch

        template = branch.clone_config(clone, self.spec.task).git.branch
        wanted = branch.wanted(template, self.spec.task, self.spec.run_id)
        return branch.free(self.spec.repo, wanted, self.tables.live_branches(self.spec.run_id))

    def finished(self, clone: Path) -> bool:
        """Whether the run's branch ends with the loop's move to Done/ (its last commit)."""
        last = git_out("log", "-1", "--format=%s%n%(trailers:key=Akira-Step,valueonly)", cwd=clone)
        lines = last.stdout.strip().splitlines()
        return bool(lines) and lines[0].endswith(": done") and len(lines) == 1

    def branch_exists(self) -> bool:
        heads = git_out("ls-remote", "--heads", self.spec.repo, f"refs/heads/{self.branch}")
        return bool(heads.stdout.strip())

    def setup(self, clone: Path) -> str | None:
        """`fleet.setup` from the clone's configuration; its output's last lines if it failed."""
        from akira_cli.fleet.branch import clone_config
        from akira_cli.sandbox.session import open_sandbox

        try:
            config = clone_config(clone, self.spec.task)
        except Exception as exc:
            return f"the clone's configuration cannot be read: {exc}"
        command = config.fleet.setup
        if not command:
            return None
        self.report("running", message=f"setup: {command}")
        try:
            with open_sandbox(config, clone, clone, lambda: None, lambda *_: None) as sandbox:  # confined
                argv, env = ["bash", "-c", command], None
                if sandbox is not None:
                    argv, env = sandbox.wrap(argv, clone, dict(os.environ))
                done = subprocess.run(
                    tethered(argv), cwd=clone, env=env, capture_output=True, text=True, timeout=3600
                )
        except subprocess.TimeoutExpired:
            return f"`{command}` took more than an hour"
        if done.returncode == 0:
            return None
        lines = (done.stdout + done.stderr).strip().splitlines()[-5:]
        return f"`{command}` exited {done.returncode}: " + " | ".join(lines)

    def ledger(self, clone: Path) -> int:
        """The steps done on the run's branch, by their `Akira-Step` trailers."""
        log = git_out("log", "--format=%(trailers:key=Akira-Step,valueonly,separator=)", cwd=clone)
        return len({line.strip() for line in log.stdout.splitlines() if line.strip()})

    def loop(self, clone: Path, resumed: bool) -> dict[str, str]:
        """The loop as a child process, watched until it exits; the run's end from its exit."""
        env = {key: value for key, value in os.environ.items() if key != "AKIRA_FLEET_DATABASE_URL"}
        # ^ the loop's agents never see the queue's password. A recovered run is on its branch.
        # -I: the clone, where the steps write, is never on the loop's import path
        command = [sys.executable, "-I", "-m", "akira_cli.fleet.child", "--task", str(clone / self.spec.task)]
        command += ["--push", "origin", "--branch", "" if resumed else self.branch]
        process = subprocess.Popen(
            tethered(command), cwd=clone, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        stderr: list[str] = []
        reader = threading.Thread(target=lambda: stderr.extend(process.stderr or []), daemon=True)
        reader.start()
        started = time.monotonic()
        self.watch(clone, process)
        reader.join(timeout=5)
        self.progress(clone, ())
        took = time.monotonic() - started
        self.done = self.ledger(clone)
        self.report("running", steps_done=self.done, loop_seconds=took)  # trailers: the truth
        return self.ended(clone, process.returncode, "".join(stderr))

    def watch(self, clone: Path, process: subprocess.Popen[str]) -> None:
        """Until the loop exits: its progress reported, and a stop or a cancel asked of it at its
        next step boundary (SIGTERM when it does not stop within `PAUSE_WAIT`)."""
        asked: float | None = None
        last: tuple[Any, ...] = ()
        while True:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=0.25)
                return
            last = self.progress(clone, last)
            if asked is None and (self.stopping.is_set() or self.was_cancelled()) and self.pause(clone):
                asked = time.monotonic()
                if self.cancel_seen:  # said once the stop hook is there: from now on, it is true
                    say(f"{self.spec.run_id} was cancelled; its loop stops at its next step")
            if asked is not None and time.monotonic() - asked > PAUSE_WAIT:
                process.send_signal(signal.SIGTERM)  # the step in flight is lost, no more
                asked = float("inf")

    def ended(self, clone: Path, code: int | None, stderr: str) -> dict[str, str]:
        """The run's end once its loop exited with `code`: cancelled, handed back to the queue
        (the worker stops), or the loop's own outcome."""
        if self.cancel_seen or self.cancelled(self.spec.run_id):
            return self.end("cancelled", "cancelled")
        if self.stopping.is_set() and code in (2, 3, -signal.SIGTERM):
            shutil.rmtree(clone, ignore_errors=True)  # its steps are pushed; the next worker clones anew
            say(
                f"{self.spec.run_id} paused after {self.done}/{self.total or '?'} steps; "
                "it goes back to the queue"
            )
            back = f"handed back by {self.worker} after {self.done}/{self.total or '?'} steps"
            self.tables.report(self.spec.run_id, status=HANDED_BACK, worker=None, message=back)
            return {"status": "handed_back"}
        status = EXIT_STATUS.get(code or 0, "failed")
        pull_request = (read_state(self.state_dir(clone)).get("git") or {}).get("pr_url")
        done = f"pull request: {pull_request}" if pull_request else ""  # as a local run reports it
        return self.end(status, done if status == "completed" else tail(stderr.strip(), 500))

    def was_cancelled(self) -> bool:
        """Looked up at most once a second while the loop runs."""
        if time.monotonic() - self.looked_at >= 1.0:
            self.looked_at = time.monotonic()
            self.cancel_seen = self.cancelled(self.spec.run_id)
        return self.cancel_seen

    def pause(self, clone: Path) -> bool:
        """Asks the loop to stop at its next step boundary (a stop hook, as a person would);
        False while the loop has no state yet, or when the stop was refused (asked again then)."""
        from akira_cli import api
        from akira_cli.errors import AkiraError

        task_id = read_state(self.state_dir(clone)).get("task_id")
        if not task_id:
            return False
        try:
            api.stop(self.state_dir(clone).parent, task_id)
        except (AkiraError, OSError) as exc:
            if not self.refused:
                self.refused = True
                say(f"{self.spec.run_id}: the stop was refused: {tail(str(exc), 300)}; asked again")
            return False
        return True

    def state_dir(self, clone: Path) -> Path:
        """The loop's `.state/`: in the workspace the task file lies in (found upward)."""
        folder = (clone / self.spec.task).parent
        while folder != clone and not (folder / ".state").is_dir():
            folder = folder.parent
        return folder / ".state"

    def progress(self, clone: Path, last: tuple[Any, ...]) -> tuple[Any, ...]:
        state = read_state(self.state_dir(clone))
        if not state:
            return last
        current = state.get("current_step") or {}
        running = [step["step_id"] for step in state.get("current_steps") or []]
        step = current.get("step_id") or ", ".join(running) or None
        done = state.get("history", {}).get("completed_sealed", 0) + len(state.get("completed_steps") or [])
        cost = (state.get("usage") or {}).get("cost_usd", 0.0)
        seen = (state.get("status"), step, done, round(cost, 4))
        if seen != last:
            self.report("running", step=step, steps_done=done, steps_total=self.total, cost_usd=cost)
        return seen

    def end(self, status: str, message: str) -> dict[str, str]:
        """The run's last report and log line. A completed or cancelled run's clone is removed
        (its steps are on the remote); any other's is kept for a person to look at."""
        self.report(status, message=message)
        steps = f" after {self.done}/{self.total if self.total is not None else '?'} steps"
        steps += f" on branch {self.branch}" if self.branch and self.done else ""
        if status in ("completed", "cancelled"):
            shutil.rmtree(self.clone, ignore_errors=True)
        elif self.clone.exists():
            steps += f" (its clone is kept in {shlex.quote(str(self.clone))})"
        lines = [line.strip() for line in message.splitlines() if line.strip()]
        said = f": {lines[-1]}" if lines and message != status else ""  # one line: the loop's last word
        say(f"{self.spec.run_id} {status}{steps}{said}")
        return {"status": status, "message": message}


def say(line: str) -> None:
    """One line of the worker's log (stderr)."""
    print(f"akira: {line}", file=sys.stderr, flush=True)


def read_state(state_dir: Path) -> dict[str, Any]:
    """The loop's state (archived once it completed)."""
    for path in [
        *sorted(state_dir.glob("autonomous_loop_*.json")),
        *sorted(state_dir.glob("archive/*.json")),
    ]:
        with contextlib.suppress(OSError, ValueError):
            return json.loads(path.read_text())  # type: ignore[no-any-return]
    return {}


def steps_total(path: Path) -> int | None:
    from akira_cli.tasks.parser import parse_task_text

    try:
        return len(parse_task_text(path.read_bytes(), path).leaves(False))
    except Exception:
        return None
