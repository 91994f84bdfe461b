"""A git repository with a bare `origin` for the reviewer's tests (the morning review): the implementing
agent is a command that writes a file per step and logs its prompt, the reviewer a fake `claude`
first on PATH that prints what `claude -p --output-format json` prints (one result object, the
verdict inside its `result`)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from akira_cli.cli import main
from tests.support.git import git, person_repository
from tests.support.workspace import Akira

REVIEWER = """\
#!{python}
import fcntl, json, os, sys, time
prompt = sys.stdin.read()
with open(os.environ["FAKE_REVIEW_SCRIPT"], "r+") as held:  # one mode per call, the last one sticks
    fcntl.flock(held, fcntl.LOCK_EX)
    script = json.loads(held.read())  # a list, or a list per step (parallel steps)
    modes = script.get(os.environ["AKIRA_STEP_ID"], ["approve"]) if isinstance(script, dict) else script
    mode = modes.pop(0) if len(modes) > 1 else modes[0]
    held.seek(0)
    held.truncate()
    held.write(json.dumps(script))
with open(os.environ["FAKE_REVIEW_LOG"], "a") as log:
    log.write(json.dumps({{"argv": sys.argv[1:], "mode": mode, "prompt": prompt}}) + "\\n")
if mode == "crash":
    sys.stderr.write("API Error: Connection error.\\n")
    sys.exit(1)
if mode == "hang":
    time.sleep(120)
answers = {{
    "approve": json.dumps({{"verdict": "approve", "reasons": ["the greeting is written as asked"]}}),
    "changes": json.dumps({{"verdict": "changes",
        "reasons": ["greeting.txt: it lacks the name; write 'hello, world'"]}}),
    "line": "The step writes the file the requirement asks for.\\nVERDICT: approve",
    "line_changes": "Missing the empty case.\\nVERDICT: changes - handle an empty name",
    "babble": "I had a look and it seems reasonable to me.",
}}
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "duration_ms": 2315,
    "duration_api_ms": 2210, "num_turns": 2, "result": answers[mode], "session_id": "5f1c-review",
    "total_cost_usd": 0.05, "usage": {{"input_tokens": 700, "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 100, "output_tokens": 40, "service_tier": "standard"}},
    "permission_denials": [], "uuid": "b2d4"}}))
"""
AGENT = """\
#!{python}
import json, os, pathlib, sys
prompt = sys.stdin.read()
step, attempt = os.environ["AKIRA_STEP_ID"], os.environ["AKIRA_ATTEMPT"]
with open(os.environ["FAKE_AGENT_LOG"], "a") as log:
    log.write(json.dumps({{"step": step, "attempt": attempt, "prompt": prompt}}) + "\\n")
pathlib.Path(f"step_{{step}}.txt").write_text(f"attempt {{attempt}}\\n")
"""
STEPS = """\
- [ ] 1. Write the greeting
  - Exists: `step_1.txt`
  - _Requirements: 1.1_
- [ ] 2. Write the farewell
  - Exists: `step_2.txt`
"""


class Night:
    """A workspace in a git repository with a bare origin, the fake agent and reviewer on PATH."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, repository: bool = True) -> None:
        root = tmp_path / "repo"
        assert main(["init", str(root)]) == 0
        self.akira = Akira(root, tmp_path)  # the fakes, their logs and script: outside the work tree
        self.root, self.tmp = root, tmp_path
        self.origin = tmp_path / "origin.git"
        if repository:
            git(tmp_path, "init", "-q", "--bare", str(self.origin))
            person_repository(root)
            git(root, "remote", "add", "origin", str(self.origin))
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        for name, body in (("claude", REVIEWER), ("implement", AGENT)):
            path = bin_dir / name
            path.write_text(body.format(python=sys.executable))
            path.chmod(path.stat().st_mode | stat.S_IEXEC)
        monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
        monkeypatch.setenv("FAKE_REVIEW_LOG", str(tmp_path / "reviews.jsonl"))
        monkeypatch.setenv("FAKE_AGENT_LOG", str(tmp_path / "agent.jsonl"))
        monkeypatch.setenv("FAKE_REVIEW_SCRIPT", str(tmp_path / "script.json"))

    def setup(self, review: str, steps: str = STEPS, extra: str = "", agent: str = "") -> None:
        """`agent`: more `agent:` keys, each line indented by two spaces."""
        self.akira.write_config(
            f"agent:\n  kind: command\n  command: implement\n{agent}git:\n  push: origin\n"
            f"review:\n{review}{extra}" + self.shared()
        )
        self.akira.write_task("feat", steps)
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", "base")
        git(self.root, "push", "-q", "origin", "main")

    def shared(self) -> str:
        """The fakes' logs and script lie in the test's folder, outside the work tree: the
        sandbox lets the steps write there and passes their variables in."""
        return f"sandbox:\n  allow_write: [{str(self.tmp)!r}]\n  env: [FAKE_*]\n"

    def verdicts(self, *modes: str, **by_step: list[str]) -> None:
        script = by_step or list(modes)
        (self.tmp / "script.json").write_text(json.dumps(script))

    def start(self, *args: str) -> tuple[int, str]:
        done = self.akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", *args, timeout=180)
        return done.code, done.err

    def reviews(self) -> list[dict[str, object]]:
        log = self.tmp / "reviews.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def prompts(self) -> list[dict[str, str]]:
        log = self.tmp / "agent.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()]

    def report(self) -> str:
        return (self.root / "Logs" / "completion_reports" / f"{self.akira.task_id()}.md").read_text()

    def subjects(self, where: Path | None = None) -> list[str]:
        return git(where or self.root, "log", "--reverse", "--format=%s", "main..akira/feat").splitlines()
