"""The sandbox blames itself: a step that fails while the sandbox refused it something is told so,
and so is the person, with the exact line that allows it: in the failure text (what the
reflection and the next prompt read), on the console (live, `sandbox_denied` with its step), in
the escalation file and in `akira doctor`. The reflection never says to change the code for it.
A refused host is a local server on another port of 127.0.0.1; a hidden tool is one in a fake
home's `~/.venvs/x/bin`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from akira_cli.events import read_events
from akira_cli.sandbox.probe import probe
from akira_cli.sections import SandboxSettings
from akira_cli.state.store import StateStore
from tests.support.git import git
from tests.support.sandbox import Server
from tests.support.workspace import Akira

pytestmark = pytest.mark.skipif(not probe(SandboxSettings()).ok, reason="needs a working bwrap")


def start(root: Path, home: Path, task: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home)}
    argv = [
        sys.executable,
        "-m",
        "akira_cli",
        "loop",
        "start",
        "--task",
        str(task),
        "--agent",
        "script",
        *flags,
    ]
    return subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=280)


def workspace(tmp_path: Path, task: str, sandbox: str = "") -> tuple[Path, Path, Path]:
    root, home = tmp_path / "ws", tmp_path / "home"
    home.mkdir(exist_ok=True)
    assert (
        subprocess.run([sys.executable, "-m", "akira_cli", "init", str(root)], capture_output=True).returncode
        == 0
    )
    (root / "config" / "autonomous_loop.yaml").write_text(f"sandbox:\n  mode: on\n{sandbox}")
    path = root / "Specs" / "feat" / "tasks.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(task)
    return root, home, path


def only_state(root: Path):  # type: ignore[no-untyped-def]
    (state,) = [s for _, s in StateStore(root / ".state").scan() if s is not None]
    return state


@pytest.mark.slow
def test_a_refused_host_is_named_with_the_line_that_allows_it(
    tmp_path: Path, servers: tuple[Server, Server]
) -> None:
    port = servers[0].server_address[1]
    task = f"- [ ] 1. Fetch the file\n  - Verify: `curl -fsS https://127.0.0.1:{port}/file`\n"
    root, home, path = workspace(tmp_path, task)
    done = start(root, home, path)
    assert done.returncode == 4, f"{done.stdout}\n{done.stderr}"  # needs a person: escalated
    line = f"the sandbox refused 127.0.0.1:{port}; to allow it: sandbox.allow_hosts: [127.0.0.1:{port}]"
    state = only_state(root)
    attempts = state.steps["1"].window()
    assert attempts and all(a.error.splitlines()[0] == line for a in attempts), attempts[-1].error
    assert line in state.sandbox_refused
    from akira_cli.config import Config
    from akira_cli.step_prompts import StepPrompts
    from akira_cli.workspace import Workspace

    config = Config()
    config.reflection.max_reflections_in_prompt = 0  # the failure lines alone say it
    assert line in StepPrompts(Workspace(root), config).retry(state, state.steps["1"], attempts)
    # The person: the console, live and at the end, and the escalation file.
    live = [row for row in done.stdout.splitlines() if "sandbox_denied" in row]
    assert live and "step 1" in live[0] and line in live[0], done.stdout
    assert line in done.stderr.strip().splitlines()[-1]
    escalation = next((root / "Needs_Action").glob("escalation_*.md")).read_text()
    assert line in escalation
    # The reflection never tells the agent to change the code for it.
    events = list(read_events(next((root / ".state" / "logs").glob("*.jsonl"))))
    reflections = [e.data for e in events if e.type == "reflection_generated"]
    assert reflections and all("change the code until" not in r["suggestion"] for r in reflections)
    assert all(
        r["category"] == "environment" and "Do not change the code" in r["suggestion"] for r in reflections
    )
    memory = "\n".join(p.read_text() for p in (root / ".state" / "memory").rglob("*") if p.is_file())
    assert line in memory  # its analysis names what was refused
    assert servers[0].hits == []
    doctor = subprocess.run(
        [sys.executable, "-m", "akira_cli", "doctor", "--agent", "script", "--json", "--root", str(root)],
        cwd=root,
        env={**os.environ, "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    findings = json.loads(doctor.stdout)["checks"]
    named = [f for f in findings if f["check"] == "sandbox" and f"127.0.0.1:{port}" in f["detail"]]
    assert named and f"sandbox.allow_hosts: [127.0.0.1:{port}]" in named[0]["fix"], findings


@pytest.mark.slow
def test_a_step_that_waits_on_a_refused_host_until_its_timeout_blames_the_sandbox(
    tmp_path: Path, servers: tuple[Server, Server]
) -> None:
    port = servers[0].server_address[1]
    # names no host, says nothing, and waits (as a client that retries does)
    quiet = f"curl -s https://127.0.0.$((0+1)):{port}/file >/dev/null 2>&1; sleep 30"
    root, home, path = workspace(tmp_path, f"- [ ] 1. Fetch quietly\n  - Run: `{quiet}`\n  - Timeout: 2\n")
    done = start(root, home, path)
    assert done.returncode == 4, f"{done.stdout}\n{done.stderr}"
    line = f"the sandbox refused 127.0.0.1:{port}; to allow it: sandbox.allow_hosts: [127.0.0.1:{port}]"
    attempts = only_state(root).steps["1"].window()
    assert attempts and attempts[0].error.splitlines()[0] == line, attempts[0].error
    events = list(read_events(next((root / ".state" / "logs").glob("*.jsonl"))))
    reflections = [e.data for e in events if e.type == "reflection_generated"]
    assert reflections and all(r["category"] == "environment" for r in reflections), reflections
    assert all("took longer" not in str(r) for r in reflections)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["by-path", "by-name"])
def test_a_tool_hidden_in_the_home_gets_the_allow_read_hint(tmp_path: Path, how: str) -> None:
    home = tmp_path / "home"
    tool = home / ".venvs" / "x" / "bin" / "tool"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\necho 1.0\n")
    tool.chmod(0o755)
    command = "~/.venvs/x/bin/tool --version" if how == "by-path" else "tool --version"
    root, home, path = workspace(tmp_path, f"- [ ] 1. Check the tool\n  - Verify: `{command}`\n")
    done = start(root, home, path)
    assert done.returncode == 4, f"{done.stdout}\n{done.stderr}"
    hint = "~/.venvs/x/bin/tool is hidden by the sandbox; to allow it: sandbox.allow_read: [~/.venvs/x] (or --no-sandbox)"
    attempts = only_state(root).steps["1"].window()
    assert attempts and all(a.error.splitlines()[0] == hint for a in attempts), attempts[-1].error
    escalation = next((root / "Needs_Action").glob("escalation_*.md")).read_text()
    assert hint in escalation


@pytest.mark.slow
def test_refusals_in_a_parallel_wave_are_each_steps_own(repo: Akira, servers: tuple[Server, Server]) -> None:
    """The run's one proxy serves every worktree slot: each refusal still names its step."""
    ports = [server.server_address[1] for server in servers]
    steps = "".join(
        f"- [ ] {n}. [P] Fetch {n}\n  - Run: `curl -s -m 20 http://127.0.0.1:{port}/{n}; echo {n} > f{n}.txt`\n"
        f"  - Exists: `f{n}.txt`\n"
        for n, port in ((1, ports[0]), (2, ports[1]))
    )
    repo.write_config("sandbox:\n  mode: on\n")
    repo.write_task("feat", steps)
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-q", "-m", "the tasks")
    done = repo.cli(
        "loop", "start", "--task", "Specs/feat/tasks.md", "--parallel", "2", "--agent", "script", timeout=240
    )
    assert done.code == 0, done.err
    denied = sorted((e.step_id, e.data["port"]) for e in repo.events() if e.type == "sandbox_denied")
    assert denied == [("1", ports[0]), ("2", ports[1])]
    assert servers[0].hits == [] and servers[1].hits == []


def test_a_refusal_line_names_a_rule_that_parses_and_never_a_control_character() -> None:
    from akira_cli.config import Config
    from akira_cli.safeyaml import load
    from akira_cli.sandbox.blame import Refusal
    from akira_cli.sandbox.policy import allowed, host_rules

    for host, port in (("downloads.example.com", 443), ("127.0.0.1", 8081), ("pypi.org", 80)):
        line = Refusal(host, port).line()
        allow = line.split("to allow it: ")[1]
        assert allow.startswith("sandbox.allow_hosts: [")
        config = Config.model_validate(load("sandbox:\n  allow_hosts: " + allow.split(": ", 1)[1]))
        assert allowed(host_rules(None, None, config.sandbox.allow_hosts, {}), host, port), line
    from akira_cli.sandbox.blame import item

    for path in ("~/.venvs/x", "~/my venvs/x", "/tmp/a,b]", "~/x: y", "*.x"):
        assert load(f"allow_read: [{item(path)}]")["allow_read"] == [path], path
    shown = Refusal("evil\x1b]0;title\x07.example.com", 443).line()
    assert "\x1b" not in shown and "\x07" not in shown
    assert len(Refusal("a" * 5000, 443).line()) < 700


def test_the_live_panel_shows_what_the_sandbox_refused_whole() -> None:
    import io
    import re

    from rich.console import Console

    from akira_cli.display import LiveDisplay
    from akira_cli.events import EventBus, EventType
    from akira_cli.sandbox.blame import Refusal
    from akira_cli.state.models import LoopState

    out = io.StringIO()
    state = LoopState(task_id="task_20261127_120000", task_path="/w/Specs/f/tasks.md")
    live = LiveDisplay(state, Console(file=out, width=80, force_terminal=True, color_system=None))
    bus = EventBus(state.task_id)
    bus.subscribe(live)
    refusal = Refusal("downloads.example.com", 443)
    bus.emit(EventType.SANDBOX_DENIED, "2", host=refusal.host, port=refusal.port, fix=refusal.line())
    live.close()
    frame = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue()).split("status")[-1]
    text = " ".join(" ".join(line[21:].split()) for line in frame.splitlines() if line.strip())
    assert "step 2: the sandbox refused downloads.example.com:443;" in text, frame
    assert "sandbox.allow_hosts: [downloads.example.com]" in text, frame


def test_an_attempts_commands_share_one_tmp_and_the_next_attempt_gets_a_fresh_one(akira: Akira) -> None:
    akira.write_task(
        "tmp",
        """
        - [ ] 1. Write a scratch file
          - Run: `echo seen > /tmp/made-by-run`
          - Verify: `grep -q seen /tmp/made-by-run`
        - [ ] 2. Start clean
          - Run: `test ! -e /tmp/made-by-run && touch fresh`
          - Exists: `fresh`
        """,
    )
    done = akira.run("loop", "start", "--task", "Specs/tmp/tasks.md", "--agent", "script", "--sandbox")
    state = akira.state()
    assert done.code == 0 and state.status == "completed", state.stop_reason
    assert [len(state.steps[sid].attempts) for sid in ("1", "2")] == [1, 1]
