"""A spec in each layout akira works (Specs/, Kiro's `.kiro/specs/`, spec-kit's `specs/`,
OpenSpec's `openspec/changes/`) in a real repository, a command agent whose first step waits at a
gate in the test's folder, and akira run as a person runs it, from the repository."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.support.git import first_commit
from tests.support.workspace import shared_section

TASKS = """\
# Implementation Plan

- [ ] 1. Add
  - Exists: `add.py`
- [ ] 2. Mul
  - Exists: `mul.py`
- [ ] 3. Sub
  - Exists: `sub.py`
"""
AGENT = """\
case "$AKIRA_STEP_ID" in
  1) touch {gate}/started; while [ ! -e {gate}/go ]; do sleep 0.05; done; echo a > add.py ;;
  2) echo m > mul.py ;;
  3) echo s > sub.py ;;
esac
"""
LAYOUTS = {
    "Specs": ("Specs/calc", None, ("requirements.md", "design.md")),
    "kiro": (".kiro/specs/calc", None, ("requirements.md", "design.md")),
    "spec-kit": ("specs/001-calc", ".specify", ("spec.md", "plan.md")),
    "openspec": ("openspec/changes/calc", None, ("proposal.md", "design.md")),
}
WORK = ["add.py", "mul.py", "sub.py"]


def repository(tmp_path: Path, layout: str) -> tuple[Path, Path, Path]:
    """The repository, the spec's folder, and the gate folder the first step waits at."""
    home, marker, context = LAYOUTS[layout]
    repo, gate = tmp_path / "repo", tmp_path / "gate"
    spec = repo / home
    spec.mkdir(parents=True)
    gate.mkdir()
    if marker:
        (repo / marker).mkdir()
        (repo / marker / "memory.md").write_text("x\n")
    for name in context:
        (spec / name).write_text(f"# {name}\n")
    (spec / "tasks.md").write_text(TASKS)
    (tmp_path / "agent.sh").write_text(AGENT.format(gate=gate))
    (repo / "config").mkdir()
    (repo / "config" / "autonomous_loop.yaml").write_text(
        f"agent:\n  command: bash {tmp_path / 'agent.sh'}\n" + shared_section(tmp_path)
    )
    first_commit(repo)
    return repo, spec, gate


@contextlib.contextmanager
def running(repo: Path, *args: str) -> Iterator[subprocess.Popen[str]]:
    """akira as a person runs it, from the repository; killed if the test fails before it ends."""
    env = {k: v for k, v in os.environ.items() if k != "AKIRA_ROOT"}
    process = subprocess.Popen(
        [sys.executable, "-m", "akira_cli", *args],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def ended(process: subprocess.Popen[str]) -> tuple[int, str]:
    _, err = process.communicate(timeout=300)
    return process.returncode, err
