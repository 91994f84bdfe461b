"""Start-up: `akira --help` and `akira loop status` against the floor of any Typer CLI.

    .venv/bin/python benchmarks/startup.py [--runs 15]

The floor is a one-command Typer app (written to a temp folder) run with the same interpreter:
its `--help`, and its plain run (the command prints one line). akira's `--help` is compared with
the first, `akira loop status` (in a workspace holding three finished loops and one paused) with
the second. Every command is run `--runs` times, interleaved, and the medians are compared.
Target (flat cost): ratio <= 1.5 for both.

Both run with their modules' bytecode cached, as an installed tool runs: pip compiles a
package's bytecode when it installs it, and a first run writes what is missing. Where
PYTHONDONTWRITEBYTECODE is set (as on the VM these figures come from), an editable akira would
otherwise compile its own modules from source on every run while the Typer app's dependencies
come compiled; so the commands run with a bytecode cache of their own (PYTHONPYCACHEPREFIX, in
the temp folder), filled by the warm-up run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import akira_command, init_workspace, median, temp_dir, write_task

TARGET_RATIO = 1.5
TYPER_APP = """\
import typer

app = typer.Typer()


@app.command()
def main() -> None:
    \"\"\"Print one line.\"\"\"
    print("ok")


app()
"""


def timed(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    took = time.perf_counter() - started
    if done.returncode not in (0, 3):
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return took


def workspace_with_loops(root: Path) -> None:
    """Three completed loops and one paused (a step that fails), as a person's workspace has."""
    init_workspace(root)
    for name in ("one", "two", "three"):
        write_task(root, name, 3, "true")
        run = [*akira_command(), "loop", "start", "--root", str(root), "--task", f"Specs/{name}/tasks.md"]
        subprocess.run([*run, "--no-wait"], check=True, capture_output=True)
    write_task(root, "stuck", 1, "exit 1")
    run = [*akira_command(), "loop", "start", "--root", str(root), "--task", "Specs/stuck/tasks.md"]
    subprocess.run([*run, "--no-wait"], capture_output=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with temp_dir("akira-bench-startup-") as parent:
        app = parent / "one_command.py"
        app.write_text(TYPER_APP)
        root = parent / "ws"
        workspace_with_loops(root)
        commands = {
            "typer app --help": [sys.executable, str(app), "--help"],
            "akira --help": [*akira_command(), "--help"],
            "typer app (plain run)": [sys.executable, str(app)],
            "akira loop status": [*akira_command(), "loop", "status"],
        }
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(parent / "pycache")
        times: dict[str, list[float]] = {name: [] for name in commands}
        for command in commands.values():  # warm the file cache and the bytecode cache once
            timed(command, root, env)
        for _ in range(args.runs):
            for name, command in commands.items():
                times[name].append(timed(command, root, env))
    print(f"start-up, median of {args.runs} interleaved runs, python {sys.version.split()[0]}")
    for name, values in times.items():
        print(f"  {name:<24} {1000 * median(values):7.1f} ms   (min {1000 * min(values):.1f})")
    verdicts = []
    for ours, floor in (("akira --help", "typer app --help"), ("akira loop status", "typer app (plain run)")):
        ratio = median(times[ours]) / median(times[floor])
        verdicts.append(ratio <= TARGET_RATIO)
        print(f"  ratio {ours} / {floor}: {ratio:.2f}  (target <= {TARGET_RATIO})")
    print(f"  verdict: {'PASS' if all(verdicts) else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
