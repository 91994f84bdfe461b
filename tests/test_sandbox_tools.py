"""Tool folders: a tool under the home on PATH (`~/.cargo/bin` with rustup beside it, `~/go/bin`,
`~/.deno/bin`, `~/.bun/bin`, any `~/X/bin`, `~/.local/bin`'s links into pipx's venvs) runs in the
sandbox without the credentials that live beside it, and the grown secret list (globs included)
is hidden even under an allowed home."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from akira_cli.sandbox.probe import probe
from akira_cli.sections import SandboxSettings

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not probe(SandboxSettings()).ok, reason="needs a working bwrap"),
]

PIPX = ".local/share/pipx/venvs/pt/bin/pipxtool"
"""Where pipx puts a tool's venv: `~/.local/bin` holds only a link to it."""
TOOLS = {
    ".cargo/bin/cargotool": 'cat ~/.rustup/toolchains/stable/marker; echo "cargo tool ran"',
    "go/bin/gotool": 'echo "go tool ran"',
    ".deno/bin/denotool": 'echo "deno tool ran"',
    ".bun/bin/buntool": 'echo "bun tool ran"',
    "mytools/bin/mytool": 'echo "my tool ran"',
    PIPX: 'echo "pipx tool ran"',
}
SECRETS = {
    ".cargo/credentials.toml": "CARGO-TOKEN-1a2b3c",
    ".cargo/credentials": "CARGO-OLD-TOKEN-4d5e6f",
    ".gem/credentials": "GEM-KEY-7a8b9c",
    ".m2/settings.xml": "MAVEN-PASSWORD-1f2e3d",
    ".m2/settings-security.xml": "MAVEN-MASTER-4c5b6a",
    ".gradle/gradle.properties": "GRADLE-KEY-7f8e9d",
    ".terraform.d/credentials.tfrc.json": "TF-TOKEN-0a1b2c",
    ".vault-token": "VAULT-TOKEN-3d4e5f",
    ".pgpass": "PGPASS-6a7b8c",
    ".my.cnf": "MYSQL-PASSWORD-9d0e1f",
    ".s3cfg": "S3-SECRET-2a3b4c",
    ".boto": "BOTO-SECRET-5d6e7f",
    ".config/hub": "HUB-TOKEN-8a9b0c",
    ".config/op/config": "OP-SESSION-1d2e3f",
    ".config/rclone/rclone.conf": "RCLONE-PASS-4a5b6c",
    ".local/share/keyrings/login.keyring": "KEYRING-7d8e9f",
    ".password-store/site.gpg": "PASS-STORE-0a1b2d",
    ".cache/huggingface/token": "HF-TOKEN-3e4f5a",
    ".huggingface/token": "HF-OLD-TOKEN-6b7c8d",
    ".bash_history": "export SECRET=HISTORY-9e0f1a",
    ".python_history": "key = 'PY-HISTORY-2b3c4d'",
    ".mozilla/firefox/p/logins.json": "FIREFOX-LOGINS-5e6f7a",
    ".config/google-chrome/Default/Login Data": "CHROME-LOGINS-8b9c0d",
    ".config/chromium/Default/Cookies": "CHROMIUM-COOKIES-1e2f3a",
}


def home_with_tools(tmp_path: Path) -> tuple[Path, str]:
    """A home with tools and secrets, and the PATH that names the tools' folders."""
    home = tmp_path / "home"
    for rel, body in TOOLS.items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "pipxtool").symlink_to(home / PIPX)
    (home / ".rustup" / "toolchains" / "stable").mkdir(parents=True)
    (home / ".rustup" / "toolchains" / "stable" / "marker").write_text("rustup seen\n")
    for rel, text in SECRETS.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text + "\n")
    folders = [".cargo/bin", "go/bin", ".deno/bin", ".bun/bin", "mytools/bin", ".local/bin"]
    return home, os.pathsep.join([*(str(home / f) for f in folders), os.environ["PATH"]])


def run(tmp_path: Path, home: Path, path: str, sandbox: str, command: str) -> Path:
    """One `Run:` step of a fresh workspace, sandboxed: its work tree."""
    root = tmp_path / "ws"
    assert (
        subprocess.run([sys.executable, "-m", "akira_cli", "init", str(root)], capture_output=True).returncode
        == 0
    )
    (root / "config" / "autonomous_loop.yaml").write_text(f"sandbox:\n  mode: on\n  network: none\n{sandbox}")
    task = root / "Specs" / "tools" / "tasks.md"
    task.parent.mkdir(parents=True, exist_ok=True)
    task.write_text(f"- [ ] 1. Use the tools\n  - Run: `{command}`\n  - Exists: `loot.txt`\n")
    env = {**os.environ, "HOME": str(home), "PATH": path}
    start = [sys.executable, "-m", "akira_cli", "loop", "start", "--task", str(task), "--agent", "script"]
    done = subprocess.run(start, cwd=root, env=env, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    return root


def test_tools_under_the_home_run_without_the_credentials_beside_them(tmp_path: Path) -> None:
    home, path = home_with_tools(tmp_path)
    names = " ".join(Path(rel).name for rel in TOOLS)
    command = (
        f"for t in {names}; do $t; done > tools.txt 2>&1; cat ~/.cargo/credentials* > loot.txt 2>&1; true"
    )
    root = run(tmp_path, home, path, "", command)
    ran = (root / "tools.txt").read_text()
    for line in ("rustup seen", "cargo tool ran", "go tool ran", "deno tool ran", "bun tool ran"):
        assert line in ran, ran
    assert "my tool ran" in ran and "pipx tool ran" in ran, ran
    loot = (root / "loot.txt").read_text()
    assert "CARGO-TOKEN" not in loot and "CARGO-OLD-TOKEN" not in loot, loot


def test_the_secret_list_is_hidden_even_under_an_allowed_home(tmp_path: Path) -> None:
    home, path = home_with_tools(tmp_path)
    files = " ".join(f"~/{rel}".replace(" ", "\\ ") for rel in SECRETS)
    command = f"cat {files} > loot.txt 2>&1; cat ~/.cargo/registry-note >> loot.txt 2>&1; true"
    (home / ".cargo" / "registry-note").write_text("readable beside them\n")
    root = run(tmp_path, home, path, "  allow_read: ['~']\n", command)
    loot = (root / "loot.txt").read_text()
    assert "readable beside them" in loot  # the home is allowed: the test can see a leak
    leaked = [rel for rel, text in SECRETS.items() if text in loot]
    assert leaked == [], loot
