"""`akira doctor` says what would stop or degrade a night's run, through the checks `loop start`
makes: a `sandbox.allow_hosts` entry that is a URL, a `git.push` that names no remote, a push
remote that cannot be reached, `git.pr` without its tool or its login, a reviewer CLI that is
not installed; a config that does not load is still a table. Real git, real bare remotes, fake
`gh` and agent CLIs first on PATH (`tests/support/doctor.py`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.doctor import Machine, doctor, rows
from tests.support.workspace import Akira

pytestmark = pytest.mark.slow

GH = """#!/bin/sh
if [ "$1 $2" = "auth status" ]; then
  if [ -f "{logged_in}" ]; then echo "github.com: Logged in to github.com account person (keyring)"; exit 0; fi
  echo "You are not logged into any GitHub hosts. To log in, run: gh auth login" >&2
  exit 1
fi
exit 2
"""


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Machine:
    return Machine(tmp_path, monkeypatch)


def repository(akira: Akira, tmp_path: Path, config: str) -> Path:
    """The workspace as a repository with one commit and a bare `origin`."""

    def git(*args: str, where: Path = akira.root) -> None:
        subprocess.run(["git", *args], cwd=where, check=True, capture_output=True)

    akira.write_config(config)
    git("init", "-q", "-b", "main")
    git("-c", "user.name=P", "-c", "user.email=p@e", "commit", "-q", "--allow-empty", "-m", "one")
    origin = tmp_path / "origin.git"
    git("init", "-q", "--bare", str(origin), where=tmp_path)
    git("remote", "add", "origin", str(origin))
    return origin


def test_what_loop_start_refuses_doctor_fails_with_the_same_words(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    repository(
        akira,
        tmp_path,
        'sandbox:\n  allow_hosts: ["https://downloads.example.com"]\ngit:\n  push: upstream\n',
    )
    code, report = doctor(akira, capsys, "--agent", "script")
    found = rows(report)
    assert code == 1 and found["allow_hosts"]["status"] == "fail" and found["git"]["status"] == "fail"
    assert "'https://downloads.example.com' is not `host`" in found["allow_hosts"]["detail"]
    assert "git.push names upstream, which is not a remote" in found["git"]["detail"]
    assert "remote add upstream" in found["git"]["fix"]
    akira.write_task("feat", "- [ ] 1. One\n  - Run: `true`\n")
    started = akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "script")
    assert started.code == 1 and found["git"]["detail"] in started.err, started.err
    akira.write_config('sandbox:\n  allow_hosts: ["https://downloads.example.com"]\n')
    started = akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "script")
    assert started.code == 1 and found["allow_hosts"]["detail"] in started.err, started.err


def test_a_reviewer_cli_that_is_not_installed_is_a_warning_not_ready(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    akira.write_config("review:\n  agent: codex\n")
    code, report = doctor(akira, capsys, "--agent", "script")
    row = rows(report)["reviewer"]
    assert code == 0 and row["status"] == "warn", row
    assert "codex is not on PATH" in row["detail"] and "Akira-Review: none" in row["detail"]
    assert "npm install -g @openai/codex@" in row["fix"]
    shown = akira.run("doctor", "--agent", "script", capsys=capsys).out
    warned = sum("│ warn " in line for line in shown.splitlines())  # the sandbox's may warn too here
    assert shown.splitlines()[-1] == f"ready to run ({warned} warning{'s' if warned > 1 else ''})", shown


def test_the_reviewers_preset_is_checked_in_its_read_only_mode(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    machine.install("claude")
    akira.write_config("review:\n  agent: claude\n")
    _, report = doctor(akira, capsys, "--agent", "script")
    found = rows(report)
    assert found["reviewer"]["status"] == "ok" and "--permission-mode plan" in found["reviewer"]["detail"]
    assert found["reviewer version"]["status"] == "ok" and found["reviewer flags"]["status"] == "ok"
    assert found["reviewer auth"]["status"] == "warn"  # no key: every review would be none
    machine.setenv("ANTHROPIC_API_KEY", "sk-ant-a-key-long-enough-to-mask")
    _, report = doctor(akira, capsys, "--agent", "script")
    assert rows(report)["reviewer auth"]["status"] == "ok"


def test_the_pull_requests_tool_and_its_login_and_the_push_remote(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    origin = repository(akira, tmp_path, "git:\n  push: origin\n  pr: draft\n  pr_tool: gh\n")
    _, report = doctor(akira, capsys, "--agent", "script")
    found = rows(report)
    assert found["push"]["status"] == "ok" and found["pull request"]["status"] == "warn"
    assert "gh is not on PATH, so no pull request will be opened" in found["pull request"]["detail"]
    gh = machine.bin / "gh"
    gh.write_text(GH.format(logged_in=tmp_path / "logged_in"))
    gh.chmod(0o755)
    _, report = doctor(akira, capsys, "--agent", "script")
    row = rows(report)["pull request"]
    assert row["status"] == "warn" and "You are not logged into any GitHub hosts" in row["detail"], row
    assert row["fix"] == "run 'gh auth login'"
    akira.write_task("feat", "- [ ] 1. One\n  - Run: `true`\n")
    started = akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "script", "--no-wait")
    warned = [line for line in started.err.splitlines() if "auth status" in line]
    assert warned and warned[0].startswith("akira: warning: git.pr is draft"), started.err
    assert started.err.index(warned[0]) < started.err.index("akira: started")  # before the night, not after
    (tmp_path / "logged_in").touch()
    _, report = doctor(akira, capsys, "--agent", "script")
    assert rows(report)["pull request"] == {
        "check": "pull request",
        "status": "ok",
        "detail": "git.pr: draft, through gh",
        "fix": "",
    }
    origin.rename(tmp_path / "gone.git")
    _, report = doctor(akira, capsys, "--agent", "script")
    row = rows(report)["push"]
    assert row["status"] == "warn" and "origin cannot be reached" in row["detail"], row
    assert "ls-remote origin" in row["fix"]


def test_a_config_that_does_not_load_is_still_a_table(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    akira.write_config("autonomous_loop:\n  max_iteration: 3\n")
    shown = akira.run("doctor", capsys=capsys)
    assert shown.code == 1 and "Traceback" not in shown.err
    assert "│ config │ fail" in shown.out and "unknown key 'autonomous_loop.max_iteration'" in " ".join(
        shown.out.split()
    )
    assert "1 problem would stop a run; fix it and run 'akira doctor" in " ".join(shown.out.split())


def test_an_agent_or_a_reviewer_the_sandbox_hides_is_named_as_the_sandboxs_doing(
    akira: Akira, machine: Machine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    system = os.path.dirname(shutil.which("true") or "/bin/true")  # bwrap's probe runs `true` inside
    machine.setenv("PATH", f"{machine.bin}:{machine.tools}:{system}")
    for path in (tmp_path / "own-tools" / "agent.sh", machine.home / "rev" / "review.sh"):
        path.parent.mkdir()
        path.write_text("#!/bin/sh\necho done\n")
        path.chmod(0o755)
    akira.write_config(
        f"agent:\n  command: {tmp_path / 'own-tools' / 'agent.sh'}\n"
        "review:\n  agent: ~/rev/review.sh\nsandbox:\n  mode: auto\n"
    )
    done = akira.cli("doctor", "--json")  # a process of its own: the sandbox probed with this PATH
    found = rows(json.loads(done.out))
    if found["sandbox"]["status"] != "ok":
        pytest.skip(f"bubblewrap cannot work here: {found['sandbox']['detail']}")
    assert done.code == 1 and found["agent"]["status"] == "fail", found["agent"]
    assert (
        f"the agent's program {tmp_path / 'own-tools' / 'agent.sh'} lies under /tmp"
        in found["agent"]["detail"]
    )
    assert "sandbox.allow_read" in found["agent"]["fix"] and "--no-sandbox" in found["agent"]["fix"]
    reviewer = found["reviewer"]
    assert reviewer["status"] == "warn" and "the reviewer's program" in reviewer["detail"], reviewer
    assert "cannot start inside the sandbox" in reviewer["detail"] and "Akira-Review: none" in reviewer["fix"]
    akira.write_task("hidden", "- [ ] 1. Do it\n  - Exists: `x`\n")
    started = akira.cli("loop", "start", "--task", "Specs/hidden/tasks.md")
    lines = started.err.strip().splitlines()
    assert started.code == 1 and "lies under /tmp" in lines[-1], started.err
    assert not list((akira.root / ".state").glob("autonomous_loop_*.json"))
    akira.write_config("review:\n  agent: ~/rev/review.sh\nsandbox:\n  mode: auto\n")
    akira.write_task("runs", "- [ ] 1. Write\n  - Run: `echo x > x.txt`\n  - Exists: `x.txt`\n")
    night = akira.cli("loop", "start", "--task", "Specs/runs/tasks.md")
    assert night.code == 0, night.err
    warned = [e.data.get("message", "") for e in akira.events() if e.type == "warning"]
    assert any("the reviewer's program" in line and "inside the sandbox" in line for line in warned), warned
