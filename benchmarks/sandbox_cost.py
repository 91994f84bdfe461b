"""The sandbox's cost (docs/sandbox.md): akira on N sandboxed `- Run: \\`true\\`` steps versus a bare
durable loop that starts each `true` under `bwrap --unshare-all`, bwrap alone.

    .venv/bin/python benchmarks/sandbox_cost.py [--steps 1000] [--repeat 1] [--network allow]

akira runs in-process (`akira_cli.cli.main`, interpreter start-up not counted) with
`sandbox.mode: on` and the default `network: allow`, so every step's command goes through bwrap
and reaches the run's proxy. The bare loop starts `bash -c true` under bwrap with the mounts
akira's sandbox makes (the same `Sandbox.flags()`, no proxy) and `--unshare-all` (a network
namespace of its own each time, nothing listening in it), and after each makes a durable
save of a small JSON state. Target: ratio <= 1.5. Also printed, to show where the time goes:
the bare loop with akira's own command line (the step's network room and bwrap, `netns.py`);
with the forwarder that runs in front of each command where rooms cannot be made; plain `bash
-c true`; and the bare loop's saves alone (a durable save's temp file, fsync, rename, fsync of the
folder; akira's own save is one fdatasync of its save log, so akira can come out cheaper than
the bare loop). The runs alternate (bare, then akira) and the ratio is the median of each pair's.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import median, temp_dir
from loop_overhead import fresh_workspace, run_in_process, save_small_state, warm_up

TARGET_RATIO = 1.5


def bare_loop(steps: int, cwd: Path, argv: list[str], env: dict[str, str]) -> float:
    folder = cwd / "bare-state"
    folder.mkdir(exist_ok=True)
    started = time.perf_counter()
    for step in range(steps):
        subprocess.run(argv, cwd=cwd, env=env, check=True, stdin=subprocess.DEVNULL, start_new_session=True)
        save_small_state(folder, {"step": step + 1, "done": step + 1, "status": "running"})
    return time.perf_counter() - started


def workspace(parent: Path, name: str, steps: int, network: str) -> Path:
    root = fresh_workspace(parent, name, steps)  # unsandboxed, as the loop's own benchmarks run
    config = root / "config" / "autonomous_loop.yaml"
    text = config.read_text().replace("network: allow", f"network: {network}", 1)
    config.write_text(text.replace("\n  mode: off", "\n  mode: on", 1))  # refused, never unconfined
    return root


def was_sandboxed(root: Path) -> bool:
    from akira_cli.state.store import StateStore

    states = [state for _, state in StateStore(root / ".state").scan() if state is not None]
    return bool(states) and all(state.sandboxed for state in states)


def saves_alone(steps: int, cwd: Path) -> float:
    """A durable save (temp file, fsync, rename, fsync of the folder) without a command:
    what the bare loop pays per step besides the start (akira's save is one fdatasync)."""
    folder = cwd / "save-state"
    folder.mkdir(exist_ok=True)
    started = time.perf_counter()
    for step in range(steps):
        save_small_state(folder, {"step": step + 1, "done": step + 1, "status": "running"})
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1, help="pairs of runs; medians shown")
    parser.add_argument("--network", choices=["allow", "none"], default="allow", help="sandbox.network")
    args = parser.parse_args()
    steps = args.steps

    from akira_cli.config import Config
    from akira_cli.sandbox.probe import probe
    from akira_cli.sandbox.session import open_sandbox

    found = probe(Config().sandbox)
    if not found.ok:
        raise SystemExit(f"no sandbox here: {found.line()}")
    akira, bare, same, forwarded, plain, saves = [], [], [], [], [], []
    with temp_dir("akira-bench-sandbox-") as parent:
        warm_up(workspace(parent, "warm-up", 3, args.network))
        shape = fresh_workspace(parent, "shape", 1)
        config = Config()
        config.sandbox.network = args.network
        with open_sandbox(config, shape, shape, lambda: None, lambda *_: None) as sandbox:
            assert sandbox is not None
            true = ["bash", "-c", "true"]
            argv, env = sandbox.wrap(true, shape, dict(os.environ))
            alone = dataclasses.replace(sandbox, proxy=None)
            unshared = [
                found.bwrap or "",
                *alone.flags(),
                "--unshare-all",
                "--chdir",
                str(shape),
                "--",
                *true,
            ]
            proxy = sandbox.proxy
            forwarder = None
            if proxy is not None:  # the fallback: no room, a forwarder in front of each command
                without = dataclasses.replace(sandbox, proxy=dataclasses.replace(proxy, rooms=None))
                forwarder = without.wrap(true, shape, env)[0]
            for k in range(args.repeat):
                bare.append(bare_loop(steps, shape, unshared, env))
                root = workspace(parent, f"akira{k}", steps, args.network)
                akira.append(run_in_process(root, steps))
                assert was_sandboxed(root), "the akira run was not sandboxed: its figure would mean nothing"
                same.append(bare_loop(steps, shape, argv, env))
                if forwarder is not None:
                    forwarded.append(bare_loop(steps, shape, forwarder, env))
                plain.append(bare_loop(steps, shape, true, env))
                saves.append(saves_alone(steps, shape))

    def line(label: str, values: list[float]) -> None:
        med = median(values)
        print(f"  {label:<52} {med:7.3f} s  {1000 * med / steps:6.2f} ms/step")

    print(
        f"sandbox cost: {steps} steps of `- Run: \\`true\\``, network: {args.network}, {args.repeat} pair(s)"
    )
    print(f"bwrap {found.bwrap}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPU(s)")
    line("bare loop: bwrap --unshare-all + durable save", bare)
    line("akira loop start, sandboxed (in-process)", akira)
    line("bare loop: akira's command line for a step", same)
    if forwarded:
        line("bare loop: the forwarder's command line (fallback)", forwarded)
    line("bare loop: bash -c true, no sandbox", plain)
    line("the bare loop's durable saves alone", saves)
    pairs = [a / b for a, b in zip(akira, bare, strict=True)]
    ratio = median(pairs)
    print(f"  ratio akira sandboxed / bare loop under bwrap --unshare-all: {ratio:.2f} (<= {TARGET_RATIO})")
    print(f"  akira's own cost per step: {1000 * (median(akira) - median(same)) / steps:.2f} ms")
    over = 1000 * (median(same) - median(bare)) / steps
    print(f"  a step's command line over bwrap --unshare-all: {over:.2f} ms")
    if forwarded:
        print(f"  the forwarder's cost per step: {1000 * (median(forwarded) - median(bare)) / steps:.2f} ms")
    print(f"  bwrap --unshare-all's cost per step: {1000 * (median(bare) - median(plain)) / steps:.2f} ms")
    print(f"  verdict: {'PASS' if ratio <= TARGET_RATIO else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
