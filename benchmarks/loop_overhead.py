"""Loop overhead: akira on N steps of `- Run: \\`true\\`` versus a bare crash-safe loop.

    .venv/bin/python benchmarks/loop_overhead.py [--steps 1000] [--repeat 3] [--profile 25]

Times `akira loop start --no-wait` in-process (`akira_cli.cli.main([...])`, so interpreter
start-up and imports are not counted) and as a subprocess, against the floor of any crash-safe
loop: a bare Python loop that runs the same N `subprocess.run(["bash", "-c", "true"])` and,
after each, saves a small JSON state the way docs/guarantees.md promises (temp file, fsync,
`os.replace`, fsync of the folder). Target (flat cost): ratio <= 1.5.

The runs alternate (bare loop, then akira, then the next pair), and the ratio is the median of
each pair's akira/bare: this VM's speed drifts by 10-30% over minutes, and a pair shares it.
The ratio of the median times is printed too.

Also printed: the spawn alone (no save), and a "matched" loop that spawns like akira's runner
(new session, piped output, merged env), to separate the spawn flags from akira's bookkeeping.

--profile N runs one extra in-process loop under cProfile and prints the top N akira_cli
functions by cumulative time, with their share of the whole run.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import (
    akira_command,
    init_workspace,
    median,
    print_profile,
    quiet,
    temp_dir,
    write_task,
)

TARGET_RATIO = 1.5


def start_args(root: Path, steps: int) -> list[str]:
    return [
        "loop",
        "start",
        "--root",
        str(root),
        "--task",
        "Specs/bench/tasks.md",
        "--no-wait",
        "--max-iterations",
        str(steps + 10),
    ]


def fresh_workspace(parent: Path, name: str, steps: int) -> Path:
    root = parent / name
    init_workspace(root)
    write_task(root, "bench", steps, "true")
    return root


def check_done(root: Path, code: int, steps: int) -> None:
    done = root / "Done" / "bench" / "tasks.md"
    if code != 0 or not done.is_file() or done.read_text().count("- [x]") != steps:
        from akira_cli.state.store import StateStore

        reasons = [state.stop_reason for _, state in StateStore(root / ".state").scan() if state is not None]
        why = f": {reasons[0]}" if reasons and reasons[0] else ""
        raise SystemExit(f"akira run in {root} did not complete all {steps} steps (exit {code}){why}")


def run_in_process(root: Path, steps: int, profiler: cProfile.Profile | None = None) -> float:
    from akira_cli.cli import main

    args = start_args(root, steps)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        with quiet():
            started = time.perf_counter()
            code = profiler.runcall(main, args) if profiler is not None else main(args)
            took = time.perf_counter() - started
    finally:
        os.chdir(cwd)
    check_done(root, code, steps)
    return took


def warm_up(root: Path) -> None:
    """A short run before any timing: it imports what a run imports lazily (the loop, its
    agents, the sandbox's and the reviewer's modules), so that no timed run counts an import."""
    run_in_process(root, 3)


def run_subprocess(root: Path, steps: int) -> float:
    started = time.perf_counter()
    code = subprocess.run(
        [*akira_command(), *start_args(root, steps)],
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ).returncode
    took = time.perf_counter() - started
    check_done(root, code, steps)
    return took


def run_spawn_only(steps: int, cwd: Path) -> float:
    started = time.perf_counter()
    for _ in range(steps):
        subprocess.run(["bash", "-c", "true"], cwd=cwd, check=True)
    return time.perf_counter() - started


def save_small_state(folder: Path, state: dict[str, object]) -> None:
    """The durable write: temp file, fsync, os.replace, fsync of the folder."""
    tmp = folder / "state.json.tmp"
    with open(tmp, "w") as handle:
        json.dump(state, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, folder / "state.json")
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def run_plain(steps: int, cwd: Path) -> float:
    """The bare crash-safe loop: spawn, then one durable save of a small state."""
    folder = cwd / "bare-state"
    folder.mkdir(exist_ok=True)
    started = time.perf_counter()
    for step in range(steps):
        subprocess.run(["bash", "-c", "true"], cwd=cwd, check=True)
        save_small_state(folder, {"step": step + 1, "done": step + 1, "status": "running"})
    return time.perf_counter() - started


def run_matched(steps: int, cwd: Path) -> float:
    """Spawns the way akira's CommandRunner does, with none of akira's bookkeeping."""
    started = time.perf_counter()
    for _ in range(steps):
        env = {**os.environ, "AKIRA_TASK_ID": "x", "AKIRA_STEP_ID": "1", "AKIRA_ATTEMPT": "1"}
        process = subprocess.Popen(
            ["bash", "-c", "true"],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        process.communicate()  # with a timeout, it would poll with sleeps
    return time.perf_counter() - started


def run_without_fsync(root: Path, steps: int) -> float:
    """Diagnostic only: the same run with os.fsync and os.fdatasync (the save log's) made
    no-ops, to price durability."""
    real = os.fsync, os.fdatasync
    os.fsync = os.fdatasync = lambda fd: None
    try:
        return run_in_process(root, steps)
    finally:
        os.fsync, os.fdatasync = real


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each kind; median shown")
    parser.add_argument("--no-subprocess", action="store_true", help="skip the CLI subprocess")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="cProfile, top N")
    parser.add_argument(
        "--no-fsync-probe", action="store_true", help="also time one run without fsync or fdatasync"
    )
    args = parser.parse_args()
    steps, repeat = args.steps, args.repeat

    inproc, sub, plain, matched, spawn = [], [], [], [], []
    with temp_dir("akira-bench-overhead-") as parent:
        warm_up(fresh_workspace(parent, "warm-up", 3))
        for k in range(repeat):
            root = fresh_workspace(parent, f"inproc{k}", steps)
            plain.append(run_plain(steps, parent))  # a pair: the bare loop, then akira
            inproc.append(run_in_process(root, steps))
            spawn.append(run_spawn_only(steps, parent))
            matched.append(run_matched(steps, parent))
            if not args.no_subprocess:
                sub.append(run_subprocess(fresh_workspace(parent, f"sub{k}", steps), steps))
        no_fsync = None
        if args.no_fsync_probe:
            no_fsync = run_without_fsync(fresh_workspace(parent, "nofsync", steps), steps)
        profiler = None
        if args.profile:
            profiler = cProfile.Profile()
            run_in_process(fresh_workspace(parent, "profile", steps), steps, profiler)

    def line(label: str, values: list[float]) -> None:
        med = median(values)
        each = ", ".join(f"{v:.3f}" for v in values)
        print(f"  {label:<34} {med:7.3f} s  {1000 * med / steps:6.2f} ms/step   [{each}]")

    print(f"loop overhead: {steps} steps of `- Run: \\`true\\``, median of {repeat} run(s)")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPU(s)")
    line("bare loop: spawn + durable save", plain)
    line("spawn alone (no save)", spawn)
    line("matched Popen loop (akira's flags)", matched)
    line("akira loop start, in-process", inproc)
    if sub:
        line("akira loop start, subprocess CLI", sub)
    pairs = [a / b for a, b in zip(inproc, plain, strict=True)]
    ratio = median(pairs)
    overhead = (median(inproc) - median(plain)) / steps
    each = ", ".join(f"{r:.2f}" for r in pairs)
    print(f"  ratio akira(in-process)/bare loop, median of pairs: {ratio:.2f}  [{each}]")
    print(f"  (target <= {TARGET_RATIO})")
    print(f"  ratio of the median times: {median(inproc) / median(plain):.2f}")
    print(f"  ratio akira(in-process)/spawn alone: {median(inproc) / median(spawn):.2f}")
    print(f"  ratio akira(in-process)/matched: {median(inproc) / median(matched):.2f}")
    if sub:
        print(f"  ratio akira(subprocess CLI)/bare loop: {median(sub) / median(plain):.2f}")
        startup = median(sub) - median(inproc)
        noise = "  (negative: below run-to-run noise)" if startup < 0 else ""
        print(f"  CLI start-up + imports (subprocess - in-process): {startup:.3f} s{noise}")
    print(f"  akira overhead per step vs the bare loop: {1000 * overhead:.2f} ms")
    print(f"  verdict: {'PASS' if ratio <= TARGET_RATIO else 'FAIL'}")
    if no_fsync is not None:
        print(
            f"  probe, one in-process run with os.fsync and os.fdatasync no-ops: {no_fsync:.3f} s "
            f"({1000 * no_fsync / steps:.2f} ms/step, ratio {no_fsync / median(plain):.2f}); "
            "the difference is the price of durable saves"
        )
    if profiler is not None:
        print_profile(profiler, args.profile, "one in-process run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
