"""Helpers shared by the benchmark scripts: temp workspaces, task files, quiet in-process runs."""

from __future__ import annotations

import contextlib
import cProfile
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as `python benchmarks/x.py` from anywhere
    sys.path.insert(0, str(REPO))


def akira_command() -> list[str]:
    """The `akira` console script next to this interpreter, else `python -m akira_cli`."""
    script = Path(sys.executable).with_name("akira")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "akira_cli"]


@contextlib.contextmanager
def temp_dir(prefix: str) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Sends fds 1 and 2 to /dev/null (so akira's display is plain lines nobody reads)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)


def init_workspace(root: Path, sandboxed: bool = False) -> None:
    """`akira init ROOT` in a subprocess (keeps the in-process timings free of init work).

    Unsandboxed unless asked: these benchmarks measure the loop's own cost against bare loops
    that start no `bwrap`; the sandbox's cost is `sandbox_cost.py`'s, against a bare loop that
    starts each command under the same `bwrap` flags (docs/sandbox.md)."""
    subprocess.run(
        [*akira_command(), "init", str(root)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if not sandboxed:
        config = root / "config" / "autonomous_loop.yaml"
        text = config.read_text(encoding="utf-8")
        head, sep, tail = text.partition("\nsandbox:")
        assert sep and "\n  mode: auto" in tail, "the template's sandbox section moved"
        config.write_text(head + sep + tail.replace("\n  mode: auto", "\n  mode: off", 1), encoding="utf-8")


def write_task(root: Path, feature: str, steps: int, command: str) -> Path:
    """A flat Kiro task file: `- [ ] N. step N` with one `Run:` each."""
    folder = root / "Specs" / feature
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["# Implementation Plan", ""]
    for number in range(1, steps + 1):
        lines += [f"- [ ] {number}. step {number}", f"  - Run: `{command}`"]
    path = folder / "tasks.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def median(values: list[float]) -> float:
    return statistics.median(values)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def print_profile(profiler: cProfile.Profile, top: int, what: str) -> None:
    """Top akira_cli functions by cumulative time, then the top leaves anywhere by own time."""
    stats = pstats.Stats(profiler)
    total = stats.total_tt  # type: ignore[attr-defined]
    package = str(REPO / "akira_cli")
    rows = []
    for (filename, line, name), entry in stats.stats.items():  # type: ignore[attr-defined]
        _, ncalls, tottime, cumtime, _ = entry
        if filename.startswith(package):
            where = f"{Path(filename).relative_to(REPO)}:{line}({name})"
            rows.append((cumtime, tottime, ncalls, where))
    rows.sort(reverse=True)
    print(f"\ncProfile of {what}: {total:.3f} s total (profiler overhead included)")
    print("top akira_cli functions by cumulative time (share = cumtime / total):")
    print(f"  {'cum s':>7} {'share':>6} {'own s':>7} {'calls':>7}  function")
    for cumtime, tottime, ncalls, where in rows[:top]:
        share = 100 * cumtime / total
        print(f"  {cumtime:7.3f} {share:5.1f}% {tottime:7.3f} {ncalls:7d}  {where}")
    leaves = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)  # type: ignore[attr-defined]
    print(f"top {min(top, 15)} functions anywhere by own time (where the time really goes):")
    for (filename, line, name), (_, ncalls, tottime, _, _) in leaves[: min(top, 15)]:
        where = f"{Path(filename).name}:{line}({name})" if line else name
        print(f"  {tottime:7.3f} {100 * tottime / total:5.1f}% {ncalls:7d}  {where}")
