"""What the doctor tests share: a machine of their own (PATH, HOME, no credentials) with fake
agent CLIs that print what the pinned real CLIs print (tests/data/doctor/), and the report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support.workspace import Akira

DATA = Path(__file__).parents[1] / "data" / "doctor"
AUTH_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CONFIG_DIR",
    "CODEX_API_KEY",
    "OPENAI_API_KEY",
    "CODEX_HOME",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "AKIRA_MODEL",
)
TOOLS = ("sh", "cat", "git", "bash")
FAKE = """#!/bin/sh
# what {name} {version} prints: the file named after the arguments ("exec --help" -> exec-help.txt)
name=$(echo "$*" | sed -e 's/--//g' -e 's/ /-/g')
if [ -f "{data}/$name.txt" ]; then cat "{data}/$name.txt"; exit 0; fi
echo "error: unexpected argument '$1' found" >&2
exit 2
"""


class Machine:
    """PATH, HOME and the environment a test's `akira doctor` sees."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.bin = tmp_path / "fakebin"
        self.tools = tmp_path / "tools"
        self.home = tmp_path / "home"
        for folder in (self.bin, self.tools, self.home):
            folder.mkdir()
        for tool in TOOLS:
            found = shutil.which(tool)
            assert found, f"{tool} is needed by these tests"
            (self.tools / tool).symlink_to(found)
        (self.tools / "sed").symlink_to(shutil.which("sed") or "/bin/sed")
        self.monkeypatch = monkeypatch
        for name in AUTH_VARIABLES:
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HOME", str(self.home))
        monkeypatch.setenv("PATH", f"{self.bin}:{self.tools}")

    def install(
        self, cli: str, version: str = "", data: str = "", prints: dict[str, str] | None = None
    ) -> Path:
        """A fake `cli` that prints the captured texts of `data` (default: the pinned version's),
        or `prints` (argument words -> text) for a version or help of its own."""
        folder = DATA / (data or next(p.name for p in DATA.iterdir() if p.name.startswith(f"{cli}-")))
        if prints:
            own = self.bin.parent / f"{cli}-texts"
            shutil.copytree(folder, own, dirs_exist_ok=True)
            for name, text in prints.items():
                (own / f"{name}.txt").write_text(text)
            folder = own
        path = self.bin / cli
        path.write_text(FAKE.format(name=cli, version=version or folder.name, data=folder))
        path.chmod(0o755)
        return path

    def setenv(self, name: str, value: str) -> None:
        self.monkeypatch.setenv(name, value)


def doctor(akira: Akira, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    result = akira.run("doctor", "--json", *args, capsys=capsys)
    report = json.loads(result.out)
    assert result.code == (0 if report["ok"] else 1), result
    return result.code, report


def rows(report: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {row["check"]: row for row in report["checks"]}


def rejected(row: dict[str, str]) -> list[str]:
    """The flags a `flags` row says the CLI does not list."""
    if "does not list " not in row["detail"]:
        return []
    return row["detail"].split("does not list ", 1)[1].split(":", 1)[0].split(", ")
