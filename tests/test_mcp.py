"""`akira mcp` driven by the MCP SDK's own client, over stdio and over streamable HTTP: a run
started, polled to completion, stopped and resumed with guidance, its report read, a step undone,
and each refusal a tool error with the CLI's line. Real processes, a real git repository, HTTP on
127.0.0.1 only."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.support.git import git, git_workspace
from tests.support.mcp import TOKEN, RawStdio, call, http_server, over_http, over_stdio, server_env
from tests.support.workspace import Akira

pytest.importorskip("mcp")


START = [sys.executable, "-m", "akira_cli", "loop", "start", "--task", "Specs/race/tasks.md", "--no-wait"]
DEADLINE = 120.0
STEPS = """\
# Implementation Plan

- [ ] 1. Write one
  - Run: `echo one > one.txt`
  - Exists: `one.txt`
- [ ] 2. Write two once the gate opens
  - Run: `while [ ! -e {gate} ]; do sleep 0.05; done; echo two > two.txt`
  - Exists: `two.txt`
- [ ] 3. Write three
  - Run: `echo three > three.txt`
  - Exists: `three.txt`
"""


@pytest.fixture
def repo(tmp_path: Path) -> Akira:
    """A workspace in a git repository with one commit: its runs are git-native (undo works)."""
    return git_workspace(tmp_path, STEPS.format(gate=tmp_path / "gate"))


async def ok(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    error, text, data = await call(client, tool, **arguments)
    assert not error, f"{tool} refused: {text}"
    assert data is not None and text and "\n" not in text, (tool, text)
    return data


async def until(what: str, check: Callable[[], Any]) -> Any:
    """Polls `check` (a coroutine function) until it returns something true."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        found = await check()
        if found:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


async def a_night_driven_by_an_agent(client: Client, repo: Akira, tmp_path: Path) -> None:
    tools = {tool.name for tool in (await client.list_tools()).tools}
    assert tools == {
        "list_tasks", "start_loop", "loop_status", "loop_progress", "loop_logs",
        "read_report", "stop_loop", "cancel_loop", "resume_loop", "undo_step",
    }  # fmt: skip
    listed = await ok(client, "list_tasks")
    assert {"path": "Specs/example/tasks.md", "layout": "akira", "steps_total": 4}.items() <= listed["tasks"][
        0
    ].items()
    assert listed["tasks"][1] == {
        "path": "Specs/feat/tasks.md",
        "feature": "feat",
        "layout": "akira",
        "steps_done": 0,
        "steps_total": 3,
        "task_id": None,
        "status": None,
        "origin": "person",
    }

    started = await ok(client, "start_loop", task="Specs/feat/tasks.md")
    task_id, pid = started["task_id"], started["pid"]
    assert started == {"task_id": task_id, "status": "running", "pid": pid}
    assert repo.state(task_id).status == "running"

    # Refusals: each is a tool error whose text is the CLI's one line.
    error, text, _ = await call(client, "start_loop", task="Specs/feat/tasks.md")
    assert error and text.startswith(f"akira: error: task {task_id} on ") and f"process {pid}" in text
    error, text, _ = await call(client, "start_loop", task="Specs/missing/tasks.md")
    assert error and text.startswith("akira: error: ") and "task file not found" in text
    outside = tmp_path / "elsewhere" / "tasks.md"
    outside.parent.mkdir()
    outside.write_text("- [ ] 1. Outside\n  - Run: `touch {tmp_path}/escaped`\n")
    error, text, _ = await call(client, "start_loop", task="../elsewhere/tasks.md")
    assert error and "is outside the workspace" in text
    error, text, _ = await call(client, "loop_status", task_id="no-such-task")
    assert error and text == (
        "akira: error: no loop found for 'no-such-task' (not a task id, task file or feature name); "
        "call loop_status to list loops"
    )

    async def on_step_two() -> bool:
        return (await ok(client, "loop_progress", task_id=task_id))["current_step"] == "2"

    await until("step 2 to run", on_step_two)
    stopped = await ok(client, "stop_loop", task_id=task_id)
    assert stopped["status"] == "running" and stopped["pid"] == pid
    assert f"process {pid} pauses once its running command finishes" in stopped["message"]
    (tmp_path / "gate").touch()

    def status_is(wanted: str) -> Callable[[], Any]:
        async def check() -> dict[str, Any] | None:
            found = await ok(client, "loop_status", task_id=task_id)
            return found if found["status"] == wanted else None

        return check

    paused = await until("the pause", status_is("paused"))
    assert paused["pid"] is None and "stop hook" in paused["stop_reason"]
    progress = await ok(client, "loop_progress", task_id=task_id)
    assert [(step["id"], step["done"]) for step in progress["steps"]] == [
        ("1", True),
        ("2", True),
        ("3", False),
    ]

    resumed = await ok(client, "resume_loop", task_id=task_id, guidance="mind the third file")
    assert resumed["task_id"] == task_id and resumed["status"] == "running" and resumed["pid"] == pid
    done = await until("completion", status_is("completed"))
    assert done["iteration"] == 3
    assert repo.state(task_id).steps["3"].guidance == "mind the third file"

    report = await ok(client, "read_report", task_id=task_id)
    assert report["kind"] == "completion"
    assert report["path"] == f"Logs/completion_reports/{task_id}.md"
    assert task_id in report["text"] and report["text"] == (repo.root / report["path"]).read_text()
    logs = await ok(client, "loop_logs", task_id=task_id, tail=3)
    assert len(logs["events"]) == 3 and logs["events"][-1]["type"] == "loop_completed"

    async def ended() -> bool:
        return not (await ok(client, "loop_logs", task_id=task_id, tail=1))["live"]

    await until("the run's process to end", ended)

    branch = git(repo.root, "branch", "--show-current")
    undone = await ok(client, "undo_step", task_id=task_id, step="2")
    assert undone["steps"] == ["2", "3"] and undone["branch"] == branch
    assert undone["message"].endswith(f"to do them again, call resume_loop with task_id {task_id}")
    assert len(undone["commits"]) >= 2
    assert (
        git(repo.root, "rev-list", "--reverse", f"{undone['commits'][0]}^..HEAD").split() == undone["commits"]
    )
    assert not (repo.root / "two.txt").exists() and not (repo.root / "three.txt").exists()
    assert (repo.root / "one.txt").exists()
    assert (await ok(client, "loop_status", task_id=task_id))["status"] == "paused"

    cancelled = await ok(client, "cancel_loop", task_id=task_id)
    assert cancelled["status"] == "cancelled"
    listed = await ok(client, "list_tasks")
    assert [(t["path"], t["task_id"], t["status"]) for t in listed["tasks"]] == [
        ("Specs/example/tasks.md", None, None),
        ("Specs/feat/tasks.md", task_id, "cancelled"),
    ]
    assert not (tmp_path / "escaped").exists()


def test_an_agent_drives_a_run_over_stdio(repo: Akira, tmp_path: Path) -> None:
    async def session() -> None:
        async with over_stdio(repo.root) as client:
            await a_night_driven_by_an_agent(client, repo, tmp_path)

    asyncio.run(session())


@pytest.mark.slow
def test_an_agent_drives_a_run_over_http_with_a_token(repo: Akira, tmp_path: Path) -> None:
    async def session(url: str) -> None:
        async with over_http(url) as client:
            await a_night_driven_by_an_agent(client, repo, tmp_path)

    with http_server(repo.root, "--token", TOKEN) as served:
        url = served.url
        request = urllib.request.Request(url, data=b"{}", headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 401
        wrong = urllib.request.Request(url, data=b"{}", headers={"Authorization": "Bearer nope"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(wrong, timeout=30)
        assert refused.value.code == 401
        asyncio.run(session(url))


@pytest.mark.slow
def test_http_beyond_this_machine_needs_a_token(repo: Akira) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "akira_cli", "mcp", "--root", str(repo.root), "--http", "0.0.0.0:0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=server_env(),
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "akira: error: --http 0.0.0.0:0 listens beyond this machine, so it needs --token-file FILE "
        "(clients send 'Authorization: Bearer TOKEN'); or listen on 127.0.0.1"
    ]


@pytest.mark.slow
def test_on_stdio_nothing_but_the_protocol_reaches_stdout(repo: Akira, tmp_path: Path) -> None:
    """A start that warns (a key too short to mask, Python warnings on) and a run whose steps
    print: every line on stdout is a JSON-RPC message, and the warning is on stderr."""
    server = RawStdio(repo.root, env={**server_env(), "OPENAI_API_KEY": "short", "PYTHONWARNINGS": "always"})
    assert server.hello()["serverInfo"]["name"] == "akira"
    (tmp_path / "gate").touch()
    started = server.ask(2, "tools/call", {"name": "start_loop", "arguments": {"task": "Specs/feat"}})[
        "result"
    ]
    assert not started.get("isError"), started
    task_id = started["structuredContent"]["task_id"]
    repo.wait_for(lambda: repo.state(task_id).status == "completed", DEADLINE, "the run to complete")
    logs = server.ask(3, "tools/call", {"name": "loop_logs", "arguments": {"task_id": task_id}})
    assert logs["result"]["structuredContent"]["events"]
    _, err = server.close()
    seen = server.lines
    assert seen and all(json.loads(line)["jsonrpc"] == "2.0" for line in seen if line.strip())
    assert all(line.strip() for line in seen)
    assert "OPENAI_API_KEY is shorter than" in err


@pytest.mark.slow
def test_a_start_racing_the_cli_runs_the_task_once(repo: Akira, tmp_path: Path) -> None:
    """`start_loop` and `akira loop start` on the same task at the same moment: one of them
    starts it, the other is refused with one line, and each step runs once. The step waits at a
    gate until both have answered: a run that completed first would have moved the spec to
    Done/, and the other would be refused for a task file it no longer finds."""
    ledger, gate = tmp_path / "ledger", tmp_path / "gate"
    repo.write_task(
        "race",
        f"""
        # Implementation Plan

        - [ ] 1. Count
          - Run: `echo run >> {ledger}; while [ ! -e {gate} ]; do sleep 0.05; done; echo one > race1.txt`
          - Exists: `race1.txt`
        """,
    )
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-q", "-m", "race")

    async def race() -> tuple[tuple[bool, str, dict[str, Any] | None], subprocess.CompletedProcess[str]]:
        async with over_stdio(repo.root) as client:
            await ok(client, "list_tasks")  # the server is up before the race starts
            cli = asyncio.create_task(
                asyncio.to_thread(
                    subprocess.run,
                    [*START, "--root", str(repo.root)],
                    capture_output=True,
                    text=True,
                    timeout=DEADLINE,
                )
            )
            tool = await call(client, "start_loop", task="Specs/race/tasks.md")
            if tool[0]:  # refused: the CLI's run waits at the gate
                gate.touch()
                return tool, await cli
            answered = await cli  # started: the CLI is refused while the run waits at the gate
            gate.touch()
            return tool, answered

    (error, text, data), cli = asyncio.run(race())
    states = [
        p for p in repo.state_files() if repo.state(p.stem.removeprefix("autonomous_loop_")).feature == "race"
    ]
    assert len(states) == 1, states
    task_id = states[0].stem.removeprefix("autonomous_loop_")
    repo.wait_for(lambda: repo.state(task_id).status == "completed", DEADLINE, "the run to complete")
    assert ledger.read_text() == "run\n"
    refusals = [text] if error else []
    refusals += (
        [line for line in cli.stderr.splitlines() if line.startswith("akira: error:")]
        if cli.returncode
        else []
    )
    assert len(refusals) == 1, (text, cli.returncode, cli.stderr)
    assert task_id in refusals[0] and re.search(
        r"already (being run by process \d+|has an unfinished loop)", refusals[0]
    )
    if not error:
        assert data is not None and data["task_id"] == task_id


@pytest.mark.slow
def test_only_akira_mcp_imports_the_sdk() -> None:
    """`akira --help` and the other commands start without the MCP SDK (and its web stack)."""
    probe = (
        "import sys\nfrom akira_cli.cli import main\nmain(sys.argv[1:])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'starlette', 'uvicorn')))"
    )
    for args in (["--help"], ["mcp", "--help"]):
        done = subprocess.run(
            [sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=60
        )
        assert done.stdout.strip().splitlines()[-1] == "[]", (args, done.stdout[-500:])
