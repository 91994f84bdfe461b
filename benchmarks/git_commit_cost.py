"""What a step's commit costs on a large repository: what git-native runs cost.

    .venv/bin/python benchmarks/git_commit_cost.py [--files 10000] [--commits 30]

A repository of N tracked files in 100 folders; each round changes two files, as a step would,
and makes the step's commit exactly as the loop does (`GitRun.commit`: a temporary index from
HEAD, the changed paths and the ticked task file, `git commit`, the person's index set to the
new commit at those paths; with `--hook`, a pre-commit hook run as the loop runs it, as a
command of the step's runner, here unsandboxed). Prints the median and the spread. Goal: a median of
50 ms or less at 10,000 files.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import temp_dir

from akira_cli.git.pinned import find
from akira_cli.git.run import GitRun
from akira_cli.git.verify import CommitHooks
from akira_cli.runner import CommandRunner
from akira_cli.sections import GitSettings


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def repository(root: Path, files: int) -> None:
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Bench")
    git(root, "config", "user.email", "bench@example.com")
    for index in range(files):
        folder = root / "src" / f"m{index % 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{index}.py").write_text(f"VALUE = {index}\n")
    (root / "Specs" / "x").mkdir(parents=True)
    (root / "Specs" / "x" / "tasks.md").write_text("".join(f"- [ ] {n}. step {n}\n" for n in range(1, 200)))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    git(root, "status", "-s")  # the index's stat data is fresh, as in a repository in use


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--commits", type=int, default=30)
    parser.add_argument(
        "--hook", action="store_true", help="with a pre-commit hook (run as the loop runs it)"
    )
    options = parser.parse_args()
    with temp_dir("akira-git-cost-") as root:
        repository(root, options.files)
        if options.hook:
            hook = root / ".git" / "hooks" / "pre-commit"
            hook.write_text("#!/bin/sh\nexit 0\n")
            hook.chmod(0o755)
        repo = find(root)
        assert repo is not None
        run = GitRun(repo, root.resolve(), GitSettings())
        if options.hook:
            run.hooks = CommitHooks(run.git, CommandRunner(root), 60)
        task = root / "Specs" / "x" / "tasks.md"
        times = []
        for number in range(1, options.commits + 1):
            changed = [root / "src" / "m00" / f"f{number * 100}.py", root / "src" / f"new{number}.py"]
            for path in changed:
                path.write_text(f"CHANGED = {number}\n")
            ticked = task.read_bytes().replace(f"- [ ] {number}.".encode(), f"- [x] {number}.".encode())
            began = time.perf_counter()
            sha = run.commit(
                f"{number} step {number}",
                {"Akira-Task": "task_x", "Akira-Step": str(number)},
                changed,
                {task: ticked},
            )
            times.append(time.perf_counter() - began)
            task.write_bytes(ticked)
            assert sha is not None
        status = subprocess.run(
            ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True
        ).stdout
    median = statistics.median(times) * 1000
    hooked = ", with a pre-commit hook" if options.hook else ""
    print(f"{options.files} tracked files, {options.commits} step commits{hooked}")
    print(f"commit: median {median:.1f} ms, min {min(times) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms")
    print(f"git status after the last commit: {status.strip() or 'clean'}")
    print("verdict:", "PASS" if median <= 50 else "FAIL", "(goal: median <= 50 ms)")


if __name__ == "__main__":
    sys.exit(main())
