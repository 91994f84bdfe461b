"""Nothing akira writes holds a secret; nothing read from a file is trusted as a path (docs/guarantees.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from akira_cli import redaction
from tests.support.workspace import Akira

SECRET = "sk-live-7d3f9a2b8c1e4f60"


def files_holding(root: Path, needle: str, skip: set[Path]) -> list[str]:
    return [
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and p not in skip and needle.encode() in p.read_bytes()
    ]


@pytest.mark.slow
def test_a_secret_in_agent_output_never_reaches_the_disk(
    akira: Akira, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = akira.root / "agent.sh"
    agent.write_text(f'echo "using key $SERVICE_TOKEN"\necho "{SECRET}" >&2\nexit 3\n')
    akira.write_config(f"agent:\n  command: bash {agent}\n")
    task = akira.write_task(
        "leak",
        f"- [ ] 1. Use {SECRET} to call the API\n  - Exists: `never`\n"
        f"- [ ] 2. Print it\n  - Run: `echo $SERVICE_TOKEN; exit 1`\n",
    )
    monkeypatch.setenv("SERVICE_TOKEN", SECRET)
    result = akira.cli("loop", "start", "--task", str(task))
    assert result.code == 4, result.err
    escalation = akira.root / "Needs_Action" / f"escalation_{akira.task_id()}.md"
    assert escalation.exists() and "***" in escalation.read_text()
    assert files_holding(akira.root, SECRET, {agent, task}) == []
    assert SECRET not in result.out + result.err
    state = akira.cli("loop", "state", "--task-id", akira.task_id(), "--json")
    assert SECRET not in state.out and "***" in state.out


@pytest.mark.slow
def test_a_short_key_is_not_masked_and_gets_a_warning(akira: Akira, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    task = akira.write_task("short", "- [ ] 1. expected text\n  - Run: `echo expected exit`\n")
    result = akira.cli("loop", "start", "--task", str(task))
    assert result.code == 0, result.err
    assert "OPENAI_API_KEY is shorter than 8 characters" in result.err
    assert "expected" in json.dumps([e.data for e in akira.events()])  # not "e***pected"


def test_redaction_masks_json_escaped_forms_too() -> None:
    try:
        redaction.register(['ab"cd\\efgh-secret'])
        data = json.dumps({"out": 'ab"cd\\efgh-secret'}).encode()
        assert b"efgh" not in redaction.redact_bytes(data)
    finally:
        redaction.clear()


@pytest.mark.slow
def test_a_state_file_whose_task_id_is_a_path_is_quarantined(akira: Akira) -> None:
    readme = akira.root.parent / "README"
    readme.write_text("outside")
    hostile = akira.root / ".state" / "autonomous_loop_task_20260101_000000.json"
    hostile.write_text(json.dumps({"task_id": "../../README", "task_path": str(readme), "status": "paused"}))
    status = akira.cli("loop", "status", "--json")
    assert status.code == 0 and json.loads(status.out)["corrupt"] == [str(hostile)]
    result = akira.cli("loop", "resume", "--task-id", "task_20260101_000000")
    assert result.code == 1 and "corrupt state file" in result.err and "task_id" in result.err
    assert (akira.root / ".state" / "corrupt").is_dir() and not hostile.exists()
    assert readme.read_text() == "outside"
    traversal = akira.cli("loop", "resume", "--task-id", "../../README")
    assert traversal.code == 1 and "no loop found" in traversal.err


@pytest.mark.slow
def test_a_state_file_pointing_outside_is_never_moved_or_touched(akira: Akira) -> None:
    outside = akira.root.parent / "elsewhere" / "tasks.md"
    outside.parent.mkdir()
    outside.write_text("- [x] 1. done\n")
    state = {
        "task_id": "task_20260101_000000",
        "task_path": str(outside),
        "status": "paused",
        "feature": "elsewhere",
    }
    (akira.root / ".state" / "autonomous_loop_task_20260101_000000.json").write_text(json.dumps(state))
    result = akira.cli("loop", "resume", "--task-id", "task_20260101_000000")
    assert result.code == 1 and "outside the workspace" in result.err
    assert outside.read_text() == "- [x] 1. done\n" and not (akira.root / "Done" / "elsewhere").exists()


@pytest.mark.slow
def test_a_task_file_symlinked_from_outside_is_refused_at_start(akira: Akira) -> None:
    outside = akira.root.parent / "outside.md"
    outside.write_text("- [ ] 1. one\n  - Run: `true`\n")
    (akira.root / "Specs" / "linked").mkdir()
    os.symlink(outside, akira.root / "Specs" / "linked" / "tasks.md")
    result = akira.cli("loop", "start", "--task", "Specs/linked/tasks.md")
    assert result.code == 1 and "outside the workspace" in result.err
    assert outside.exists() and not akira.state_files()
