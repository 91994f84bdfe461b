"""Edges a new user meets from the README alone (issue 29's follow-up): real repositories in
temp folders whose names hold a space, akira run as a subprocess as a person runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


def akira(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "AKIRA_ROOT"}
    return subprocess.run(
        [sys.executable, "-m", "akira_cli", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def kiro_repo(tmp_path: Path, tasks: str, config: str = "") -> Path:
    root = tmp_path / "my project"
    spec = root / ".kiro" / "specs" / "feat"
    spec.mkdir(parents=True)
    (spec / "tasks.md").write_text(tasks)
    (root / "config").mkdir()
    (root / "config" / "autonomous_loop.yaml").write_text(config)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Person")
    git(root, "config", "user.email", "person@example.com")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


OPTIONAL_ONLY = """\
# Implementation Plan

- [ ] 1. Make a file
  - Run: `echo a > a.txt`
- [ ] 2. Extras
  - [ ]* 2.1 Optional one
    - Run: `echo x > x.txt`
  - [ ]* 2.2 Optional two
    - Run: `echo y > y.txt`
- [ ] 3. Nothing to do
  - Run: `true`
"""


def test_a_parent_of_optional_steps_only_stays_open_for_a_run_that_includes_them(tmp_path: Path) -> None:
    root = kiro_repo(tmp_path, OPTIONAL_ONLY)
    tasks = root / ".kiro" / "specs" / "feat" / "tasks.md"
    first = akira(root, "loop", "start", "--task", ".kiro/specs/feat/tasks.md")
    assert first.returncode == 0, first.stderr
    assert "- [ ] 2. Extras" in tasks.read_text()  # none of its steps ran: not done
    assert "- [x] 3. Nothing to do" in tasks.read_text()
    assert git(root, "status", "--porcelain") == ""
    second = akira(root, "loop", "start", "--task", ".kiro/specs/feat/tasks.md", "--include-optional")
    assert second.returncode == 0, second.stderr
    assert (root / "x.txt").read_text() == "x\n" and (root / "y.txt").read_text() == "y\n"
    assert "- [x] 2. Extras" in tasks.read_text()
    assert git(root, "status", "--porcelain") == ""
