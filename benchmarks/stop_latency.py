"""Stop-hook latency: time from creating the stop hook to the state file saying "paused".

    .venv/bin/python benchmarks/stop_latency.py [--trials 20] [--steps 100] [--sleep 0.05]

Each trial makes a fresh workspace with a task of `- Run: \\`sleep 0.05\\`` steps and starts
`akira loop start --no-wait` in a subprocess. When the state file shows a new completed step
(polled), the loop is between actions: the hook `.hooks/stop_autonomous_loop_<id>.md` is
created at that moment, and the state file is polled every 5 ms until `"status": "paused"`.
The latency includes finishing the step in flight (at most one `sleep`, 50 ms) since a
running command is never killed by a stop hook. Target (docs/guarantees.md): median < 1 s.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import akira_command, init_workspace, median, temp_dir, write_task

TARGET_SECONDS = 1.0
POLL = 0.005
TRIAL_TIMEOUT = 15.0


def read_state(state_dir: Path) -> tuple[Path, dict[str, Any]] | None:
    for path in state_dir.glob("autonomous_loop_*.json"):
        try:
            return path, json.loads(path.read_bytes())
        except (OSError, ValueError):  # replaced between glob and read; poll again
            return None
    return None


def wait_for(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(POLL)
    raise TimeoutError(what)


def trial(root: Path, steps: int, sleep: float) -> dict[str, Any]:
    init_workspace(root)
    write_task(root, "bench", steps, f"sleep {sleep}")
    state_dir = root / ".state"
    command = [*akira_command(), "loop", "start", "--root", str(root)]
    command += ["--task", "Specs/bench/tasks.md", "--no-wait", "--max-iterations", str(steps + 10)]
    process = subprocess.Popen(
        command,
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        # Let the loop settle into its rhythm: wait for one completed step, then for the next.
        _, first = wait_for(
            lambda: (s := read_state(state_dir)) and s[1]["completed_steps"] and s,
            TRIAL_TIMEOUT,
            "no step completed",
        )
        seen = len(first["completed_steps"])
        path, state = wait_for(
            lambda: (s := read_state(state_dir)) and len(s[1]["completed_steps"]) > seen and s,
            TRIAL_TIMEOUT,
            "no new step completed",
        )
        hook = root / ".hooks" / f"stop_autonomous_loop_{state['task_id']}.md"
        created = time.perf_counter()
        hook.write_text("---\nreason: benchmark\n---\nStopped by stop_latency.py\n")
        done_at_hook = len(state["completed_steps"])

        def paused() -> dict[str, Any] | None:
            try:
                data = json.loads(path.read_bytes())
            except (OSError, ValueError):
                return None
            return data if data.get("status") == "paused" else None

        final = wait_for(paused, TRIAL_TIMEOUT, "never paused")
        latency = time.perf_counter() - created
        code = process.wait(timeout=TRIAL_TIMEOUT)
        exited = time.perf_counter() - created
        return {
            "latency": latency,
            "exit_latency": exited,
            "exit_code": code,
            "steps_after_hook": len(final["completed_steps"]) - done_at_hook,
            "hook_flag": final["stop_conditions"].get("stop_hook_triggered", False),
            "interrupted": sum(
                attempt.get("outcome") == "interrupted"
                for record in final.get("steps", {}).values()
                for attempt in record.get("attempts", [])
            ),
        }
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--steps", type=int, default=100, help="steps in the task (> 3)")
    parser.add_argument("--sleep", type=float, default=0.05, help="seconds each step sleeps")
    args = parser.parse_args()

    print(
        f"stop latency: hook created right after a step completes; {args.trials} trials, "
        f"steps of `sleep {args.sleep}`"
    )
    print(
        f"note: each latency includes finishing the step in flight (<= {args.sleep * 1000:.0f} ms;"
        " a running command is never killed by a hook) and the 5 ms polling resolution"
    )
    results, failures = [], 0
    with temp_dir("akira-bench-stop-") as parent:
        for number in range(1, args.trials + 1):
            try:
                result = trial(parent / f"ws{number}", args.steps, args.sleep)
            except (TimeoutError, subprocess.TimeoutExpired) as exc:
                failures += 1
                print(f"  trial {number:2d}: FAILED ({exc})")
                continue
            results.append(result)
            print(
                f"  trial {number:2d}: paused after {result['latency'] * 1000:7.1f} ms, "
                f"process exited after {result['exit_latency'] * 1000:7.1f} ms "
                f"(exit {result['exit_code']}, {result['steps_after_hook']} step(s) finished "
                f"after the hook, {result['interrupted']} interrupted, "
                f"stop_hook_triggered={result['hook_flag']})"
            )
    if not results:
        print("no trial succeeded")
        return 1
    latencies = [r["latency"] for r in results]
    med = median(latencies)
    print(
        f"median {med * 1000:.1f} ms, min {min(latencies) * 1000:.1f} ms, "
        f"max {max(latencies) * 1000:.1f} ms over {len(results)} trial(s), {failures} failed"
    )
    print(f"median to process exit: {median([r['exit_latency'] for r in results]) * 1000:.1f} ms")
    bad_exit = sum(1 for r in results if r["exit_code"] != 3)
    if bad_exit:
        print(f"warning: {bad_exit} trial(s) did not exit 3 (paused, --no-wait)")
    killed = sum(r["interrupted"] for r in results)
    if killed:
        print(f"warning: {killed} attempt(s) were interrupted; a hook must let the step finish")
    ok = med < TARGET_SECONDS and not failures
    print(f"target: median < {TARGET_SECONDS:.0f} s; verdict: {'PASS' if ok else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
