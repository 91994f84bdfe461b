"""The eleven defects' harness: what a new user met on the landed code, tried many times.

Each scenario prints what it tried and its defect count; every count should be 0.

    .venv/bin/python benchmarks/defects_harness.py [--orphans 10] [--moves 10] [--resumes 100]

- orphans: kill -9 of akira during a command that has a child of its own, no resume; how many
  of those processes are still alive 2 s later;
- moves: a kill -9 right after akira's own move to Done/ (`os._exit` in `move_to_done`, as in
  tests/test_crash.py), then a resume; how many were reported as a person's move;
- bad inputs: the issue's bad inputs; how many answered with more than one line or not exit 1;
- resumes: two `loop resume` racing on an interrupted task; how many refusals named a PID that
  was not the winner's.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from _common import akira_command, init_workspace, temp_dir

from tests.support.processes import alive

MOVE_DRIVER = r"""
import os, sys
from akira_cli.cli import main
from akira_cli.loop.core import AutonomousLoop
original = AutonomousLoop.move_to_done
def move_then_die(self, path):
    original(self, path)
    os._exit(137)
AutonomousLoop.move_to_done = move_then_die
sys.exit(main(sys.argv[1:]))
"""


def run(root: Path, *args: str, prefix: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [*(prefix or akira_command()), *args, "--root", str(root)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=root)


def spawn(root: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*akira_command(), *args, "--root", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
    )


def wait_for(predicate: object, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():  # type: ignore[operator]
                return
        except (OSError, ValueError, IndexError):
            pass
        time.sleep(0.01)
    raise SystemExit("harness: timed out waiting for a condition")


def task(root: Path, feature: str, text: str) -> str:
    folder = root / "Specs" / feature
    folder.mkdir(parents=True)
    (folder / "tasks.md").write_text(text)
    return f"Specs/{feature}/tasks.md"


def orphans(trials: int) -> dict[str, int]:
    left = 0
    with temp_dir("akira-orphans-") as root:
        init_workspace(root)
        for trial in range(trials):
            pids = root / f"o{trial}.pids"
            path = task(
                root, f"o{trial}", f"- [ ] 1. long\n  - Run: `sleep 60 & echo $! $$ >> {pids.name}; wait`\n"
            )
            first = spawn(root, "loop", "start", "--task", path)
            wait_for(lambda p=pids: len(p.read_text().split()) == 2)  # type: ignore[misc]
            first.send_signal(signal.SIGKILL)
            first.wait()
            time.sleep(2.0)
            left += sum(alive(int(pid)) for pid in pids.read_text().split())
            for pid in pids.read_text().split():
                if alive(int(pid)):
                    os.kill(int(pid), signal.SIGKILL)
    print(f"orphans: {trials} kill -9 of akira mid-command; processes alive 2 s later {left}")
    return {"orphans_after_2s": left}


def moves(trials: int) -> dict[str, int]:
    wrong = 0
    with temp_dir("akira-moves-") as root:
        init_workspace(root)
        for trial in range(trials):
            path = task(root, f"m{trial}", "- [ ] 1. quick\n  - Run: `true`\n")
            died = run(root, "loop", "start", "--task", path, prefix=[sys.executable, "-c", MOVE_DRIVER])
            assert died.returncode == 137, died.stderr
            resumed = run(root, "loop", "resume", "--task-id", f"m{trial}")
            state = json.loads(run(root, "loop", "state", "--task-id", f"m{trial}", "--json").stdout)
            wrong += int(resumed.returncode != 0 or "by a person" in state["stop_reason"])
    print(f"moves: {trials} kill -9 at akira's move to Done/; reported as a person's move {wrong}")
    return {"misattributed_moves": wrong}


def bad_inputs() -> dict[str, int]:
    loud = 0
    with temp_dir("akira-bad-") as root:
        init_workspace(root)
        cases = [
            task(root, "box", "- [ ] 1. a\n- [y] 2. b\n- [xx] 3. c\n"),
            task(root, "empty", ""),
            task(root, "cycle", "- [ ] 1. a\n  - Depends: 2\n- [ ] 2. b\n  - Depends: 1\n"),
        ]
        unreadable = task(root, "unreadable", "- [ ] 1. a\n")
        (root / unreadable).chmod(0)
        drop = "-dac_override,-dac_read_search"
        user = ["setpriv", f"--inh-caps={drop}", f"--bounding-set={drop}"] if os.geteuid() == 0 else []
        outcomes = [run(root, "loop", "start", "--task", path) for path in cases]
        outcomes.append(run(root, "loop", "start", "--task", unreadable, prefix=[*user, *akira_command()]))
        outcomes.append(run(root, "loop", "resume", "--task-id", "no-such-feature"))
        for outcome in outcomes:
            loud += int(outcome.returncode != 1 or len(outcome.stderr.strip().splitlines()) != 1)
    print(f"bad inputs: {len(outcomes)} inputs; answered with more than one line or not exit 1 {loud}")
    return {"loud_bad_inputs": loud}


def resumes(rounds: int) -> dict[str, int]:
    wrong = refusals = 0
    with temp_dir("akira-resumes-") as root:
        init_workspace(root)
        for race in range(rounds):
            mark = root / f"r{race}.runs"
            path = task(root, f"r{race}", f"- [ ] 1. once\n  - Run: `echo x >> {mark.name}; sleep 0.5`\n")
            first = spawn(root, "loop", "start", "--task", path)
            wait_for(lambda m=mark: m.exists())  # type: ignore[misc]
            first.send_signal(signal.SIGKILL)
            first.wait()
            both = [spawn(root, "loop", "resume", "--task-id", f"r{race}") for _ in range(2)]
            results = [(p.pid, p.wait(timeout=120), p.communicate()[1]) for p in both]
            winners = [pid for pid, code, _ in results if code == 0]
            for _, code, err in results:
                if code == 1:
                    refusals += 1
                    wrong += int(len(winners) != 1 or f"process {winners[0]}" not in err)
    print(f"racing resumes: {rounds} pairs, {refusals} refused; refusals naming a wrong PID {wrong}")
    return {"wrong_pids": wrong}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--orphans", type=int, default=10)
    parser.add_argument("--moves", type=int, default=10)
    parser.add_argument("--resumes", type=int, default=100)
    options = parser.parse_args()
    figures = orphans(options.orphans) | moves(options.moves) | bad_inputs() | resumes(options.resumes)
    print("\ndefects (each should be 0):")
    for name, value in figures.items():
        print(f"  {name:>20}: {value}")
    print("verdict:", "PASS" if not any(figures.values()) else "FAIL")


if __name__ == "__main__":
    main()
