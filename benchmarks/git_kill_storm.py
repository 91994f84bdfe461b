"""A kill -9 storm in a git repository: exactly one commit per step, whatever the kills.

    .venv/bin/python benchmarks/git_kill_storm.py [--kills 40] [--steps 12] [--seed 7] [--parallel N]

A 12-step task whose steps each write a file of their own, in a git repository; `akira loop start`,
then kill -9 at random moments (while steps run, commit and save), `loop resume` after each,
until the kills are spent and the run has finished. Counted as defects: a step with no commit or
more than one, a commit the state does not record, a branch that does not end with the move to
Done/, a dirty `git status`, and a lock left in `.git/`. With `--parallel N` the steps
are one `[P]` wave run N at a time in worktrees, so the kills land mid-wave; a worktree or a step
branch left at the end is a defect too.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from _common import akira_command, init_workspace, temp_dir

from akira_cli.state.models import CompletedStep
from akira_cli.state.store import StateStore


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=40)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--parallel", type=int, default=1)
    options = parser.parse_args()
    rng = random.Random(options.seed)
    with temp_dir("akira-git-storm-") as root:
        init_workspace(root)
        lines = []
        for n in range(1, options.steps + 1):
            lines += [
                f"- [ ] {n}. {'[P] ' if options.parallel > 1 else ''}step {n}",
                f"  - Run: `echo {n} > out{n}.txt; sleep {pause(rng, options.parallel)}`",
            ]
            lines += [f"  - Exists: `out{n}.txt`"]
        (root / "Specs" / "storm").mkdir(parents=True)
        (root / "Specs" / "storm" / "tasks.md").write_text("\n".join(lines) + "\n")
        for args in (
            ["init", "-q", "-b", "main"],
            ["config", "user.name", "S"],
            ["config", "user.email", "s@e.x"],
        ):
            git(root, *args)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "base")
        start = [*akira_command(), "loop", "start", "--task", "Specs/storm/tasks.md", "--root", str(root)]
        start += ["--parallel", str(options.parallel), "--max-iterations", "100000"]
        resume = [*akira_command(), "loop", "resume", "--task-id", "storm", "--root", str(root)]
        process = subprocess.Popen(start, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        kills = rounds = 0
        while kills < options.kills and rounds < options.kills * 3:
            rounds += 1
            time.sleep(rng.uniform(0.02, 0.5) if options.parallel == 1 else rng.uniform(0.6, 1.8))
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                process.wait()
                kills += 1
            elif json.loads(run_state(root)).get("status") == "completed":
                break
            again = resume if list((root / ".state").glob("autonomous_loop_*.json")) else start
            process = subprocess.Popen(again, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        process.wait(timeout=600)
        final = subprocess.run(resume, capture_output=True, text=True, timeout=600)
        state = json.loads(run_state(root))
        log = git(
            root,
            "log",
            "--reverse",
            "--format=%H %(trailers:key=Akira-Step,valueonly,separator=)",
            "main..HEAD",
        )
        entries = [(line[:40], line[40:].strip()) for line in log.splitlines()]
        per_step = Counter(step for _, step in entries if step)
        recorded = {done.step_id: done.commit for done in every_completed(root, state["task_id"])}
        wrong = [str(n) for n in range(1, options.steps + 1) if per_step[str(n)] != 1]
        unrecorded = [step for sha, step in entries if step and recorded.get(step) != sha]
        last = git(root, "log", "-1", "--format=%s").strip()
        dirty = git(root, "status", "--porcelain", "--untracked-files=no").strip()
        locks = [p.name for p in (root / ".git").glob("*.lock")]
        worktrees = len(git(root, "worktree", "list").splitlines()) - 1
        logs = [p.read_text() for p in (root / ".state" / "logs").glob("*.jsonl")]
        mid_wave = sum(text.count('"stale_worktrees_removed"') for text in logs)
        branches = git(root, "for-each-ref", "--format=%(refname:short)", "refs/heads/akira-step").split()
    print(f"{kills} kills at random moments over {rounds} runs; final resume: exit {final.returncode}")
    counts = dict(sorted(per_step.items(), key=lambda kv: int(kv[0])))
    print(f"status {state['status']}; commits per step: {counts}")
    print(
        f"steps without exactly one commit: {wrong or 'none'}; commits not recorded: {unrecorded or 'none'}"
    )
    print(f"last commit: {last!r}; git status: {dirty or 'clean'}; locks left: {locks or 'none'}")
    if options.parallel > 1:
        print(f"resumes that found a wave's worktrees (a kill mid-wave): {mid_wave}")
    print(f"worktrees left: {worktrees}; step branches left: {branches or 'none'}")
    defects = len(wrong) + len(unrecorded) + bool(dirty) + len(locks) + (state["status"] != "completed")
    defects += worktrees + len(branches)
    defects += not last.endswith(": done")
    print("verdict:", "PASS" if not defects else f"FAIL ({defects} defects)")
    return 0


def every_completed(root: Path, task_id: str) -> list[CompletedStep]:
    """The completed steps the state records, the ones sealed in its journal included (the
    state keeps only the latest)."""
    store = StateStore(root / ".state")
    return store.all_completed(store.load(task_id))


def pause(rng: random.Random, parallel: int) -> str:
    """How long a step sleeps: long enough, with --parallel, for most kills to land mid-wave."""
    return f"0.{rng.randint(1, 3)}" if parallel == 1 else f"{rng.uniform(0.6, 1.2):.2f}"


def run_state(root: Path) -> str:
    command = [*akira_command(), "loop", "state", "--task-id", "storm", "--json", "--root", str(root)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60).stdout or "{}"


if __name__ == "__main__":
    sys.exit(main())
