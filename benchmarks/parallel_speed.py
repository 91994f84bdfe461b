"""Parallel `[P]` steps: wall time with 1, 2, 4 and 8 workers, and what a step costs
in a long wave on a large repository.

    .venv/bin/python benchmarks/parallel_speed.py [--sleep 2] [--steps 200] [--files 10000]

(a) A wave of 8 `[P]` steps that each sleep 2 s and write a file, with `--parallel 1, 2, 4, 8`:
    the wall time of `akira loop start`, merges and checks included. Target: <= 6 s with 4.
(b) 200 `[P]` steps that each write one new file, in a repository of 10,000 tracked files, with
    `--parallel 4` and one at a time: the cost per step (worktree slots, commits, merges, checks
    again on the task branch), and how it grows along the wave (first and last quarter of the
    steps, from the log's timestamps). Target: <= 3x one at a time.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from _common import akira_command, init_workspace, temp_dir


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def repository(root: Path, steps: list[str], files: int = 0) -> None:
    init_workspace(root)
    for args in (
        ["init", "-q", "-b", "main"],
        ["config", "user.name", "B"],
        ["config", "user.email", "b@e.x"],
    ):
        git(root, *args)
    for n in range(files):
        folder = root / "src" / f"d{n // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n}.txt").write_text(f"{n}\n")
    (root / "Specs" / "bench").mkdir(parents=True)
    (root / "Specs" / "bench" / "tasks.md").write_text("# Tasks\n\n" + "".join(steps))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")


def run(root: Path, parallel: int) -> float:
    command = [*akira_command(), "loop", "start", "--task", "Specs/bench/tasks.md", "--no-wait"]
    command += ["--parallel", str(parallel), "--max-iterations", "100000", "--root", str(root)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"akira exited {done.returncode}: {done.stderr[-2000:]}")
    return took


def step_times(root: Path) -> list[float]:
    """When each step completed, in seconds since the first step started (from the log)."""
    log = next((root / ".state" / "logs").glob("*.jsonl"))
    stamps = []
    for line in log.read_text().splitlines():
        event = json.loads(line)
        if event["type"] in ("step_started", "step_completed"):
            stamps.append((event["type"], datetime.fromisoformat(event["ts"].replace("Z", "+00:00"))))
    first = next(ts for kind, ts in stamps if kind == "step_started")
    return [(ts - first).total_seconds() for kind, ts in stamps if kind == "step_completed"]


def sleepers(count: int, seconds: float) -> list[str]:
    return [
        f"- [ ] {n}. [P] Sleep {n}\n  - Run: `sleep {seconds}; echo {n} > s{n}.txt`\n  - Exists: `s{n}.txt`\n"
        for n in range(1, count + 1)
    ]


def writers(count: int) -> list[str]:
    return [
        f"- [ ] {n}. [P] Write {n}\n  - Run: `echo {n} > w{n}.txt`\n  - Exists: `w{n}.txt`\n"
        for n in range(1, count + 1)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sleep", type=float, default=2.0)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--files", type=int, default=10_000)
    options = parser.parse_args()
    print(f"(a) 8 [P] steps of {options.sleep:g} s each (one at a time: {8 * options.sleep:g} s of sleep)")
    walls = {}
    for workers in (1, 2, 4, 8):
        with temp_dir("akira-par-a-") as root:
            repository(root, sleepers(8, options.sleep))
            walls[workers] = run(root, workers)
            left = len(git(root, "worktree", "list").splitlines()) - 1
        print(f"  --parallel {workers}: {walls[workers]:6.2f} s wall   worktrees left: {left}")
    print(
        f"  target --parallel 4 <= {3 * options.sleep:g} s: "
        + ("PASS" if walls[4] <= 3 * options.sleep else "FAIL")
    )
    print(f"(b) {options.steps} [P] steps that each write one new file, {options.files} tracked files")
    per = {}
    for workers in (1, 4):
        with temp_dir("akira-par-b-") as root:
            repository(root, writers(options.steps), options.files)
            wall = run(root, workers)
            times = step_times(root)
            commits = len(git(root, "log", "--format=%h", "main..HEAD").splitlines())
        quarter = max(1, len(times) // 4)
        first = times[quarter - 1] / quarter
        last = (times[-1] - times[-quarter - 1]) / quarter if len(times) > quarter else first
        per[workers] = wall / options.steps
        print(
            f"  --parallel {workers}: {wall:6.2f} s wall, {per[workers] * 1000:6.1f} ms a step; "
            f"first quarter {first * 1000:6.1f} ms a step, last quarter {last * 1000:6.1f} ms a step; "
            f"{commits} commits"
        )
    ratio = per[4] / per[1]
    print(
        f"  ratio --parallel 4 / one at a time: {ratio:.2f} (target <= 3): {'PASS' if ratio <= 3 else 'FAIL'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
