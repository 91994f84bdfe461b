"""Fake `gh` and `glab` on PATH that log every call and keep the pull requests they opened, for
the pull-request tests that need no server, and the repository with a bare `origin` they work in."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from akira_cli.cli import main
from tests.support.git import git, person_repository
from tests.support.workspace import Akira

FAKE = r'''#!PYTHON
"""A fake gh/glab: logs argv and body to $FAKE_LOG, keeps open pull requests in $FAKE_PRS."""
import json, os, sys
tool, args = os.path.basename(sys.argv[0]), sys.argv[1:]
if args[:2] == ["auth", "status"]:  # logged in (what loop start and doctor ask; not logged)
    sys.stderr.write("github.com\n  ✓ Logged in to github.com account person (keyring)\n")
    sys.exit(0)
store = os.environ["FAKE_PRS"]
prs = json.load(open(store)) if os.path.exists(store) else {}
def value(flag):
    return args[args.index(flag) + 1] if flag in args else None
body = value("--description")
if value("--body-file"):
    body = open(value("--body-file"), encoding="utf-8").read()
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps({"tool": tool, "argv": args, "body": body}) + "\n")
def save():
    json.dump(prs, open(store, "w"))
if os.environ.get("FAKE_FAIL") and args[:2] == os.environ["FAKE_FAIL"].split():
    sys.stderr.write("HTTP 401: Bad credentials (https://api.github.com/graphql)\nTry authenticating with:  gh auth login\n")
    sys.exit(1)
if tool == "gh":
    kind, verb, rest = args[0], args[1], args[2:]
    if verb == "view":
        if rest[0] in prs:
            print(json.dumps({"url": prs[rest[0]]["url"]}))
            sys.exit(0)
        sys.stderr.write(f'no pull requests found for branch "{rest[0]}"\n')
        sys.exit(1)
    if verb == "create":
        head = value("--head")
        if head in prs:
            sys.stderr.write(f'a pull request for branch "{head}" into branch "{value("--base")}" already exists:\n{prs[head]["url"]}\n')
            sys.exit(1)
        url = f"https://github.com/acme/app/pull/{len(prs) + 1}"
        prs[head] = {"url": url, "draft": "--draft" in args}
        save()
        sys.stderr.write(f"\nCreating pull request for {head} into {value('--base')} in acme/app\n\n")
        print(url)
        sys.exit(0)
    if verb == "edit":
        print(prs[rest[0]]["url"])
        sys.exit(0)
    if verb == "ready":
        prs[rest[0]]["draft"] = "--undo" in args
        save()
        sys.exit(0)
else:
    kind, verb, rest = args[0], args[1], args[2:]
    if verb == "view":
        if rest[0] in prs:
            print(json.dumps({"iid": 1, "web_url": prs[rest[0]]["url"], "state": "opened"}))
            sys.exit(0)
        sys.stderr.write(f'no open merge request available for "{rest[0]}"\n')
        sys.exit(1)
    if verb == "create":
        head = value("--source-branch")
        url = f"https://gitlab.example.com/acme/app/-/merge_requests/{len(prs) + 1}"
        prs[head] = {"url": url, "draft": "--draft" in args}
        save()
        print(f"\nCreating merge request for {head} into {value('--target-branch')} in acme/app\n\n!1 {value('--title')} ({head})\n {url}\n")
        sys.exit(0)
    if verb == "update":
        print(f"- Updating merge request !1\n✓ merge request updated\n{prs[rest[0]]['url']}")
        sys.exit(0)
sys.stderr.write(f"unknown command {args}\n")
sys.exit(2)
'''


REQUIREMENTS = """
# Requirements Document

## Requirements

### Requirement 1

**User Story:** As a user, I want files.

#### Acceptance Criteria

1. WHEN the step runs THEN the system SHALL write a.txt
2. WHEN the step runs THEN the system SHALL write b.txt
3. THE system SHALL log every write
"""


class Forge:
    """The fake tools' bin folder, their log and their open pull requests."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tools: tuple[str, ...]) -> None:
        self.bin = tmp_path / "fakebin"
        self.bin.mkdir()
        for tool in tools:
            path = self.bin / tool
            path.write_text(FAKE.replace("PYTHON", sys.executable))
            path.chmod(0o755)
        self.log = tmp_path / "forge.jsonl"
        monkeypatch.setenv("FAKE_LOG", str(self.log))
        monkeypatch.setenv("FAKE_PRS", str(tmp_path / "prs.json"))
        monkeypatch.setenv("PATH", f"{self.bin}{os.pathsep}{os.environ['PATH']}")

    def calls(self) -> list[dict[str, object]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def verbs(self) -> list[str]:
        return [f"{call['tool']} {' '.join(call['argv'][:2])}" for call in self.calls()]  # type: ignore[index]


TASKS = """
# Implementation Plan

- [ ] 1. Write a
  - Run: `echo a > a.txt`
  - Exists: `a.txt`
  - _Requirements: 1.1_
- [ ] 2. Write b
  - Run: `echo b > b.txt`
  - Contains: `b.txt` `b`
  - _Requirements: 1.2_
"""


def workspace(tmp_path: Path, config: str, tasks: str = TASKS) -> Akira:
    root = tmp_path / "repo"
    assert main(["init", str(root)]) == 0
    person_repository(root)
    akira = Akira(root)
    path = akira.write_task("feat", tasks)
    (path.parent / "requirements.md").write_text(textwrap.dedent(REQUIREMENTS).lstrip())
    akira.write_config(config)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    remote = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(root, "remote", "add", "origin", str(remote))
    return akira


def start(akira: Akira) -> tuple[int, str, str]:
    done = akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "script", timeout=120)
    return done.code, done.out, done.err


GH = "git:\n  push: origin\n  pr: ready\n  pr_tool: gh\n"
