"""The sandbox's cost (SPEC 15): akira on N sandboxed `- Run: \\`true\\`` steps versus a bare
durable loop that starts each `true` under the same `bwrap` command line.

    .venv/bin/python benchmarks/sandbox_cost.py [--steps 1000] [--repeat 1]

akira runs in-process (`akira_cli.cli.main`, interpreter start-up not counted) with the
default `sandbox.mode: auto` and `network: allow`, so every step's command goes through bwrap
and the run's proxy. The bare loop asks the same `Sandbox` for each command's `bwrap` command
line (the same flags, the same proxy socket bound in, the same forwarder in front of `bash -c
true`), starts it, and after each makes SPEC 11's durable save of a small JSON state. Target:
ratio <= 1.5. Also printed, to show where the time goes: the same bare loop with bwrap's flags
but without the forwarder (what `network: none` or `all` costs), plain `bash -c true`, and the
bare loop's saves alone (SPEC 11's temp file, fsync, rename, fsync of the folder; akira's own
save is one fdatasync of its save log, so akira can come out cheaper than the bare loop). The
runs alternate (bare, then akira) and the ratio is the median of each pair's.
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
from loop_overhead import fresh_workspace, run_in_process, save_small_state

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
    """SPEC 11's durable save (temp file, fsync, rename, fsync of the folder) without a command:
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

    import akira_cli.loop.session  # noqa: F401 (imported before any timing)
    from akira_cli.cli import main as _
    from akira_cli.config import Config
    from akira_cli.sandbox.probe import probe
    from akira_cli.sandbox.session import open_sandbox

    found = probe(Config().sandbox)
    if not found.ok:
        raise SystemExit(f"no sandbox here: {found.line()}")
    akira, bare, flags_only, plain, saves = [], [], [], [], []
    with temp_dir("akira-bench-sandbox-") as parent:
        shape = fresh_workspace(parent, "shape", 1)
        config = Config()
        config.sandbox.network = args.network
        with open_sandbox(config, shape, shape, lambda: None, lambda *_: None) as sandbox:
            assert sandbox is not None
            argv, env = sandbox.wrap(["bash", "-c", "true"], shape, dict(os.environ))
            unproxied, _ = dataclasses.replace(sandbox, proxy=None).wrap(["bash", "-c", "true"], shape, env)
            for k in range(args.repeat):
                bare.append(bare_loop(steps, shape, argv, env))
                root = workspace(parent, f"akira{k}", steps, args.network)
                akira.append(run_in_process(root, steps))
                assert was_sandboxed(root), "the akira run was not sandboxed: its figure would mean nothing"
                flags_only.append(bare_loop(steps, shape, unproxied, env))
                plain.append(bare_loop(steps, shape, ["bash", "-c", "true"], env))
                saves.append(saves_alone(steps, shape))

    def line(label: str, values: list[float]) -> None:
        med = median(values)
        print(f"  {label:<52} {med:7.3f} s  {1000 * med / steps:6.2f} ms/step")

    print(
        f"sandbox cost: {steps} steps of `- Run: \\`true\\``, network: {args.network}, {args.repeat} pair(s)"
    )
    print(f"bwrap {found.bwrap}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPU(s)")
    line("bare loop: same bwrap command line + durable save", bare)
    line("akira loop start, sandboxed (in-process)", akira)
    line("bare loop: bwrap flags, no proxy forwarder", flags_only)
    line("bare loop: bash -c true, no sandbox", plain)
    line("the bare loop's durable saves alone", saves)
    pairs = [a / b for a, b in zip(akira, bare, strict=True)]
    ratio = median(pairs)
    print(f"  ratio akira sandboxed / bare loop under the same bwrap: {ratio:.2f} (target <= {TARGET_RATIO})")
    print(f"  akira's own cost per step: {1000 * (median(akira) - median(bare)) / steps:.2f} ms")
    print(f"  the forwarder's cost per step: {1000 * (median(bare) - median(flags_only)) / steps:.2f} ms")
    print(f"  bwrap's cost per step: {1000 * (median(flags_only) - median(plain)) / steps:.2f} ms")
    print(f"  verdict: {'PASS' if ratio <= TARGET_RATIO else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
