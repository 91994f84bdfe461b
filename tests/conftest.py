"""Shared pytest fixtures. Each helper's fixtures live in a delimited section."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from akira_cli.cli import main
from akira_cli.events import Event, read_events
from akira_cli.state.models import LoopState
from akira_cli.state.store import StateStore
from akira_cli.testing import FakeOpenAI

# --- fake OpenAI server (akira_cli.testing) -------------------------------------------------


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A started fake OpenAI-compatible server on 127.0.0.1, closed after the test."""
    with FakeOpenAI() as server:
        yield server


# --- end fake OpenAI server ----------------------------------------------------------------

# --- workspaces and the akira CLI ----------------------------------------------------------


class Akira:
    """Runs akira in a workspace: in-process (`run`) or as a real subprocess (`spawn`)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def write_task(self, feature: str, text: str) -> Path:
        path = self.root / "Specs" / feature / "tasks.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
        return path

    def write_config(self, text: str) -> Path:
        path = self.root / "config" / "autonomous_loop.yaml"
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
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


def share_with_steps(root: Path, folder: Path) -> None:
    """Lets the steps of the workspace at `root` write `folder` (`sandbox.allow_write`, SPEC 15):
    tests whose steps meet at a gate or keep a ledger in the test's own folder, outside the
    work tree, which the sandbox keeps them from otherwise (a private /tmp, a read-only root)."""
    config = root / "config" / "autonomous_loop.yaml"
    text = config.read_text(encoding="utf-8")
    assert "  allow_write: []" in text
    config.write_text(text.replace("  allow_write: []", f"  allow_write: [{str(folder)!r}]", 1), encoding="utf-8")


@pytest.fixture
def akira(tmp_path: Path) -> Akira:
    root = tmp_path / "ws"
    assert main(["init", str(root)]) == 0
    share_with_steps(root, tmp_path)
    return Akira(root)


# --- end workspaces ------------------------------------------------------------------------
