"""An akira workspace as the tests drive it: in-process or as a subprocess, its state and its
events; the `sandbox:` keys that let the steps meet in the test's own folder."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from akira_cli.cli import main
from akira_cli.events import Event, read_events
from akira_cli.state.models import LoopState
from akira_cli.state.store import StateStore


class Akira:
    """Runs akira in a workspace: in-process (`run`) or as a real subprocess (`spawn`)."""

    def __init__(self, root: Path, shared: Path | None = None) -> None:
        self.root = root
        self.shared = shared
        """The test's folder the steps may write (`shared_section`), kept by `write_config`
        unless the text has a `sandbox:` section of its own."""

    def write_task(self, feature: str, text: str) -> Path:
        path = self.root / "Specs" / feature / "tasks.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
        return path

    def write_config(self, text: str) -> Path:
        path = self.root / "config" / "autonomous_loop.yaml"
        text = textwrap.dedent(text).lstrip()
        if self.shared is not None and not any(line.startswith("sandbox:") for line in text.splitlines()):
            text = (
                text.rstrip("\n") + "\n" + shared_section(self.shared)
                if text.strip()
                else shared_section(self.shared)
            )
        path.write_text(text, encoding="utf-8")
        return path

    def run(self, *args: str, capsys: pytest.CaptureFixture[str] | None = None) -> Result:
        argv = [*args, "--root", str(self.root)] if args and args[0] != "init" else list(args)
        code = main(argv)
        out, err = capsys.readouterr() if capsys is not None else ("", "")
        return Result(code, out, err)

    def spawn(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "akira_cli", *args, "--root", str(self.root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=self.root if self.root.is_dir() else None,
        )

    def cli(self, *args: str, timeout: float = 60) -> Result:
        process = self.spawn(*args)
        out, err = process.communicate(timeout=timeout)
        return Result(process.returncode, out, err)

    def task_id(self) -> str:
        ids = sorted(p.stem.removeprefix("autonomous_loop_") for p in self.state_files())
        assert ids, "no state file yet"
        return ids[-1]

    def state_files(self) -> list[Path]:
        folders = [self.root / ".state", self.root / ".state" / "archive"]
        return [p for folder in folders for p in folder.glob("autonomous_loop_*.json")]

    def state(self, task_id: str | None = None) -> LoopState:
        return StateStore(self.root / ".state").load(task_id or self.task_id())

    def events(self, task_id: str | None = None) -> list[Event]:
        return list(read_events(self.root / ".state" / "logs" / f"{task_id or self.task_id()}.jsonl"))

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 20, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                if predicate():
                    return
            time.sleep(0.02)
        raise AssertionError(f"timed out waiting for {what or predicate}")


@dataclass
class Result:
    code: int
    out: str
    err: str


TEST_DATA = Path(__file__).parents[1] / "data"
"""The captures the fake CLIs replay: under /tmp when the checkout is (CI's may be), where the
sandbox's private /tmp would hide them from a fake that runs inside it."""


def shared_section(folder: Path) -> str:
    """`sandbox:` keys for tests whose steps meet at a gate or keep a ledger in the test's own
    folder, outside the work tree (a private /tmp and a read-only root keep them from it
    otherwise), whose fake agent CLIs read FAKE_* variables and the test data."""
    return (
        f"sandbox:\n  allow_write: [{str(folder)!r}]\n  allow_read: [{str(TEST_DATA)!r}]\n  env: [FAKE_*]\n"
    )


def share_with_steps(root: Path, folder: Path) -> None:
    """The workspace's config with `shared_section(folder)` in place of the template's keys."""
    config = root / "config" / "autonomous_loop.yaml"
    text = config.read_text(encoding="utf-8")
    assert "  allow_write: []" in text and "  allow_read: []" in text and "  env: []" in text
    text = text.replace("  allow_write: []", f"  allow_write: [{str(folder)!r}]", 1)
    text = text.replace("  allow_read: []", f"  allow_read: [{str(TEST_DATA)!r}]", 1)
    config.write_text(text.replace("  env: []", "  env: [FAKE_*]", 1), encoding="utf-8")


def akira(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m akira_cli ARGS` run in `cwd`, as a person runs it there (no AKIRA_ROOT)."""
    env = {k: v for k, v in os.environ.items() if k != "AKIRA_ROOT"}
    return subprocess.run(
        [sys.executable, "-m", "akira_cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
