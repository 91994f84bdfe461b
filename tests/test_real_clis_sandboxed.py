"""The pinned real agent CLIs (~/.cache/akira/test-clis) run a step of `akira loop start` inside
the sandbox (on by default), each pointed at its scripted model server on 127.0.0.1 as a
person points it at a gateway (tests/realcli/clis.py). The server is reached through the run's
proxy: claude's and gemini's base-URL variables and codex's model provider (its config.toml's
`base_url` and `env_key`) let their gateway in by themselves; aider's `.aider.conf.yml` names
its own in a file akira does not read, so the config names it in `sandbox.allow_hosts`, as a
person would write it. The CLI's own state folder is written inside and kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from realcli.clis import CLIS

from akira_cli.sandbox.probe import probe
from akira_cli.sections import SandboxSettings
from tests.support.servers.scripted import Script, ScriptedServer

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not probe(SandboxSettings()).ok, reason="needs a working bwrap"),
]

EXTRA = {
    "claude": "",
    "gemini": "",
    "codex": "",
    "aider": '  allow_hosts: ["127.0.0.1:{port}"]\n  env: [LITELLM_LOCAL_MODEL_COST_MAP]\n',
}
"""What a person adds under `sandbox:` for a gateway named in the CLI's own config file."""
CHECK = {name: "  - Exists: `hello.txt`\n" for name in ("claude", "codex", "gemini")} | {
    "aider": "  - Verify: `grep -q 'Done: wrote hello.txt' .aider.chat.history.md`\n"
}
"""The step's check. The scripted server answers aider 0.86 with text, never an edit (its
captures have none either): its check is the model's answer in the chat history it keeps."""
RECORDS = {
    "claude": ".claude/projects/*/*.jsonl",
    "codex": ".codex/sessions/*/*/*/*.jsonl",
    "gemini": ".gemini/tmp/*/chats/*.jsonl",
    "aider": ".aider.conf.yml",
}
"""The CLI's session records in the real home, where it keeps them outside akira too (aider's
are in the work tree: its own file in the home stays)."""


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", list(CLIS))
def test_a_real_cli_works_a_step_in_the_sandbox_through_the_proxy(tmp_path: Path, name: str) -> None:
    cli = CLIS[name]
    if not cli.executable.exists():
        pytest.skip(f"{name} {cli.pin.version} is not installed: python tests/realcli/install.py {name}")
    root, home = tmp_path / "ws", tmp_path / "home"
    assert (
        subprocess.run([sys.executable, "-m", "akira_cli", "init", str(root)], capture_output=True).returncode
        == 0
    )
    task = root / "Specs" / "greet" / "tasks.md"
    task.parent.mkdir(parents=True, exist_ok=True)
    task.write_text(f"- [ ] 1. Create hello.txt with a short greeting\n{CHECK[name]}")
    with ScriptedServer(cli.dialect(), Script(root)) as server:
        env = cli.environment(home, server.url, root)
        env["PATH"] = f"{env['PATH']}{os.pathsep}{Path(sys.executable).parent}"
        (root / "config" / "autonomous_loop.yaml").write_text(
            f"agent:\n  preset: {name}\n  command_timeout_seconds: 240\n"
            f"sandbox:\n  mode: on\n{EXTRA[name].format(port=server.port)}"
        )
        done = subprocess.run(
            [sys.executable, "-m", "akira_cli", "loop", "start", "--task", str(task), "--agent", name],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=280,
        )
        main = server.main_requests()
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert main, "the CLI never reached its model server"
    if name != "aider":
        assert (root / "hello.txt").read_text() == Script(root).content
    state = json.loads(next((root / ".state").rglob("autonomous_loop_*.json")).read_text())
    assert state["sandboxed"] is True and state["status"] == "completed"
    assert list(home.glob(RECORDS[name])), f"{name} kept no session record in the real home"


@pytest.mark.timeout(300)
def test_codex_with_its_codex_home_outside_the_home_keeps_its_state(tmp_path: Path) -> None:
    """`CODEX_HOME` names codex's state folder wherever a person keeps it: bound in writable, as
    `~/.codex` is, so its sessions are written and kept."""
    cli = CLIS["codex"]
    if not cli.executable.exists():
        pytest.skip(f"codex {cli.pin.version} is not installed: python tests/realcli/install.py codex")
    root, home, elsewhere = tmp_path / "ws", tmp_path / "home", tmp_path / "state" / "codex"
    done = subprocess.run([sys.executable, "-m", "akira_cli", "init", str(root)], capture_output=True)
    assert done.returncode == 0
    task = root / "Specs" / "greet" / "tasks.md"
    task.parent.mkdir(parents=True, exist_ok=True)
    task.write_text(f"- [ ] 1. Create hello.txt with a short greeting\n{CHECK['codex']}")
    with ScriptedServer(cli.dialect(), Script(root)) as server:
        env = cli.environment(home, server.url, root)
        elsewhere.parent.mkdir(parents=True)
        (home / ".codex").rename(elsewhere)
        env["CODEX_HOME"] = str(elsewhere)
        env["PATH"] = f"{env['PATH']}{os.pathsep}{Path(sys.executable).parent}"
        (root / "config" / "autonomous_loop.yaml").write_text(
            f"agent:\n  preset: codex\n  command_timeout_seconds: 240\n"
            f"sandbox:\n  mode: on\n{EXTRA['codex'].format(port=server.port)}"
        )
        done = subprocess.run(
            [sys.executable, "-m", "akira_cli", "loop", "start", "--task", str(task), "--agent", "codex"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=280,
        )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert (root / "hello.txt").read_text() == Script(root).content
    assert list((elsewhere / "sessions").rglob("*.jsonl")), "codex kept no session in CODEX_HOME"


def test_a_moved_state_folder_is_bound_but_never_the_root_or_the_home(tmp_path: Path) -> None:
    from akira_cli.sandbox.clistate import lay_out

    home, moved = tmp_path / "home", tmp_path / "claude-config"
    private, bin_dir = tmp_path / "private", tmp_path / "bin"
    for folder in (home, private, bin_dir):
        folder.mkdir()
    for cli in ("claude", "codex"):  # installed: a folder of theirs is made when missing
        (bin_dir / cli).write_text("#!/bin/sh\n")
        (bin_dir / cli).chmod(0o755)
    given = {"CLAUDE_CONFIG_DIR": str(moved), "PATH": str(bin_dir)}
    found = [real for real, _ in lay_out("claude", home, private, given).roots]
    assert moved in found and moved.is_dir()  # made, so what the CLI keeps there is kept
    for wrong in ("/", str(home), str(tmp_path), "relative/path"):
        roots = lay_out("codex", home, private, {"CODEX_HOME": wrong, "PATH": str(bin_dir)}).roots
        assert [real for real, _ in roots] == [home / ".codex"], wrong


def test_no_state_folder_is_made_for_a_cli_that_is_not_installed(tmp_path: Path) -> None:
    from akira_cli.sandbox.clistate import lay_out

    home, private, empty = tmp_path / "home", tmp_path / "private", tmp_path / "bin"
    for folder in (home, private, empty):
        folder.mkdir()
    assert lay_out("codex", home, private, {"PATH": str(empty)}).roots == []
    assert not (home / ".codex").exists()
