"""`akira web`: how long the page of a run with 2,000 iterations takes to render.

    .venv/bin/python benchmarks/web_page.py [--steps 2000] [--repeat 5]

Runs a real loop of `--steps` one-iteration steps (each `Run: true`, unsandboxed, no git), then
times, median of `--repeat`: the run page rendered in-process (the run API's reads, the event
log read once from offset 0, the timeline, the chart and the HTML), the runs page, and the run
page fetched over HTTP from a real `akira web` process (the door, uvicorn and the transfer
too). Prints the figures and the page's size. Target: the run page under 1 s.
"""

from __future__ import annotations

import argparse
import http.client
import re
import subprocess
import sys
import time
from pathlib import Path

from _common import akira_command, init_workspace, median, ms, temp_dir, write_task

TARGET_SECONDS = 1.0


def timed(action: object, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = action()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return median(times), result


def over_http(root: Path, task_id: str, repeat: int) -> tuple[float, int]:
    process = subprocess.Popen(
        [*akira_command(), "web", "--root", str(root), "--http", "127.0.0.1:0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=(\S+)", line)
        if not found:
            raise SystemExit(f"akira web printed no URL: {line!r}")
        port, token = int(found.group(1)), found.group(2)

        def fetch() -> int:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            try:
                headers = {"Host": f"127.0.0.1:{port}", "X-Akira-Token": token}
                connection.request("GET", f"/run/{task_id}", headers=headers)
                response = connection.getresponse()
                body = response.read()
                if response.status != 200:
                    raise SystemExit(f"GET /run/{task_id}: {response.status} {body[:300]!r}")
                return len(body)
            finally:
                connection.close()

        took, size = timed(fetch, repeat)
        return took, int(size)  # type: ignore[call-overload]
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with temp_dir("akira-bench-web-") as parent:
        root = parent / "ws"
        init_workspace(root)
        write_task(root, "night", args.steps, "true")
        started = time.perf_counter()
        done = subprocess.run(
            [
                *akira_command(),
                *("loop", "start", "--root", str(root), "--task", "Specs/night/tasks.md"),
                *("--no-wait", "--no-git", "--max-iterations", str(args.steps + 10)),
            ],
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        if done.returncode != 0:
            raise SystemExit(f"akira exited {done.returncode}: {done.stderr.decode()[-800:]}")
        print(f"the run: {args.steps} iterations in {time.perf_counter() - started:.1f} s")
        from akira_cli import api
        from akira_cli.web.run_page import run_page
        from akira_cli.web.runs import runs_page

        [loop] = api.status(root).loops  # type: ignore[union-attr]
        log = root / ".state" / "logs" / f"{loop.task_id}.jsonl"
        print(f"its event log: {log.stat().st_size / 1e6:.1f} MB, {loop.iteration} iterations")
        page_took, page = timed(lambda: run_page(root, loop.task_id, "t" * 32), args.repeat)
        runs_took, _ = timed(lambda: runs_page(root), args.repeat)
        http_took, size = over_http(root, loop.task_id, args.repeat)
        print(f"run page, in-process:  {ms(page_took)} ({len(str(page)) / 1e3:.0f} kB of HTML)")
        print(f"runs page, in-process: {ms(runs_took)}")
        print(f"run page, over HTTP:   {ms(http_took)} ({size / 1e3:.0f} kB)")
        worst = max(page_took, http_took)
        verdict = "PASS" if worst < TARGET_SECONDS else "FAIL"
        said = f"the run page of {loop.iteration} iterations in {ms(worst)}"
        print(f"{verdict}: {said} (target < {ms(TARGET_SECONDS)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
