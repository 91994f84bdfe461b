"""A long run: 10,000 iterations of a cheap step, and whether the last cost what the first did.

    .venv/bin/python benchmarks/long_run.py [--steps 10000] [--window 500]

Runs `akira loop start --no-wait` as a subprocess on one task file of N steps, each
`- Run: \\`true\\``, so every iteration is one cheap step. The time of each iteration comes from
the event log (the `iteration_started` events, millisecond stamps); the mean of the last
`--window` iterations is compared with the mean of the first. While the run goes, the script
samples the process's resident memory (/proc) and the state file's size. The RSS peaks are
those of the first and the last fifth of the iterations (by the event log's stamps): the end of
the run is left out, because its completion report reads the whole history (it is written once,
and its memory grows with the run; a sample every 0.25 s may or may not fall in it).
Target (flat cost): last/first <= 1.2, with the state file and the events bounded and the RSS flat.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from _common import akira_command, init_workspace, temp_dir, write_task

TARGET_RATIO = 1.2


def rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def stamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--window", type=int, default=500)
    args = parser.parse_args()
    steps, window = args.steps, args.window
    with temp_dir("akira-bench-long-") as parent:
        root = parent / "ws"
        init_workspace(root)
        write_task(root, "long", steps, "true")
        command = [*akira_command(), "loop", "start", "--root", str(root), "--task", "Specs/long/tasks.md"]
        command += ["--no-wait", "--max-iterations", str(steps + 10)]
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        samples: list[tuple[float, int]] = []  # (Unix time, RSS KiB): set against the event log
        state_sizes: list[int] = []
        while process.poll() is None:
            if (kib := rss_kib(process.pid)) is not None:
                samples.append((time.time(), kib))
            state_sizes += [p.stat().st_size for p in (root / ".state").glob("autonomous_loop_*.json")]
            time.sleep(0.25)
        took = time.perf_counter() - started
        if process.returncode != 0:
            raise SystemExit(f"akira exited {process.returncode}: {process.stderr.read().decode()[-800:]}")
        [log] = (root / ".state" / "logs").glob("*.jsonl")
        [journal] = (root / ".state" / "history").glob("*.jsonl")
        [archived] = (root / ".state" / "archive").glob("autonomous_loop_*.json")
        events = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        journal_bytes = journal.stat().st_size
        final_state = archived.stat().st_size
        done = json.loads(archived.read_text())
    starts = [stamp(e["ts"]) for e in events if e["type"] == "iteration_started"]
    if len(starts) < 2 * window + 1:
        raise SystemExit(f"only {len(starts)} iterations logged; need more than {2 * window}")
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    first = sum(gaps[:window]) / window
    last = sum(gaps[-window:]) / window
    sizes = [len(json.dumps(e)) for e in events]
    fifth = (starts[-1] - starts[0]) / 5

    def peak(low: float, high: float) -> float:
        return max([kib for at, kib in samples if low <= at < high] or [0]) / 1024

    early, late = peak(starts[0], starts[0] + fifth), peak(starts[-1] - fifth, starts[-1])
    completed = done["history"]["completed_sealed"] + len(done["completed_steps"])
    largest = max(state_sizes, default=0) / 1024
    print(f"long run: {steps} steps of `- Run: \\`true\\``, one process, {took:.1f} s in all")
    print(f"  iterations logged: {len(starts)}; completed steps: {completed}")
    print(f"  first {window} iterations: {1000 * first:.2f} ms each; last {window}: {1000 * last:.2f} ms")
    print(f"  ratio last/first: {last / first:.2f}  (target <= {TARGET_RATIO})")
    print(f"  state file: at most {largest:.1f} KiB during the run, {final_state / 1024:.1f} KiB at the end")
    mean = sum(sizes) / len(sizes)
    print(f"  event log: {len(events)} events, {mean:.0f} bytes each on average, largest {max(sizes)}")
    print(f"  journal: {journal_bytes / 1024:.0f} KiB ({journal_bytes / steps:.0f} bytes per iteration)")
    print(f"  peak RSS: {early:.1f} MiB in the first fifth of the iterations, {late:.1f} MiB in the last")
    print(f"  verdict: {'PASS' if last / first <= TARGET_RATIO else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
