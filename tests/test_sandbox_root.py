"""The sandbox as root (containers, CI): every command still gets a user namespace of its own and
no capability, so a step cannot mount, remount or unmount (the read-only root, the binds over
`.git/config`). Run as root, as CI runs, and as an ordinary user (`nobody`, through `setpriv`,
where the suite runs as root). Where root cannot make a user namespace, `auto` falls back at the
start with its warning, and the state says the run was not sandboxed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from akira_cli.sandbox.probe import find_bwrap, probe
from akira_cli.sections import SandboxSettings
from tests.support.users import NOBODY, SETPRIV, nobody_python

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not probe(SandboxSettings()).ok, reason="needs a working bwrap"),
]

ESCAPE = r"""#!/bin/bash
# A step that tries to undo its sandbox with mount(2), as root would outside it.
{
  grep CapEff /proc/self/status
  mount -o remount,rw /; echo "remount /: $?"
  umount {ws}/.git/config; echo "umount .git/config: $?"
  umount -l {ws}/.git/config; echo "umount -l .git/config: $?"
  echo '[core] fsmonitor = touch {outside}/host.txt' >> {ws}/.git/config; echo "git config: $?"
  echo pwned > {outside}/pwned.txt; echo "outside: $?"
  unshare -Urm sh -c 'umount {ws}/.git/config; mount -o remount,rw /; echo pwned > {outside}/nested.txt'
  echo "nested: $?"
} > probe.txt 2>&1
"""


def as_user(user: str) -> list[str]:
    """The command line that runs akira's Python as `user` (see `tests.support.users`)."""
    if user == "root":
        return [sys.executable]
    found = nobody_python()
    if found is None:
        pytest.skip("no Python here that nobody may run with akira's packages")
    python, path = found
    return [*SETPRIV, *(["env", f"PYTHONPATH={path}"] if path else []), python]


@pytest.fixture
def place() -> Iterator[Path]:
    """A folder both root and `nobody` may use (a pytest tmp_path is root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="akira-root-test-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def akira(python: list[str], home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home)}
    return subprocess.run(
        [*python, "-m", "akira_cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def workspace(place: Path, config: str, task: str) -> tuple[Path, Path, Path]:
    """A git repository set up as akira's workspace, the home and a folder outside the tree."""
    ws, home, outside = place / "ws", place / "home", place / "outside"
    home.mkdir()
    outside.mkdir()
    subprocess.run([sys.executable, "-m", "akira_cli", "init", str(ws)], check=True, capture_output=True)
    (ws / "config" / "autonomous_loop.yaml").write_text(config)
    (ws / "Specs" / "feat").mkdir(parents=True, exist_ok=True)
    (ws / "Specs" / "feat" / "tasks.md").write_text(task)
    (ws / "escape.sh").write_text(ESCAPE.replace("{ws}", str(ws)).replace("{outside}", str(outside)))
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args]
        subprocess.run(git, cwd=ws, check=True, capture_output=True)
    return ws, home, outside


@pytest.mark.parametrize("user", ["root", "nobody"])
def test_a_step_cannot_mount_remount_or_unmount(place: Path, user: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("runs as root and as nobody: needs root to be both")
    python = as_user(user)
    task = "- [ ] 1. Get out\n  - Run: `bash escape.sh`\n  - Exists: `probe.txt`\n"
    ws, home, outside = workspace(place, "sandbox:\n  mode: on\n  network: none\n", task)
    git_config = (ws / ".git" / "config").read_bytes()
    if user == "nobody":
        subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(place)], check=True)
    done = akira(
        python, home, "loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "script", "--root", str(ws)
    )
    assert done.returncode == 0, done.stderr
    probed = (ws / "probe.txt").read_text()
    assert (ws / "probe.txt").stat().st_uid == (0 if user == "root" else NOBODY)
    assert "CapEff:\t0000000000000000" in probed, probed  # no capability at all
    assert "remount /: 0" not in probed and "umount .git/config: 0" not in probed, probed
    assert (ws / ".git" / "config").read_bytes() == git_config
    assert sorted(p.name for p in outside.iterdir()) == []  # nothing written outside the tree


REFUSES_USERNS = """#!/bin/sh
# The bwrap of a container where root may make namespaces, but no user namespace.
for arg in "$@"; do
  if [ "$arg" = "--unshare-user" ]; then
    echo 'bwrap: Creating new namespace failed: Operation not permitted' >&2
    exit 1
  fi
done
exec {bwrap} "$@"
"""


def test_where_no_user_namespace_can_be_made_auto_falls_back_and_says_so(tmp_path: Path) -> None:
    """The probe tries a step's own flags: a run never starts 'sandboxed' where every command
    would fail, nor sandboxed without a user namespace."""
    real = find_bwrap(SandboxSettings())
    assert real is not None
    fake = tmp_path / "bwrap"
    fake.write_text(REFUSES_USERNS.replace("{bwrap}", real))
    fake.chmod(0o755)
    task = "- [ ] 1. Work\n  - Run: `echo ok > out.txt`\n  - Exists: `out.txt`\n"
    ws, home, _ = workspace(tmp_path, f"sandbox:\n  bwrap: {fake}\n", task)
    done = akira(
        [sys.executable],
        home,
        "loop",
        "start",
        "--task",
        "Specs/feat/tasks.md",
        "--agent",
        "script",
        "--root",
        str(ws),
    )
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "running without the sandbox" in line]
    assert len(warnings) == 1 and "user namespace" in warnings[0], done.stderr
    from akira_cli.state.store import StateStore

    (state,) = [s for _, s in StateStore(ws / ".state").scan() if s is not None]
    assert state.sandboxed is False
    report = next((ws / "Logs" / "completion_reports").glob("*.md")).read_text()
    assert "**Sandbox**: NOT sandboxed" in report
    (ws / "config" / "autonomous_loop.yaml").write_text(f"sandbox:\n  mode: on\n  bwrap: {fake}\n")
    (ws / "Specs" / "feat2").mkdir()
    (ws / "Specs" / "feat2" / "tasks.md").write_text(task.replace("out.txt", "out2.txt"))
    refused = akira(
        [sys.executable],
        home,
        "loop",
        "start",
        "--task",
        "Specs/feat2/tasks.md",
        "--agent",
        "script",
        "--root",
        str(ws),
    )
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "user namespace" in refused.stderr and not (ws / "out2.txt").exists()
