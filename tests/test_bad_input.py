"""Every bad input: one line on stderr naming what, where and how to fix it; the right exit code;
no traceback; nothing on disk lost. Run as real subprocesses, the way a person meets them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.workspace import Akira, Result


def one_clear_line(result: Result, code: int, *needles: str) -> None:
    assert result.code == code, (result.code, result.err)
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert "Traceback" not in result.err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("content", "needles"),
    [
        (None, ("nope/tasks.md", "task file not found")),
        ("", ("empty",)),
        ("# Plan\n\nJust prose, no boxes.\n", ("no checkbox items",)),
        ("- [ ] 1. A\n  - Depends: 7\n", ("tasks.md:2", "unknown step '7'")),
        ("- [ ] 1. A\n  - Depends: 2\n- [ ] 2. B\n  - Depends: 1\n", ("tasks.md:1", "cycle")),
        (
            "- [ ] 1. a\n  - Run: `touch ran.txt`\n  - Exists: `ran.txt`\n- [y] 2. b\n- [xx] 3. c\n",
            ("tasks.md:4", "'[y]' on line 4, '[xx]' on line 5", "write '[ ]'"),
        ),
        (
            "- [ ] 3. a\n  - Run: `touch ran.txt`\n-[ ] 4. b\n  - Run: `touch four.txt`\n",
            ("tasks.md:3", "'-[ ]' has no space after its list marker", "write '- [ ]'"),
        ),
        ("- [ ] 1. a\n*[x] 2. b\n", ("tasks.md:2", "'*[x]' has no space", "write '* [x]'")),
        ("- [ ] 1. a\n+[ ] 2. b\n", ("tasks.md:2", "'+[ ]' has no space", "write '+ [ ]'")),
    ],
)
@pytest.mark.slow
def test_bad_task_files(akira: Akira, content: str | None, needles: tuple[str, ...]) -> None:
    task = akira.root / "Specs" / "nope" / "tasks.md"
    if content is not None:
        akira.write_task("nope", content)
    before = snapshot(akira.root)
    one_clear_line(akira.cli("loop", "start", "--task", str(task)), 1, *needles)
    assert snapshot(akira.root) == before
    assert not akira.state_files()


def as_a_user(*args: str, cwd: Path) -> Result:
    """akira as a person runs it, for whom permissions count: as root, without the capabilities
    that read past them (util-linux's setpriv)."""
    drop = "-dac_override,-dac_read_search"
    prefix = ["setpriv", f"--inh-caps={drop}", f"--bounding-set={drop}"] if os.geteuid() == 0 else []
    done = subprocess.run(
        [*prefix, sys.executable, "-m", "akira_cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return Result(done.returncode, done.stdout, done.stderr)


@pytest.mark.parametrize(
    ("unreadable", "needles"),
    [
        ("Specs/example/tasks.md", ("Specs/example/tasks.md", "cannot read the task file", "permissions")),
        ("config/autonomous_loop.yaml", ("config/autonomous_loop.yaml", "cannot read config", "permissions")),
    ],
)
@pytest.mark.slow
def test_an_unreadable_file_is_one_line_not_a_usage_panel(
    akira: Akira, unreadable: str, needles: tuple[str, ...]
) -> None:
    before = snapshot(akira.root)
    (akira.root / unreadable).chmod(0)
    args = ("loop", "start", "--task", "Specs/example/tasks.md", "--config", "config/autonomous_loop.yaml")
    one_clear_line(as_a_user(*args, cwd=akira.root), 1, *needles)
    (akira.root / unreadable).chmod(0o644)
    assert snapshot(akira.root) == before
    assert not akira.state_files()


@pytest.mark.slow
def test_a_start_that_meets_an_editor_mid_save_waits_for_the_file(akira: Akira) -> None:
    task = akira.write_task("saving", "")  # the editor truncated it and writes next
    os.utime(task, (0, task.stat().st_mtime))  # an access time before the change: a read moves it
    process = akira.spawn("loop", "start", "--task", str(task))
    akira.wait_for(lambda: task.stat().st_atime > 0 or process.poll() is not None, 60, "akira to read it")
    task.write_text("- [ ] 1. Write\n  - Run: `echo hi > hi.txt`\n")
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert (akira.root / "hi.txt").read_text() == "hi\n"


@pytest.mark.slow
def test_a_directory_instead_of_a_file(akira: Akira) -> None:
    (akira.root / "Specs" / "empty").mkdir()
    one_clear_line(akira.cli("loop", "start", "--task", "Specs/empty"), 1, "without tasks.md")


def test_unknown_config_key_suggests_the_spelling(akira: Akira) -> None:
    akira.write_config("autonomous_loop:\n  max_iteration: 5\n")
    result = akira.cli("loop", "start", "--task", "Specs/example/tasks.md")
    one_clear_line(
        result,
        1,
        "autonomous_loop.yaml",
        "unknown key 'autonomous_loop.max_iteration'",
        "did you mean 'autonomous_loop.max_iterations'",
    )


@pytest.mark.slow
def test_wrong_config_type_names_key_and_file(akira: Akira) -> None:
    akira.write_config("reflection:\n  max_iterations: lots\n")
    result = akira.cli("config", "show")
    one_clear_line(result, 1, "autonomous_loop.yaml", "reflection.max_iterations", "'lots'")


@pytest.mark.slow
def test_corrupt_state_is_quarantined_never_overwritten(akira: Akira) -> None:
    assert akira.cli("loop", "start", "--task", "Specs/example/tasks.md").code == 0
    task_id = akira.task_id()
    archived = akira.root / ".state" / "archive" / f"autonomous_loop_{task_id}.json"
    archived.write_text('{"task_id": "x", "status": ')
    result = akira.cli("loop", "state", "--task-id", task_id)
    one_clear_line(result, 1, "corrupt state file", ".state/corrupt")
    quarantined = list((akira.root / ".state" / "corrupt").iterdir())
    assert [p.read_text() for p in quarantined] == ['{"task_id": "x", "status": ']
    assert not archived.exists()


@pytest.mark.slow
@pytest.mark.parametrize("command", ["stop", "resume", "status", "state", "progress", "logs"])
def test_unknown_task_id(akira: Akira, command: str) -> None:
    result = akira.cli("loop", command, "--task-id", "task_20000101_000000")
    one_clear_line(result, 1, "no loop found for 'task_20000101_000000'", "akira loop status")


@pytest.mark.slow
def test_usage_errors_exit_2(akira: Akira) -> None:
    assert akira.cli("loop", "start").code == 2
    assert akira.cli("loop", "start", "--task", "x", "--agent", "robot").code == 2


@pytest.mark.slow
def test_missing_root(tmp_path: Path) -> None:
    result = Akira(tmp_path / "missing").cli("loop", "status")
    one_clear_line(result, 1, "workspace folder not found", "--root")


@pytest.mark.slow
def test_config_show_layers_and_masks_the_key(akira: Akira, tmp_path: Path) -> None:
    akira.write_config("autonomous_loop:\n  max_iterations: 7\n  failure_threshold: 2\n")
    extra = tmp_path / "extra.yaml"
    extra.write_text("autonomous_loop:\n  max_iterations: 9\nllm:\n  api_key: sk-from-file\n")
    result = akira.cli("config", "show", "--config", str(extra))
    assert result.code == 0
    assert "max_iterations: 9" in result.out and "failure_threshold: 2" in result.out
    assert "sk-from-file" not in result.out and "api_key: '****'" in result.out


@pytest.mark.slow
def test_status_json_and_dashboard(akira: Akira) -> None:
    assert akira.cli("loop", "start", "--task", "Specs/example/tasks.md").code == 0
    akira.write_task("stuck", "- [ ] 1. fail\n  - Run: `echo no; exit 1`\n")
    assert akira.cli("loop", "start", "--task", "Specs/stuck/tasks.md").code == 4
    data = json.loads(akira.cli("loop", "status", "--json").out)
    groups = sorted(row["group"] for row in data["loops"])
    assert groups == ["Completed", "Needs action"]
    board = akira.cli("loop", "status").out
    assert "Completed (1)" in board and "Needs action (1)" in board and "\x1b[" not in board
    progress = json.loads(akira.cli("loop", "progress", "--task-id", "stuck", "--json").out)
    assert progress["steps_done"] == 0 and progress["steps_total"] == 1
    state = json.loads(akira.cli("loop", "state", "--task-id", "Specs/stuck/tasks.md", "--json").out)
    assert state["status"] == "needs_action" and state["schema_version"] == 2


@pytest.mark.slow
def test_near_miss_directives_are_warned_about_once_and_never_run(akira: Akira) -> None:
    task = akira.write_task(
        "near",
        "- [ ] 1. A\n  - Run: `touch a`\n  - Verfy: `touch pwned`\n"
        "  - Verify: `touch pwned` when the API is up\n  - Timeout: soon\n",
    )
    result = akira.cli("loop", "start", "--task", str(task))
    assert result.code == 0, result.err
    warnings = [line for line in result.err.splitlines() if line.startswith("akira: warning:")]
    assert len(warnings) == 2 and "tasks.md:3" in warnings[0] and "tasks.md:4" in warnings[1]
    assert (akira.root / "a").exists() and not (akira.root / "pwned").exists()


def test_every_bad_config_key_is_named_in_one_line_at_once(akira: Akira) -> None:
    akira.write_config(
        "autonomous_loop:\n  max_iteration: 5\n  parallel: many\nreview:\n  enabled: perhaps\n"
    )
    result = akira.cli("config", "show")
    one_clear_line(
        result,
        1,
        "autonomous_loop.yaml: 3 problems: ",
        "unknown key 'autonomous_loop.max_iteration' (did you mean 'autonomous_loop.max_iterations'?)",
        "key 'autonomous_loop.parallel'",
        "key 'review.enabled'",
        "fix them in that file",
    )
