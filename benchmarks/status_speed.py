"""`akira loop status` over 1,000 state files: subprocess (median of 5) and in-process.

    .venv/bin/python benchmarks/status_speed.py [--files 1000] [--repeat 5]

Builds a workspace whose `.state/` holds N valid state files made with `LoopState` and saved
with `StateStore.save`: a mix of running (a few with a live lock held by this script, the
rest interrupted), paused, needs_action, completed and failed loops, many with completed steps,
attempts and failures so they are realistic in size. Then times `akira loop status` and
`akira loop status --json`. Target (docs/guarantees.md): under 1 s.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _common import akira_command, init_workspace, median, print_profile, quiet, temp_dir

TARGET_SECONDS = 1.0
STATUSES = ("running", "paused", "needs_action", "completed", "failed")
LIVE = 5  # running loops whose lock this script holds, so they show as Active


def build_states(root: Path, count: int) -> tuple[int, list[object]]:
    from akira_cli.state.models import CompletedStep, CurrentStep, FailedStep, LoopState
    from akira_cli.state.records import Attempt, CheckResult, Evaluation
    from akira_cli.state.store import StateStore

    store = StateStore(root / ".state")
    base = datetime(2025, 1, 1, tzinfo=UTC)
    locks: list[object] = []
    total_bytes = 0
    for index in range(count):
        status = STATUSES[index % len(STATUSES)]
        task_id = f"task_{(base + timedelta(seconds=index)):%Y%m%d_%H%M%S}"
        state = LoopState(
            task_id=task_id,
            task_path=str(root / "Specs" / f"feature{index}" / "tasks.md"),
            feature=f"feature{index}",
            status=status,  # type: ignore[arg-type]
            max_iterations=100,
            elapsed_seconds=37.5 + index,
        )
        done = index % 12  # 0..11 completed steps, each with one or two attempts
        for number in range(1, done + 1):
            step_id = str(number)
            record = state.record(step_id, f"step {number}: do the thing number {number}")
            tries = 2 if number % 4 == 0 else 1
            for attempt_no in range(1, tries + 1):
                ok = attempt_no == tries
                state.iteration += 1
                record.attempts.append(
                    Attempt(
                        step_id=step_id,
                        number=attempt_no,
                        iteration=state.iteration,
                        approach="Run" if attempt_no == 1 else "Fallback 1",
                        actions=[f"python tools/gen_{number}.py --out build/{number}"],
                        duration_seconds=1.25,
                        outcome="success" if ok else "failure",
                        evaluation=Evaluation(
                            complete=ok,
                            confidence=1.0 if ok else 0.0,
                            checks=[CheckResult(name="agent", passed=ok, detail="exit 0")],
                            reasons=[] if ok else ["`python tools/gen.py` exited 1"],
                        ),
                        error="" if ok else "`python tools/gen.py` exited 1\nTraceback: ...",
                        error_signature="" if ok else "exit1:gen",
                        output_tail="generated 12 files\n" * 5,
                        files_changed=[f"build/{number}/a.py", f"build/{number}/b.py"],
                    )
                )
                if ok:
                    state.total_successes += 1
                else:
                    state.total_failures += 1
                    state.failed_steps.append(
                        FailedStep(
                            step_id=step_id,
                            description=record.description,
                            error="`python tools/gen.py` exited 1",
                            retry_count=attempt_no - 1,
                            recovered=True,
                        )
                    )
            state.completed_steps.append(
                CompletedStep(step_id=step_id, description=record.description, attempts=tries)
            )
        if status != "completed":
            state.current_step = CurrentStep(step_id=str(done + 1), description=f"step {done + 1}", attempt=1)
        if status in ("needs_action", "failed"):
            state.consecutive_failures = 3
            state.stop_reason = "failure threshold reached: 3 failed attempts in a row"
        store.save(state)
        total_bytes += store.path(task_id).stat().st_size
        if status == "running":
            lock = store.lock(task_id)
            if len(locks) < LIVE:
                lock.acquire(task_id)  # held until the end: shows as Active with our PID
                locks.append(lock)
            else:
                lock.lock_path.touch()  # a lock file left by a dead process: interrupted
    return total_bytes, locks


def time_subprocess(root: Path, extra: list[str], repeat: int) -> tuple[list[float], int]:
    times, size = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run(
            [*akira_command(), "loop", "status", "--root", str(root), *extra],
            capture_output=True,
            check=True,
        )
        times.append(time.perf_counter() - started)
        size = len(done.stdout)
    return times, size


def time_in_process(
    root: Path, extra: list[str], repeat: int, profiler: cProfile.Profile | None = None
) -> list[float]:
    from akira_cli.cli import main as akira_main

    times = []
    for _ in range(repeat):
        with quiet():
            started = time.perf_counter()
            argv = ["loop", "status", "--root", str(root), *extra]
            code = profiler.runcall(akira_main, argv) if profiler else akira_main(argv)
            took = time.perf_counter() - started
        if code != 0:
            raise SystemExit(f"akira loop status {' '.join(extra)} exited {code}")
        times.append(took)
    return times


def time_import(repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import akira_cli.cli"], check=True)
        times.append(time.perf_counter() - started)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="cProfile, top N")
    args = parser.parse_args()

    def line(label: str, values: list[float], note: str = "") -> None:
        each = ", ".join(f"{v:.3f}" for v in values)
        print(f"  {label:<44} median {median(values):6.3f} s  [{each}]{note}")

    with temp_dir("akira-bench-status-") as root:
        init_workspace(root)
        started = time.perf_counter()
        total_bytes, locks = build_states(root, args.files)
        built = time.perf_counter() - started
        count = len(list((root / ".state").glob("autonomous_loop_*.json")))
        print(
            f"status speed: {count} state files in .state/ ({total_bytes / count / 1024:.1f} KiB "
            f"average, {total_bytes / 1024 / 1024:.1f} MiB total; built in {built:.1f} s), "
            f"{LIVE} held live by this process; median of {args.repeat}"
        )
        results = {}
        for label, extra in (("loop status", []), ("loop status --json", ["--json"])):
            times, size = time_subprocess(root, extra, args.repeat)
            results[label] = median(times)
            line(f"akira {label} (subprocess)", times, f"  {size / 1024:.0f} KiB out")
        for label, extra in (("loop status", []), ("loop status --json", ["--json"])):
            line(f"akira {label} (in-process)", time_in_process(root, extra, args.repeat))
        line("python -c 'import akira_cli.cli' (start-up)", time_import(args.repeat))
        profiles = []
        if args.profile:
            for label, extra in (("loop status", []), ("loop status --json", ["--json"])):
                profiler = cProfile.Profile()
                time_in_process(root, extra, 1, profiler)
                profiles.append((f"one in-process `akira {label}`", profiler))
        for lock in locks:
            lock.release()  # type: ignore[attr-defined]
    worst = max(results.values())
    verdict = "PASS" if worst < TARGET_SECONDS else "FAIL"
    print(f"target: < {TARGET_SECONDS:.0f} s as a subprocess; slowest median {worst:.3f} s: {verdict}")
    for what, profiler in profiles:
        print_profile(profiler, args.profile, what)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("COLUMNS", "120")
    sys.exit(main())
