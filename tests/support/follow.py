"""A night that ends with a pull request followed by the real gh (2.102, `realcli/gh.py`) against
the scripted GitHub server (`tests.support.servers.github_server`), over HTTPS on a loopback address
of its own.

The repository has `calc.py` and a one-step task; the agent is a command that reads its prompt
and does what a step of each kind asks (step 1: notes; a failed `test`: make `add` add; a review
comment: rename `add` to `plus`, or add a docstring, or nothing to change, saying `FOLLOW_SUMMARY`;
a failed `lint`: a change that does not help),
ends with a `SUMMARY:` line, and keeps each prompt and its environment's names in the test's
folder. Pushes go to a real bare repository, whose head the server's CI script reads.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from realcli.gh import real_gh

from akira_cli.cli import main
from tests.support.git import git, person_repository
from tests.support.servers.github_actions import Job
from tests.support.servers.github_pulls import Forge, Review, Thread
from tests.support.servers.github_server import GitHubServer
from tests.support.workspace import Akira, Result

AGENT = r'''
import json, os, pathlib, re, sys
prompt = pathlib.Path(sys.argv[1]).read_text()
shared = pathlib.Path(os.environ["FOLLOW_SHARED"])
step = re.search(r"# Your step: (\S+?)\. ", prompt).group(1)
(shared / "prompts").mkdir(exist_ok=True)
(shared / "prompts" / f"{step}.md").write_text(prompt)
(shared / "env" ).mkdir(exist_ok=True)
(shared / "env" / f"{step}.json").write_text(json.dumps(sorted(os.environ)))
calc = pathlib.Path("calc.py")
if step == "1":
    pathlib.Path("notes.txt").write_text("notes\n")
    print("SUMMARY: wrote the notes")
elif "check `test`" in prompt:
    calc.write_text(calc.read_text().replace("a - b", "a + b"))
    print("SUMMARY: add() adds its arguments")
elif "check `lint`" in prompt:
    calc.write_text(calc.read_text() + "# tidied\n")
    print("SUMMARY: tidied calc.py")
elif "rename `add`" in prompt:
    calc.write_text(calc.read_text().replace("def add(", "def plus("))
    print("SUMMARY: renamed add to plus")
elif "docstring" in prompt:
    calc.write_text('"""Arithmetic."""\n' + calc.read_text())
    print("SUMMARY: added a module docstring")
elif "nothing to change" in prompt:
    print("SUMMARY: " + os.environ.get("FOLLOW_SUMMARY", "nothing to change"))
'''

TASKS = """
# Implementation Plan

- [ ] 1. Write the notes
  - Exists: `notes.txt`
"""

FAILING = """\
{stamp} ##[group]Run python -m pytest -q
{stamp} ============================= FAILURES =============================
{stamp} __________________________ test_add __________________________
{stamp}     def test_add():
{stamp} >       assert add(2, 2) == 4
{stamp} E       assert 0 == 4
{stamp} tests/test_calc.py:{line}: AssertionError
{stamp} 1 failed in {seconds}s (run {run})
{stamp} ##[error]Process completed with exit code 1.
"""


def log(round_: int) -> str:
    """The failing job's log; each round's timestamps, line numbers, duration and id differ."""
    stamp = f"2030-01-0{round_}T0{round_}:00:0{round_}.{round_}123456Z"
    return FAILING.format(stamp=stamp, line=3 + round_, seconds=f"0.{round_}1", run=f"{round_}abcdef0123")


class Night:
    """The repository, its bare origin, the scripted GitHub and the environment gh needs."""

    def __init__(
        self,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        checks: Callable[[Night, str], list[Job]],
        threads: list[Thread] | None = None,
        follow: str = "follow:\n  poll_seconds: 0.2\n  max_wait_minutes: 1\n",
        pr: str = "ready",
        files: dict[str, str] | None = None,
        agent: str = AGENT,
        tasks: str = TASKS,
        reviews: list[Review] | None = None,
    ) -> None:
        """`files`: more of the repository (path: text); `agent`: the agent's script in place of
        `AGENT`; `tasks`: the task file in place of `TASKS`."""
        gh = real_gh()
        self.tmp = tmp_path
        self.root = tmp_path / "repo"
        self.bare = tmp_path / "origin.git"
        assert main(["init", str(self.root)]) == 0
        person_repository(self.root)
        self.akira = Akira(self.root)
        self.akira.write_task("calc", tasks)
        (self.root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
        for name, text in (files or {}).items():
            (self.root / name).parent.mkdir(parents=True, exist_ok=True)
            (self.root / name).write_text(text)
        script = agent
        agent = tmp_path / "agent.py"
        agent.write_text(textwrap.dedent(script).lstrip())
        command = f"{sys.executable} {agent} {{prompt_file}}"
        self.akira.write_config(
            f"agent:\n  kind: command\n  command: {json.dumps(command)}\n"
            f"git:\n  push: origin\n  pr: {pr}\n  pr_tool: gh\n"
            "checks:\n  - run: \"python3 -c 'import calc'\"\n    name: imports\n"
            + follow
            + f"sandbox:\n  mode: on\n  allow_write: [{str(tmp_path)!r}]\n  env: [FOLLOW_*]\n"
        )
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", "base")
        git(tmp_path, "init", "-q", "--bare", str(self.bare))
        git(self.root, "remote", "add", "origin", str(self.bare))
        git(self.root, "push", "-q", "origin", "main")
        self.forge = Forge(
            "acme",
            "calc",
            self.bare,
            lambda sha: checks(self, sha),
            threads=threads or [],
            reviews=reviews or [],
        )
        self.hub = GitHubServer(self.forge, tmp_path / "github")
        for name, value in self.hub.environment().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("PATH", f"{gh.parent}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.setenv("FOLLOW_SHARED", str(tmp_path))
        monkeypatch.setenv("NO_COLOR", "1")

    def __enter__(self) -> Night:
        self.hub.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.hub.__exit__(None, None, None)

    def calc(self, sha: str) -> str:
        return git(self.bare, "show", f"{sha}:calc.py")

    def start(self, *more: str, timeout: float = 300) -> Result:
        return self.akira.cli("loop", "start", "--task", "Specs/calc/tasks.md", *more, timeout=timeout)

    def prompt(self, step: str) -> str:
        return (self.tmp / "prompts" / f"{step}.md").read_text()

    def environment_of(self, step: str) -> list[str]:
        return list(json.loads((self.tmp / "env" / f"{step}.json").read_text()))

    def commit(self, step: str) -> tuple[str, str]:
        """The sha and message of the commit with `Akira-Step: <step>` on the pushed branch."""
        found = git(self.bare, "log", "--format=%H%x00%B%x01", "akira/calc", "--grep", f"Akira-Step: {step}$")
        sha, _, body = found.strip("\x01\n").partition("\x00")
        return sha, body

    def report(self) -> str:
        state = self.akira.state()
        return (self.root / "Logs" / "completion_reports" / f"{state.task_id}.md").read_text()
