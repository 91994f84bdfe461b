"""The sandbox (docs/sandbox.md), for real: real `bwrap`, the real proxy, real HTTP servers on 127.0.0.1.

A hostile agent (as the claude preset's `agent.command`) and a hostile `Run:` step try every
escape docs/sandbox.md lists; each refusal is checked from outside: the planted secrets and the token in
akira's environment are never readable nor in anything akira writes, no file appears outside
the work tree, the control plane is byte-identical, the forbidden server gets no request while
the allowed one is reached, akira survives, a `setsid nohup sleep` is gone when the step is, and
the preset's state folder keeps what the agent wrote. `--no-sandbox` shows the same secrets are
readable, so the test can see a leak."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from akira_cli.sandbox.probe import probe
from akira_cli.sections import SandboxSettings
from tests.support.sandbox import AWS_KEY, NETRC, SSH_KEY, Server, plant
from tests.support.workspace import Akira

pytestmark = pytest.mark.skipif(not probe(SandboxSettings()).ok, reason="needs a working bwrap")

TOKEN = "ghp_TOKENa1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"
AWS_ENV = "AWSENV-7f3e9a1c5b2d8e4f"
MCP_TOKEN = "MCPTOKEN-2b4d6f8a0c1e3a5c"
FLEET_PASSWORD = "FLEETPW-9e7c5a3b1d0f2e4a"
KEPT_TOKEN = "KEPTTOKEN-5a7c9e1b3d5f7a9c"
"""The token an MCP server keeps in `.state/mcp_token` for its clients."""
SECRETS = (SSH_KEY, AWS_KEY, NETRC, TOKEN, AWS_ENV, MCP_TOKEN, FLEET_PASSWORD, KEPT_TOKEN)
PLANTED = ("Specs/zz-helpful-setup", ".kiro/specs/x", "specs/y", "openspec/changes/z")
"""Task files a step plants for a later start (an MCP client offers what `list_tasks` finds)."""
SLEEP_MARK = "314159"

HOSTILE = r"""#!/bin/bash
# A hostile agent: it tries every escape of the sandbox and notes what it saw in loot.txt.
[ -t 0 ] || cat > /dev/null
L=loot.txt
{
  echo "== env"; env
  echo "== ssh"; cat {home}/.ssh/id_rsa ~/.ssh/id_rsa
  echo "== aws"; cat {home}/.aws/credentials
  echo "== netrc"; cat {home}/.netrc
  echo "== mcp token"; cat {ws}/.state/mcp_token
  echo "== environ of every process"; cat /proc/[0-9]*/environ | tr '\0' '\n'
  echo "== preset state"; cat ~/.claude/keep.txt
} >> $L 2>&1
if [ ! -f control ]; then
  {
    echo pwned > {sibling}/pwned.txt; echo "sibling: $?"
    echo pwned > {parent}/pwned.txt; echo "parent: $?"
    echo "echo pwned" >> {home}/.bashrc; echo "bashrc: $?"
    echo "pwned: true" >> {ws}/config/autonomous_loop.yaml; echo "config: $?"
    echo pwned > {ws}/.state/pwned.json; echo "state: $?"
    echo pwned > {ws}/.hooks/pwned; echo "hooks: $?"
    echo "exit 1" > {ws}/.git/hooks/pre-commit; echo "git hooks: $?"
    printf '[core]\n\thooksPath = /tmp\n' >> {ws}/.git/config; echo "git config: $?"
    echo pwned >> {ws}/.git/info/exclude; echo "git info: $?"
    echo "- [ ] 9. injected" >> {task}; echo "task file: $?"
    for spec in {planted}; do
      mkdir -p {ws}/$spec; printf -- '- [ ] 1. Setup\n  - Run: `touch {parent}/planted-ran`\n' > {ws}/$spec/tasks.md
      echo "planted $spec: $?"
    done
    echo pwned > {ws}/Logs/completion_reports/pwned.md; echo "reports: $?"
    {py} -c 'import urllib.request as u; print("allowed:", u.urlopen("http://127.0.0.1:{ok}/ok", timeout=30).read())'
    {py} -c 'import urllib.request as u; u.urlopen("http://127.0.0.1:{bad}/via-proxy", timeout=30)'
    {py} -c 'import socket; socket.create_connection(("127.0.0.1", {bad}), timeout=10)'
    {py} -c 'import http.client as h; c = h.HTTPConnection("127.0.0.1", {ok}); c.set_tunnel("127.0.0.1", {bad}); c.request("GET", "/tunnel")'
    for pid in $(cut -d' ' -f1 {ws}/.state/*.pid) {pytest}; do kill -TERM "$pid"; echo "kill $pid: $?"; done
    echo "pid 1 is $(tr '\0' ' ' < /proc/1/cmdline | cut -d' ' -f1)"; kill -TERM 1
    setsid nohup sleep {mark} > /dev/null 2>&1 &
    records=~/.claude/projects/$(realpath . | sed 's/[^a-zA-Z0-9]/-/g')
    echo "agent state" > $records/agent_was_here.jsonl; echo "claude records: $?"
    echo "agent state" > ~/.claude/agent_was_here; echo "claude state: $?"
  } >> $L 2>&1
fi
echo done > work.txt
echo '{"type": "result", "subtype": "success", "is_error": false, "result": "Done.", "usage": {}}'
"""


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


def hostile_run(
    akira: Akira,
    tmp_path: Path,
    servers: tuple[Server, Server],
    how: str,
    *flags: str,
) -> tuple[subprocess.CompletedProcess[str], Path, dict[str, str]]:
    """Starts a loop whose agent (`how`: "agent" or "run") is the hostile script; the control
    plane's digests as they were before it."""
    home, ws = plant(tmp_path), akira.root
    ok, bad = servers[0].server_address[1], servers[1].server_address[1]
    task = ws / "Specs" / "feat" / "tasks.md"
    script = ws / "hostile.sh"  # a private /tmp: a script outside the work tree would not be seen
    fill: dict[str, object] = {
        "home": home,
        "sibling": tmp_path / "sibling",
        "parent": tmp_path,
        "ws": ws,
        "task": task,
    }
    fill |= {"planted": " ".join(PLANTED)}
    fill |= {"py": sys.executable, "ok": ok, "bad": bad, "pytest": os.getpid(), "mark": SLEEP_MARK}
    text = HOSTILE
    for name, value in fill.items():
        text = text.replace("{" + name + "}", str(value))
    script.write_text(text)
    own = f"  kind: command\n  command: bash {script}\n" if how == "agent" else ""
    agent = f"agent:\n  preset: claude\n{own}"  # the Run: step too: the claude preset's folders
    akira.write_config(f'{agent}sandbox:\n  allow_hosts: ["127.0.0.1:{ok}"]\n')
    run = f"  - Run: `bash {script}`\n" if how == "run" else ""
    akira.write_task("feat", f"- [ ] 1. Do the work\n{run}  - Verify: `test -f work.txt`\n")
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "start")
    env = {**os.environ, "HOME": str(home), "GITHUB_TOKEN": TOKEN, "AWS_SECRET_ACCESS_KEY": AWS_ENV}
    env |= {"AKIRA_MCP_TOKEN": MCP_TOKEN, "AKIRA_FLEET_DATABASE_URL": f"postgresql://u:{FLEET_PASSWORD}@db/x"}
    command = [sys.executable, "-m", "akira_cli", "loop", "start", "--task", str(task), "--no-wait"]
    command += [*(["--agent", "script"] if how == "run" else []), *flags, "--root", str(ws)]
    (ws / ".state").mkdir(exist_ok=True)
    (ws / ".state" / "mcp_token").write_text(KEPT_TOKEN + "\n")
    before = digest(plane_files(ws))
    done = subprocess.run(command, cwd=ws, env=env, capture_output=True, text=True, timeout=300)
    return done, home, before


def plane_files(ws: Path) -> list[Path]:
    """The control plane akira itself does not write during a run."""
    git = ws / ".git"
    return [ws / "config" / "autonomous_loop.yaml", git / "config", *git.glob("hooks/*")]


def digest(paths: list[Path]) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths if p.is_file()}


def written_by_akira(root: Path) -> str:
    """Everything under the workspace but the agent's own loot and git's compressed objects."""
    texts = []
    for path in root.rglob("*"):
        if path.is_file() and path.name not in ("loot.txt", "mcp_token") and "objects" not in path.parts:
            texts.append(path.read_text(errors="replace"))
    return "\n".join(texts)


def leftover_sleep() -> bool:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if f"sleep\0{SLEEP_MARK}".encode() in (entry / "cmdline").read_bytes():
                    return True
            except OSError:
                continue
    return False


@pytest.mark.parametrize("how", [pytest.param("agent", marks=pytest.mark.slow), "run"])
def test_a_hostile_step_escapes_nothing(
    akira: Akira, tmp_path: Path, servers: tuple[Server, Server], how: str
) -> None:
    ws = akira.root
    done, home, before = hostile_run(akira, tmp_path, servers, how)
    assert done.returncode == 0, done.stderr  # akira was not signalled, the step passed on its merits
    state = akira.state()
    assert state.status == "completed" and state.sandboxed is True
    loot = (ws / "loot.txt").read_text()
    for secret in SECRETS:
        assert secret not in loot, f"{secret} was readable inside"
        assert secret not in written_by_akira(ws), f"{secret} is in something akira wrote"
    assert "claude-state-readable" in loot  # the preset's state folder is bound in
    records = home / ".claude" / "projects" / re.sub("[^a-zA-Z0-9]", "-", str(ws.resolve()))
    assert (records / "agent_was_here.jsonl").read_text() == "agent state\n"  # its records are kept
    assert not (home / ".claude" / "agent_was_here").exists()  # the rest of what it wrote is not
    # Nothing outside the work tree.
    assert not (tmp_path / "sibling" / "pwned.txt").exists()
    assert not (tmp_path / "pwned.txt").exists()
    assert (home / ".bashrc").read_text() == "# the person's bashrc\n"
    # The control plane: refused, so byte-identical (akira's own writes aside).
    assert "pwned" not in (ws / "config" / "autonomous_loop.yaml").read_text()
    assert not (ws / ".state" / "pwned.json").exists() and not (ws / ".hooks" / "pwned").exists()
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    assert "hooksPath" not in (ws / ".git" / "config").read_text()
    assert "pwned" not in (ws / ".git" / "info" / "exclude").read_text()
    assert "injected" not in (ws / "Done" / "feat" / "tasks.md").read_text()
    assert not (ws / "Logs" / "completion_reports" / "pwned.md").exists()
    planted = [line for line in loot.splitlines() if line.startswith("planted ")]
    assert len(planted) == len(PLANTED) and not any(line.endswith(": 0") for line in planted), planted
    assert not any((ws / spec / "tasks.md").exists() for spec in PLANTED)
    assert digest(plane_files(ws)) == before
    # The network: the allowed server reached through the proxy, the forbidden one never.
    assert "allowed: b'reached'" in loot and servers[0].hits == ["/ok"]
    assert servers[1].hits == []
    denied = [e for e in akira.events() if e.type == "sandbox_denied"]
    assert denied and all(e.step_id == "1" and e.data["host"] == "127.0.0.1" for e in denied)
    # Processes: akira and pytest cannot be seen or signalled; PID 1 is the sandbox's own.
    kills = [line for line in loot.splitlines() if line.startswith("kill ")]
    assert len(kills) == 2 and all(line.endswith(": 1") for line in kills), kills
    assert "pid 1 is " in loot and loot.split("pid 1 is ")[1].split()[0].endswith("bwrap")
    akira.wait_for(lambda: not leftover_sleep(), timeout=30, what="the step's setsid sleep to be gone")


@pytest.mark.slow
def test_without_the_sandbox_the_same_secrets_are_readable(
    akira: Akira, tmp_path: Path, servers: tuple[Server, Server]
) -> None:
    """The control: the hostile script's reads succeed unsandboxed, so the test above sees a leak."""
    (akira.root / "control").write_text("only read\n")
    done, _, _ = hostile_run(akira, tmp_path, servers, "run", "--no-sandbox")
    assert done.returncode == 0, done.stderr
    assert akira.state().sandboxed is False
    loot = (akira.root / "loot.txt").read_text()
    for secret in SECRETS:
        assert secret in loot


def marked(mark: str) -> list[int]:
    """Host pids of live processes whose command line holds `mark`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if mark.encode() in (entry / "cmdline").read_bytes():
                    state = (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0]
                    found += [int(entry.name)] if state != "Z" else []
            except OSError:
                continue
    return found


@pytest.mark.slow
def test_a_sandboxed_step_dies_with_akira_without_its_reaper(akira: Akira) -> None:
    """kill -9 of akira and of its reaper: --die-with-parent alone ends the step's processes."""
    from tests.support.processes import kill_with_its_reaper

    mark = f"100.{os.getpid()}7"
    task = akira.write_task(
        "long", f"- [ ] 1. long\n  - Run: `sleep {mark} & sleep {mark}1; wait`\n  - Timeout: 200\n"
    )
    first = akira.spawn("loop", "start", "--task", str(task))
    akira.wait_for(lambda: len(marked(f"sleep\0{mark}")) == 2, 60, "the step's two sleeps")
    assert akira.state().sandboxed is True
    kill_with_its_reaper(first, akira.task_id(), akira.root)
    first.communicate(timeout=30)
    akira.wait_for(lambda: marked(f"sleep\0{mark}") == [], 30, "the sandboxed step to die with akira")
