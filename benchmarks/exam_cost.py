"""What the exam costs on a large repository (docs/design.md, the exam).

    .venv/bin/python benchmarks/exam_cost.py [--files 10000] [--repeat 3] [--sandboxed]

A git repository of N tracked files in 100 folders, with `calc.py` (a bug), its test and a
one-step task whose `Verify:` runs pytest on that test. Two runs of `akira loop start`, back to
back, each in a fresh copy of the repository:
- untouched: the step fixes `calc.py` (no exam file changed: no held-out run);
- held out: the step fixes `calc.py` and also changes the test file (held out, it passes).
The held-out run's cost is the time from the attempt's evaluation to its exam event (the copy,
the files put back, the checks run again, the copy removed), median of `--repeat` runs. Also prints the
copy of the tree alone. The goal: untouched costs nothing extra (the two are not compared: the
untouched step runs no second check), and a held-out run costs about one more run of the checks
plus the copy.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from _common import akira_command, init_workspace, median, ms, temp_dir

from akira_cli.exam.heldout import copy_tree, remove_tree

FIX = "sed -i 's/a - b/a + b/' calc.py"
TOUCH = FIX + " && sed -i 's/add(2, 3)/add(3, 2)/' tests/test_calc.py"


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def repository(root: Path, files: int, sandboxed: bool) -> None:
    init_workspace(root, sandboxed)
    for index in range(files):
        folder = root / "src" / f"m{index % 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{index}.txt").write_text(f"file {index}\n" * 8)
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    verify = f"{sys.executable} -m pytest -q -p no:cacheprovider tests/test_calc.py"
    (root / "Specs" / "calc").mkdir(parents=True)
    (root / "Specs" / "calc" / "tasks.md").write_text(f"- [ ] 1. Make add add\n  - Verify: `{verify}`\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Bench")
    git(root, "config", "user.email", "bench@example.com")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")


def run_once(template: Path, parent: Path, agent: str) -> tuple[float, float | None]:
    """One run in a fresh copy of `template`: its wall time, and its held-out run's time (from
    the evaluation's event to the exam's), None when it had none."""
    root = parent / f"run-{time.monotonic_ns()}"
    shutil.copytree(template, root, symlinks=True)
    config = root / "config" / "autonomous_loop.yaml"
    text = config.read_text(encoding="utf-8")
    assert "\n  command: null" in text, "the template's agent.command moved"
    config.write_text(
        text.replace("\n  command: null", f"\n  command: {json.dumps(agent)}", 1), encoding="utf-8"
    )
    git(root, "commit", "-q", "-am", "the agent")
    command = [*akira_command(), "loop", "start", "--task", "Specs/calc/tasks.md", "--agent", "command"]
    started = time.perf_counter()
    done = subprocess.run([*command, "--root", str(root)], capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - started
    assert done.returncode == 0, done.stderr[-2000:]
    events = [json.loads(line) for log in (root / ".state" / "logs").glob("*.jsonl") for line in log.open()]
    stamps = {event["type"]: datetime.fromisoformat(event["ts"].replace("Z", "+00:00")) for event in events}
    shutil.rmtree(root, ignore_errors=True)
    if "exam" not in stamps:
        return wall, None
    return wall, (stamps["exam"] - stamps["evaluation"]).total_seconds()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sandboxed", action="store_true")
    args = parser.parse_args()
    with temp_dir("akira-exam-bench-") as parent:
        template = parent / "template"
        template.mkdir()
        repository(template, args.files, args.sandboxed)
        copies = []
        for _ in range(args.repeat):
            target = Path(tempfile.mkdtemp(dir=parent)) / "tree"
            started = time.perf_counter()
            copy_tree(template, target)
            copies.append(time.perf_counter() - started)
            remove_tree(target.parent)
        untouched, touched, held_out = [], [], []
        for _ in range(args.repeat):
            wall, held = run_once(template, parent, FIX)
            assert held is None, "the untouched step was held out"
            untouched.append(wall)
            wall, held = run_once(template, parent, TOUCH)
            assert held is not None, "the step that changed its test was not held out"
            touched.append(wall)
            held_out.append(held)
    sandbox = "sandboxed" if args.sandboxed else "unsandboxed"
    print(f"repository: {args.files} files, {sandbox}, {args.repeat} runs of each")
    print(f"copy of the tree alone (cp -a):    {ms(median(copies))}")
    print(f"run, no exam file touched:         {ms(median(untouched))} (no held-out run)")
    print(f"run, exam touched:                 {ms(median(touched))}")
    print(f"its held-out run (copy + checks):  {ms(median(held_out))}")
    print("verdict: PASS (no untouched attempt was held out; every touched one was)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
