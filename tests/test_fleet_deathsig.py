"""A fleet worker's children never outlive it: the worker starts its loop and its setup through
`akira_cli.fleet.deathsig`, never with a `preexec_fn` in its threaded process. Real processes,
real threads, a real `kill -9`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from akira_cli.fleet.deathsig import ORPHANED, tethered

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

# A worker in miniature: each child started from its own thread, one with `subprocess.run` (as
# the setup is), one with `Popen` and `wait` (as the loop is), while the main thread idles.
WORKER = textwrap.dedent(
    """
    import subprocess, sys, threading, time
    from akira_cli.fleet.deathsig import tethered

    def child(name):
        return tethered(["bash", "-c", f"echo $$ > {sys.argv[1]}/{name}.pid; exec sleep 300"])

    threading.Thread(target=lambda: subprocess.run(child("setup")), daemon=True).start()
    threading.Thread(target=lambda: subprocess.Popen(child("loop")).wait(), daemon=True).start()
    time.sleep(600)
    """
)


def alive(pid: int) -> bool:
    """Running, not a zombie nobody reaped yet."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    return fields[0] != "Z"


def wait_for(condition, what: str, timeout: float = 60) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_a_threaded_workers_children_die_with_it_on_kill_9(tmp_path: Path) -> None:
    worker = subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path)])
    pidfiles = [tmp_path / "setup.pid", tmp_path / "loop.pid"]
    try:
        wait_for(
            lambda: all(path.exists() and path.read_text().strip() for path in pidfiles), "both children"
        )
        pids = [int(path.read_text()) for path in pidfiles]
        assert all(alive(pid) for pid in pids)
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
        wait_for(lambda: not any(alive(pid) for pid in pids), "the children to die with the worker")
    finally:
        worker.kill()
        worker.wait(timeout=30)
        for path in pidfiles:  # never leave a sleeper behind, even when the test fails
            if path.exists() and path.read_text().strip() and alive(int(path.read_text())):
                os.kill(int(path.read_text()), signal.SIGKILL)


def test_the_command_becomes_the_child_so_signals_and_exit_codes_are_its_own(tmp_path: Path) -> None:
    assert subprocess.run(tethered(["bash", "-c", "exit 7"]), timeout=60).returncode == 7
    pidfile = tmp_path / "pid"
    process = subprocess.Popen(tethered(["bash", "-c", f"echo $$ > {pidfile}; exec sleep 300"]))
    try:
        wait_for(lambda: pidfile.exists() and pidfile.read_text().strip() != "", "the command")
        assert int(pidfile.read_text()) == process.pid  # exec, not a fork: the worker's SIGTERM reaches it
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == -signal.SIGTERM
    finally:
        process.kill()
        process.wait(timeout=30)


def test_a_parent_gone_before_the_request_means_the_command_never_starts(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    command = [sys.executable, "-m", "akira_cli.fleet.deathsig", "1", "bash", "-c", f"touch {marker}"]
    assert os.getpid() != 1
    assert subprocess.run(command, timeout=60).returncode == ORPHANED
    assert not marker.exists()


def test_a_module_planted_in_the_folder_it_starts_in_is_never_run(tmp_path: Path) -> None:
    """The worker starts its children in the clone, where the steps write: a planted
    `akira_cli/fleet/deathsig.py` there must not be what runs."""
    marker = tmp_path / "outside" / "planted-ran"
    marker.parent.mkdir()
    planted = tmp_path / "clone" / "akira_cli" / "fleet"
    planted.mkdir(parents=True)
    for folder in (planted.parent, planted):
        (folder / "__init__.py").write_text("")
    (planted / "deathsig.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    done = subprocess.run(tethered(["bash", "-c", "exit 0"]), cwd=tmp_path / "clone", timeout=60)
    assert done.returncode == 0 and not marker.exists()
