"""Loop overhead in a git repository: akira's git-native run against a bare crash-safe loop that
commits each step too (git-native runs).

    .venv/bin/python benchmarks/git_loop_overhead.py [--steps 300] [--repeat 3]

Each of the N steps writes one file (`echo N > out/N.txt`), so each gets a commit. akira runs
`loop start --no-wait` in-process in a git repository (a task branch, a commit per step with its
trailers, the move to Done/ committed). The bare loop, in a repository of its own, does what any
crash-safe loop that commits must: the same command, a durable save of a small state,
then `git add` and `git commit` of that one named file. The runs alternate and the ratio is the
median of each pair's akira/bare. Target: ratio <= 1.5.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import init_workspace, median, quiet, temp_dir, write_task
from loop_overhead import save_small_state

TARGET_RATIO = 1.5
COMMAND = "mkdir -p out && echo $AKIRA_STEP_ID > out/$AKIRA_STEP_ID.txt"


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def repository(root: Path) -> None:
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Bench")
    git(root, "config", "user.email", "bench@example.com")


def akira_run(parent: Path, name: str, steps: int) -> float:
    from akira_cli.cli import main

    root = parent / name
    init_workspace(root)
    write_task(root, "bench", steps, COMMAND)
    repository(root)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    args = ["loop", "start", "--root", str(root), "--task", "Specs/bench/tasks.md", "--no-wait"]
    args += ["--max-iterations", str(steps + 10)]
    cwd = os.getcwd()
    os.chdir(root)
    try:
        with quiet():
            began = time.perf_counter()
            code = main(args)
            took = time.perf_counter() - began
    finally:
        os.chdir(cwd)
    made = subprocess.run(
        ["git", "rev-list", "--count", "main..HEAD"], cwd=root, capture_output=True, text=True
    )
    if code != 0 or int(made.stdout) != steps + 1:
        raise SystemExit(f"akira in {root}: exit {code}, {made.stdout.strip()} commits for {steps} steps")
    return took


def bare_run(parent: Path, name: str, steps: int) -> float:
    root = parent / name
    root.mkdir()
    repository(root)
    git(root, "commit", "-q", "--allow-empty", "-m", "base")
    folder = root / ".bare-state"
    folder.mkdir()
    (root / ".git" / "info" / "exclude").write_text("/.bare-state/\n")
    began = time.perf_counter()
    for step in range(1, steps + 1):
        env = {**os.environ, "AKIRA_STEP_ID": str(step)}
        subprocess.run(["bash", "-c", COMMAND], cwd=root, env=env, check=True)
        save_small_state(folder, {"step": step, "done": step, "status": "running"})
        path = f"out/{step}.txt"
        git(root, "add", "--", path)
        git(root, "commit", "-q", "-m", f"step {step}", "--", path)
    return time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    akira, bare, ratios = [], [], []
    with temp_dir("akira-git-overhead-") as parent:
        akira_run(parent, "warm-up", 3)  # imports what a run imports lazily, before any timing
        for round_ in range(options.repeat):
            bare.append(bare_run(parent, f"bare{round_}", options.steps))
            akira.append(akira_run(parent, f"akira{round_}", options.steps))
            ratios.append(akira[-1] / bare[-1])
    per = 1000 / options.steps
    print(f"{options.steps} steps, each writing one file and committed, {options.repeat} pairs")
    print(f"bare loop + git commit: median {median(bare) * per:.1f} ms a step")
    print(f"akira, git-native:      median {median(akira) * per:.1f} ms a step")
    print("ratios: " + ", ".join(f"{ratio:.2f}" for ratio in ratios))
    ratio = median(ratios)
    print(
        f"median ratio {ratio:.2f}; verdict:",
        "PASS" if ratio <= TARGET_RATIO else "FAIL",
        f"(target <= {TARGET_RATIO})",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
