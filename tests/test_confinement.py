"""The llm agent's file tools against hostile paths: races, links, FIFOs, odd bytes, the control plane."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from akira_cli.agents.confine import Confined
from akira_cli.agents.tools import Toolbox
from akira_cli.control_plane import ControlPlane
from akira_cli.events import EventBus
from akira_cli.runner import CommandRunner
from akira_cli.testing.races import SWAPPER


def toolbox_for(root: Path, task: Path | None = None) -> Toolbox:
    return Toolbox(
        root,
        CommandRunner(root),
        allow_run_command=False,
        max_output_chars=4000,
        bus=EventBus("t"),
        step_id="1",
        control=ControlPlane(root, lambda: task),
    )


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("outside secret")
    return root, outside


def call(box: Toolbox, name: str, **args: object) -> tuple[bool, str]:
    result = box.call(name, json.dumps(args))
    return result.error, result.output


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_racing_symlink_swap_never_lets_a_write_or_read_out(layout: tuple[Path, Path]) -> None:
    """Another process flips `d` between a real folder and a symlink to the outside while the
    tools write into `d/` and read `d/secret.txt` (the old resolve-then-open code read the
    outside secret within a few hundred tries)."""
    root, outside = layout
    box = toolbox_for(root)
    real, stop = root / "d", root.parent / "stop"
    real.mkdir()
    (real / "secret.txt").write_text("inside")
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(real), str(root / "parked"), str(outside), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    wrote = 0
    try:
        for n in range(3000):
            error, _ = call(box, "write_file", path=f"d/f{n}.txt", content="x")
            wrote += not error
            _, output = call(box, "read_file", path="d/secret.txt")
            assert "outside secret" not in output
    finally:
        stop.touch()
        out, _ = swapper.communicate(timeout=30)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert wrote > 0 and int(out) > 100  # the race really ran


def test_hard_links_fifos_nul_bytes_and_long_paths_are_tool_errors(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    box = toolbox_for(root)
    os.link(outside / "secret.txt", root / "hard.txt")
    os.mkfifo(root / "pipe")
    calls = [
        ("write_file", {"path": "hard.txt", "content": "overwritten"}),
        ("read_file", {"path": "hard.txt"}),
        ("write_file", {"path": "pipe", "content": "x"}),
        ("read_file", {"path": "pipe"}),
        ("read_file", {"path": "a\x00b"}),
        ("write_file", {"path": "a\x00b", "content": "x"}),
        ("read_file", {"path": "x" * 5000}),
        ("write_file", {"path": "/".join(["d"] * 2000), "content": "x"}),
        ("write_file", {"path": "y" * 300, "content": "x"}),
        ("list_files", {"path": "\x00"}),
    ]
    results: list[tuple[bool, str]] = []
    # a tool that opened the FIFO would wait for its other end forever: the calls run aside
    caller = threading.Thread(target=lambda: results.extend(call(box, n, **a) for n, a in calls), daemon=True)
    caller.start()
    caller.join(timeout=60)
    assert not caller.is_alive(), f"blocked on {calls[len(results)]}"
    for (name, args), (error, output) in zip(calls, results, strict=True):
        assert error and output.startswith("error: "), (name, args, output)
        assert "Traceback" not in output
    assert (outside / "secret.txt").read_text() == "outside secret"


def test_symlinks_inside_the_workspace_are_followed_outside_ones_refused(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    box = toolbox_for(root)
    (root / "src").mkdir()
    (root / "alias").symlink_to("src")
    (root / "abs").symlink_to(root / "src")
    (root / "escape").symlink_to("../outside/secret.txt")
    (root / "loop").symlink_to("loop")
    assert call(box, "write_file", path="alias/a.txt", content="via alias") == (
        False,
        "wrote 9 characters to src/a.txt",
    )
    assert call(box, "read_file", path="abs/a.txt") == (False, "via alias")
    error, output = call(box, "read_file", path="escape")
    assert error and "outside the workspace" in output
    error, output = call(box, "write_file", path="escape", content="x")
    assert error and (outside / "secret.txt").read_text() == "outside secret"
    error, output = call(box, "read_file", path="loop")
    assert error and "symbolic links" in output


def test_the_control_plane_is_refused_to_the_agent(tmp_path: Path) -> None:
    root = tmp_path
    task = root / "Specs" / "f" / "tasks.md"
    task.parent.mkdir(parents=True)
    task.write_text("- [ ] 1. step\n")
    (root / ".git" / "hooks").mkdir(parents=True)
    box = toolbox_for(root, task)
    for path in [
        "Specs/f/tasks.md",
        "./Specs/f/../f/tasks.md",
        "config/autonomous_loop.yaml",
        ".hooks/stop_autonomous_loop.md",
        ".state/autonomous_loop_x.json",
        ".git/hooks/pre-commit",
        ".git/config",
        "Logs/completion_reports/x.md",
        "Needs_Action/escalation_x.md",
    ]:
        error, output = call(box, "write_file", path=path, content="- [x] 1. step\n  - Run: `evil`\n")
        assert error, path
        assert "control plane" in output or "task file" in output or "reports" in output
    assert task.read_text() == "- [ ] 1. step\n"
    for folder in ("config", ".hooks", ".state", "Logs", "Needs_Action"):
        assert not (root / folder).exists(), folder
    assert not (root / ".git" / "hooks" / "pre-commit").exists()
    (root / "link.md").symlink_to("Specs/f/tasks.md")
    assert call(box, "write_file", path="link.md", content="x")[0]
    assert call(box, "read_file", path="Specs/f/tasks.md") == (False, "- [ ] 1. step\n")


def test_reads_are_bounded(tmp_path: Path) -> None:
    (tmp_path / "big.bin").write_bytes(b"a" * 3_000_000)
    relative, data = Confined(tmp_path).read("big.bin", limit=1000)
    assert relative == "big.bin" and len(data) == 1000
