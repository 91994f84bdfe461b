"""What an MCP client expects of `akira mcp`, and the server's bounds, driven by the SDK's client
over stdio (and raw JSON-RPC where the client hides the wire): annotations and output schemas,
the text block as the structured result's JSON, warnings as log messages, reports and logs as
resources, no prompts advertised, argument bounds in the schemas, one-line refusals, at most
`mcp.max_running` runs, at most 16 KiB of guidance, and no task file a step wrote started."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from akira_cli.state.store import StateStore
from tests.support.git import git, git_workspace
from tests.support.mcp import RawStdio, call, over_stdio, server_env
from tests.support.workspace import Akira
from tests.support.workspace import akira as run_akira

pytest.importorskip("mcp")

DEADLINE = 120.0
GATED = """\
# Implementation Plan

- [ ] 1. Wait at the gate
  - Run: `while [ ! -e {gate} ]; do sleep 0.05; done; echo {name} > {name}.txt`
  - Exists: `{name}.txt`
"""


def commit(root: Path, message: str = "more") -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    error, text, _ = await call(client, tool, **arguments)
    assert error, (tool, text)
    assert text.startswith("akira: error: ") and "\n" not in text, text
    return text


def test_tools_say_what_they_do_and_answer_as_json(tmp_path: Path) -> None:
    repo = git_workspace(tmp_path, "- [x] 1. Done already\n  - Run: `true`\n")
    seen: list[Any] = []

    async def logged(params: Any) -> None:
        seen.append(params)

    async def session() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "akira_cli", "mcp", "--root", str(repo.root)],
            env=server_env(),
        )
        async with Client(params, logging_callback=logged, log_level="info") as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert all(
                tool.output_schema and tool.output_schema["type"] == "object" for tool in tools.values()
            )
            readers = {
                name for name, tool in tools.items() if tool.annotations and tool.annotations.read_only_hint
            }
            assert readers == {"list_tasks", "loop_status", "loop_progress", "loop_logs", "read_report"}
            destroys = {
                name for name, tool in tools.items() if tool.annotations and tool.annotations.destructive_hint
            }
            assert destroys == {"undo_step", "cancel_loop"}
            schema = tools["start_loop"].input_schema["properties"]["parallel"]["anyOf"][0]
            assert schema["minimum"] == 1
            assert tools["loop_logs"].input_schema["properties"]["tail"]["minimum"] == 1
            capabilities = client.server_capabilities
            assert capabilities is not None
            assert capabilities.logging is not None and capabilities.prompts is None

            result = await client.call_tool("list_tasks", {})
            assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]

            # Bounds in the schemas, each refusal one line naming the argument.
            text = await refused(client, "start_loop", task="Specs/example/tasks.md", parallel=0)
            assert (
                text
                == "akira: error: start_loop: parallel: input should be greater than or equal to 1 (got 0)"
            )
            text = await refused(client, "loop_logs", task_id="x", tail=-5)
            assert "tail: input should be greater than or equal to 1 (got -5)" in text
            await refused(client, "loop_status", task_id="")
            # A finished task: refused, never a task id "".
            text = await refused(client, "start_loop", task="Specs/feat/tasks.md")
            assert "Specs/feat/tasks.md" in text and "task_id" not in text
            # Paths as the client gave them.
            text = await refused(client, "start_loop", task="Specs/missing/tasks.md")
            assert text.startswith("akira: error: Specs/missing/tasks.md: task file not found"), text
            assert str(repo.root) not in text
            text = await refused(client, "loop_progress", task_id="nothing-like-it")
            assert text.endswith("; call loop_status to list loops") and "akira loop" not in text

            # A warning for the call (a near-miss directive) reaches the client as a log message.
            repo.write_task("warned", "- [ ] 1. Warned\n  - Run: `true`\n  - Verify: `true` and some prose\n")
            commit(repo.root)
            error, text, data = await call(client, "start_loop", task="Specs/warned/tasks.md")
            assert not error and data is not None, text
            assert any("Verify" in str(params.data) and params.level == "warning" for params in seen), seen

            # Reports and logs are resources.
            task_id = data["task_id"]
            repo.wait_for(lambda: repo.state(task_id).status == "completed", DEADLINE, "the run to complete")
            report = await client.read_resource(f"akira://task/{task_id}/report")
            assert task_id in report.contents[0].text  # type: ignore[union-attr]
            logs = await client.read_resource(f"akira://task/{task_id}/logs")
            assert json.loads(logs.contents[0].text)["task_id"] == task_id  # type: ignore[union-attr]

    asyncio.run(session())


def test_prompts_are_not_served_and_ask_for_none_writes_no_traceback(akira: Akira) -> None:
    server = RawStdio(akira.root)
    assert "prompts" not in (capabilities := server.hello()["capabilities"]) and "logging" in capabilities
    assert server.ask(2, "prompts/get", {"name": "x"})["error"]["code"] == -32601
    assert server.ask(3, "prompts/list")["error"]["code"] == -32601  # not found: none served
    _, err = server.close()
    assert "Traceback" not in err


def test_a_third_run_beyond_max_running_is_refused_and_guidance_is_bounded(
    akira: Akira, tmp_path: Path
) -> None:
    """In a workspace without git: runs of one repository at once would share its HEAD."""
    gate, repo = tmp_path / "gate", akira
    for name in ("feat", "two", "three"):
        repo.write_task(name, GATED.format(gate=gate, name=name))
    repo.write_config("mcp:\n  max_running: 2\n")

    async def session() -> None:
        async with over_stdio(repo.root) as client:
            first = (await call(client, "start_loop", task="Specs/feat/tasks.md"))[2]
            second = (await call(client, "start_loop", task="Specs/two/tasks.md"))[2]
            assert first is not None and second is not None
            text = await refused(client, "start_loop", task="Specs/three/tasks.md")
            assert text.startswith("akira: error: mcp.max_running is 2, and 2 runs this server started")
            assert first["task_id"] in text and second["task_id"] in text
            assert not (await call(client, "loop_status", task_id="three"))[2]  # never started
            await call(client, "stop_loop", task_id=first["task_id"])
            gate.touch()
            repo.wait_for(
                lambda: repo.state(first["task_id"]).status == "paused", DEADLINE, "the first to pause"
            )
            repo.wait_for(lambda: repo.state(second["task_id"]).status == "completed", DEADLINE, "the second")
            third = await call(client, "start_loop", task="Specs/three/tasks.md")
            assert not third[0], third[1]
            paused.append(first["task_id"])

            # 17 KiB of guidance: refused by the schema, before any run is touched.
            text = await refused(client, "resume_loop", task_id=first["task_id"], guidance="g" * 17 * 1024)
            assert "guidance: string should have at most 16384 characters" in text

    paused: list[str] = []
    asyncio.run(session())
    # The CLI's --guidance shares the bound (16 KiB of UTF-8: 9,000 two-byte characters are more).
    done = run_akira(repo.root, "loop", "resume", "--task-id", paused[0], "--guidance", "é" * 9000)
    assert done.returncode == 1 and done.stderr.strip().splitlines() == [
        "akira: error: the guidance is 17.6 KiB, more than the 16 KiB akira takes as guidance; "
        "say it shorter (it goes whole into the agent's prompt)"
    ]
    # And so does the ## Guidance of an escalation file: refused, and the file left in place.
    request = repo.root / "Needs_Action" / f"escalation_{paused[0]}.md"
    request.write_text("# Escalation\n\n## Guidance\n\n" + "g" * 17 * 1024 + "\n")
    done = run_akira(repo.root, "loop", "resume", "--task-id", paused[0])
    assert done.returncode == 1 and done.stderr.strip().splitlines() == [
        f"akira: error: the ## Guidance of Needs_Action/escalation_{paused[0]}.md is 17.0 KiB, more than "
        "the 16 KiB akira takes as guidance; say it shorter (it goes whole into the agent's prompt)"
    ]
    assert request.exists() and repo.state(paused[0]).status == "paused"
    # the paused run's process waits for a resume: it must not outlive the test
    stopped = run_akira(repo.root, "loop", "stop", "--task-id", paused[0], "--force")
    assert stopped.returncode == 0, stopped.stderr
    repo.wait_for(
        lambda: StateStore(repo.root / ".state").lock(paused[0]).holder() is None, DEADLINE, "its exit"
    )


def test_a_task_file_a_step_wrote_is_listed_as_such_and_not_started(tmp_path: Path) -> None:
    repo = git_workspace(tmp_path)
    repo.write_task("planted", "- [ ] 1. Setup\n  - Run: `touch planted-ran`\n")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-q", "-m", "Step 1\n\nAkira-Task: task_1\nAkira-Step: 1\n")
    repo.write_task("loose", "- [ ] 1. Loose\n  - Run: `true`\n")

    async def session() -> None:
        async with over_stdio(repo.root) as client:
            listed = (await call(client, "list_tasks"))[2]
            assert listed is not None
            origins = {task["path"]: task["origin"] for task in listed["tasks"]}
            assert origins == {
                "Specs/example/tasks.md": "person",
                "Specs/feat/tasks.md": "person",
                "Specs/loose/tasks.md": "uncommitted",
                "Specs/planted/tasks.md": "step",
            }
            text = await refused(client, "start_loop", task="Specs/planted/tasks.md")
            assert text == (
                "akira: error: Specs/planted/tasks.md was written by an akira step, not by a person; "
                "a person reads it and starts it from the command line"
            )
            text = await refused(client, "start_loop", task="Specs/planted")  # its folder: the same file
            assert "written by an akira step" in text

    asyncio.run(session())
    assert not (repo.root / "planted-ran").exists()


def test_a_waiting_start_sends_progress_and_a_cancelled_one_starts_no_run(akira: Akira) -> None:
    """The project check runs once before the first step, and waits at a gate: `start_loop`
    waits with it. Meanwhile the client hears progress; a start it cancels there starts no run
    (the next start waits for the cancelled one's thread: they share the server's start lock)."""
    gate, ledger = akira.root / "gate", akira.root / "checks.log"
    check = f"echo ran >> {ledger}; while [ ! -e {gate} ]; do sleep 0.05; done"
    akira.write_config(f"checks: [{json.dumps(check)}]\n")
    for name in ("one", "two", "three"):
        akira.write_task(name, f"- [ ] 1. Write {name}\n  - Run: `echo {name} > {name}.txt`\n")
    server = RawStdio(akira.root, stderr=subprocess.DEVNULL)

    def start(number: int, task: str) -> None:
        arguments = {"task": f"Specs/{task}/tasks.md"}
        params = {"name": "start_loop", "arguments": arguments, "_meta": {"progressToken": f"p{number}"}}
        server.send({"id": number, "method": "tools/call", "params": params})

    try:
        server.hello()
        start(2, "one")
        server.until(
            lambda m: m.get("method") == "notifications/progress" and m["params"]["progressToken"] == "p2"
        )
        gate.touch()
        answer = server.until(lambda m: m.get("id") == 2)
        assert not answer["result"].get("isError"), answer
        gate.unlink()
        start(3, "two")
        akira.wait_for(lambda: ledger.read_text().count("ran") == 2, DEADLINE, "the second start's check")
        server.send(
            {"method": "notifications/cancelled", "params": {"requestId": 3, "reason": "changed my mind"}}
        )
        start(4, "three")
        gate.touch()
        answer = server.until(lambda m: m.get("id") == 4)
        assert not answer["result"].get("isError"), answer
    finally:
        server.close()
    seen = server.seen
    assert not any(message.get("id") == 3 and "result" in message for message in seen)
    features = {akira.state(p.stem.removeprefix("autonomous_loop_")).feature for p in akira.state_files()}
    assert features == {"one", "three"}


def test_a_task_file_outside_git_and_the_spec_folders_is_not_started(akira: Akira) -> None:
    """Without git no commit says who wrote a file; a step may write anywhere but the spec
    folders, so a task file elsewhere (`notes/tasks.md`) is not started over MCP."""
    notes = akira.root / "notes" / "tasks.md"
    notes.parent.mkdir()
    notes.write_text(f"- [ ] 1. Setup\n  - Run: `touch {akira.root}/planted-ran`\n")
    akira.write_task("mine", "- [ ] 1. Mine\n  - Run: `true`\n")

    async def session() -> None:
        async with over_stdio(akira.root) as client:
            text = await refused(client, "start_loop", task="notes/tasks.md")
            assert text.startswith("akira: error: notes/tasks.md is neither in a spec folder nor in git")
            error, text, _ = await call(client, "start_loop", task="Specs/mine/tasks.md")
            assert not error, text

    asyncio.run(session())
    assert not (akira.root / "planted-ran").exists()
