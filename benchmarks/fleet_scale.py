"""The fleet's drain time and the queue's own cost, on SQLite and on Postgres.

    .venv/bin/python benchmarks/fleet_scale.py [--runs 40] [--steps 5] [--workers 1,2,4] [--no-postgres]

40 task files of 5 steps (`Run: true`, `Verify: true`) are added to the queue, then 1, 2 and 4
worker processes on this machine drain it. Printed per database and worker count: the wall time
from the workers' start to the last run completed, the loops' own time (each run's
`akira loop start`, start to exit), and the queue's cost per run: worker-seconds not spent in a
loop (clone, dequeue, heartbeats, progress, the workers' own start), divided by the runs.
Postgres runs when `initdb` is on PATH (as `nobody` when run as root).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from _common import akira_command, init_workspace, temp_dir


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def origin(root: Path, runs: int, steps: int) -> list[Path]:
    init_workspace(root)
    git(root, "init", "-q", "-b", "main")
    tasks = []
    for n in range(runs):
        path = root / "Specs" / f"f{n}" / "tasks.md"
        path.parent.mkdir(parents=True)
        path.write_text(
            "".join(
                f"- [ ] {s}. Step {s}\n  - Run: `true`\n  - Verify: `true`\n" for s in range(1, steps + 1)
            )
        )
        tasks.append(path)
    git(root, "add", "-A")
    git(root, "-c", "user.name=B", "-c", "user.email=b@e.x", "commit", "-q", "-m", "base")
    return tasks


def fleet(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*akira_command(), "fleet", *args, "--database-url", url], capture_output=True, text=True
    )


def loop_seconds(url: str) -> float:
    """The loops' own time: each run's `akira loop start`, start to exit, as its worker measured it."""
    from akira_cli.fleet.database import Tables

    tables = Tables(url)
    try:
        return sum(row["loop_seconds"] or 0.0 for row in tables.progress().values())
    finally:
        tables.close()


def drain(url: str, tasks: list[Path], workers: int, work: Path) -> tuple[float, float]:
    for task in tasks:
        added = fleet(url, "add", "--task", str(task))
        if added.returncode != 0:
            raise SystemExit(added.stderr)
    started = time.perf_counter()
    command = [*akira_command(), "fleet", "worker", "--database-url", url, "--work-dir", str(work)]
    processes = [
        subprocess.Popen(
            [*command, "--name", f"bench-{n}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for n in range(workers)
    ]
    try:
        while True:
            rows = json.loads(fleet(url, "status", "--json").stdout or "[]")
            if rows and all(row["status"] != "queued" and row["status"] != "running" for row in rows):
                break
            time.sleep(0.5)
        wall = time.perf_counter() - started
        failed = [row["run_id"] for row in rows if row["status"] != "completed"]
        if failed:
            raise SystemExit(f"runs that did not complete: {failed}")
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=60)
    return wall, loop_seconds(url)


def postgres_cluster(folder: Path) -> tuple[str, list[str], Path] | None:
    if shutil.which("initdb") is None:
        return None
    as_user = ["runuser", "-u", "nobody", "--"] if os.geteuid() == 0 else []
    folder.mkdir(mode=0o777)
    (folder / "pw").write_text("bench-pw")
    if as_user:
        shutil.chown(folder, "nobody")
        shutil.chown(folder / "pw", "nobody")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data = folder / "data"
    subprocess.run(
        [*as_user, "initdb", "-D", str(data), "-U", "akira", f"--pwfile={folder / 'pw'}"],
        check=True,
        capture_output=True,
    )
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1"
    subprocess.run(
        [*as_user, "pg_ctl", "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "start"],
        check=True,
        capture_output=True,
    )
    return f"postgresql://akira:bench-pw@127.0.0.1:{port}/fleet", as_user, data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--no-postgres", action="store_true")
    options = parser.parse_args()
    counts = [int(n) for n in options.workers.split(",")]
    print(f"{options.runs} runs of {options.steps} steps; {os.cpu_count()} cores")
    for database in ("sqlite", "postgres"):
        walls = {}
        for workers in counts:
            with temp_dir("akira-fleet-bench-") as root:
                tasks = origin(root / "origin", options.runs, options.steps)
                cluster = None
                if database == "sqlite":
                    url = f"sqlite:///{root / 'fleet.sqlite'}"
                else:
                    cluster = (
                        None
                        if options.no_postgres
                        else postgres_cluster(Path(f"/tmp/akira-pg-bench-{os.getpid()}-{workers}"))
                    )
                    if cluster is None:
                        print("postgres: skipped (no initdb on PATH, or --no-postgres)")
                        break
                    url = cluster[0]
                try:
                    wall, loops = drain(url, tasks, workers, root / "work")
                finally:
                    if cluster is not None:
                        subprocess.run(
                            [*cluster[1], "pg_ctl", "-D", str(cluster[2]), "-m", "immediate", "stop"],
                            capture_output=True,
                        )
                        shutil.rmtree(cluster[2].parent, ignore_errors=True)
            walls[workers] = wall
            queue = (wall * workers - loops) / options.runs
            print(
                f"{database:8} {workers} worker(s): drained in {wall:6.1f} s; loops {loops:6.1f} s in all; "
                f"queue cost {queue:5.2f} s a run"
            )
        if len(walls) == len(counts) and 1 in walls and max(counts) in walls:
            print(f"{database:8} speed-up {max(counts)} workers / 1: {walls[1] / walls[max(counts)]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
