"""A user's agent drives akira: the real Claude Code (the pinned version) as the MCP client of
`akira mcp`, against a scripted model server whose replies call `mcp__akira__start_loop` and
then `mcp__akira__loop_status` until the run has completed.

In `-p` mode Claude Code may send its first request before the MCP server has connected,
offering a `WaitForMcpServers` tool instead of the server's; the scripted model calls it until
akira's tools are offered, as a model would. Claude Code hands the model each tool's structured
result as JSON: the test reads the run's progress from there, as the model does."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from realcli.clis import RealCli
from realcli.skips import skip_module_unless_installable
from tests.support.mcp import http_server
from tests.support.servers.anthropic_server import Anthropic
from tests.support.servers.scripted import Script, ScriptedServer, ToolCall
from tests.support.workspace import Akira

skip_module_unless_installable(("claude",))
POLLS = 200
"""Status polls before the scripted model gives up (each is one request to the server)."""
STEPS = """\
# Implementation Plan

- [ ] 1. Write one
  - Run: `echo one > one.txt`
  - Exists: `one.txt`
- [ ] 2. Write two
  - Run: `echo two > two.txt`
  - Exists: `two.txt`
"""


def tool_results(body: dict[str, Any]) -> list[tuple[str, Any]]:
    """The tool calls of the conversation so far, each with its result (JSON when it is)."""
    names: dict[str, str] = {}
    found: list[tuple[str, Any]] = []
    for message in body.get("messages") or []:
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            if block.get("type") == "tool_use":
                names[block["id"]] = block["name"]
            elif block.get("type") == "tool_result":
                content = block.get("content")
                text = (
                    content if isinstance(content, str) else "".join(b.get("text", "") for b in content or [])
                )
                try:
                    result: Any = json.loads(text)
                except ValueError:
                    result = text
                found.append((names.get(block["tool_use_id"], "?"), result))
    return found


def model(body: dict[str, Any]) -> ToolCall | None:
    """The scripted model: wait for akira's tools, start the run, poll it until it completes."""
    offered = {tool.get("name") for tool in body.get("tools") or []}
    results = tool_results(body)
    if "mcp__akira__start_loop" not in offered:
        waits = sum(1 for name, _ in results if name == "WaitForMcpServers")
        return ("WaitForMcpServers", {}) if "WaitForMcpServers" in offered and waits < 20 else None
    started = [result for name, result in results if name == "mcp__akira__start_loop"]
    if not started:
        return ("mcp__akira__start_loop", {"task": "Specs/feat/tasks.md"})
    if not isinstance(started[-1], dict):
        return None  # refused: the final answer says so
    polls = [result for name, result in results if name == "mcp__akira__loop_status"]
    if polls and isinstance(polls[-1], dict) and polls[-1].get("status") in ("completed", "needs_action"):
        return None
    if len(polls) >= POLLS:
        return None
    return ("mcp__akira__loop_status", {"task_id": started[-1]["task_id"]})


@pytest.mark.slow
@pytest.mark.timeout(func_only=True)  # the install before the first test is no part of it
@pytest.mark.parametrize("real_cli", ["claude"], indirect=True)
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_claude_code_starts_a_run_and_polls_it_to_completion(
    akira: Akira, tmp_path: Path, real_cli: RealCli, transport: str
) -> None:
    """Over stdio Claude Code starts akira; over HTTP it sends the token in a header, as the
    README's config block says."""
    akira.write_task("feat", STEPS)
    config = tmp_path / "mcp.json"
    script = Script(workdir=akira.root, plan=model, answer="The run has completed.")
    with contextlib.ExitStack() as stack:
        server: dict[str, Any]
        if transport == "http":
            token = "claude-code-token-4f2a9c7e1b3d"
            (tmp_path / "token").write_text(token + "\n")
            served = stack.enter_context(http_server(akira.root, "--token-file", str(tmp_path / "token")))
            server = {"type": "http", "url": served.url, "headers": {"Authorization": f"Bearer {token}"}}
        else:
            server = {
                "command": sys.executable,
                "args": ["-m", "akira_cli", "mcp", "--root", str(akira.root)],
            }
        config.write_text(json.dumps({"mcpServers": {"akira": server}}), encoding="utf-8")
        scripted = stack.enter_context(ScriptedServer(Anthropic(), script))
        env = real_cli.environment(tmp_path / "home", scripted.url, akira.root)
        env["PYTHONPATH"] = os.pathsep.join(sys.path)  # akira as this test imports it
        env["MCP_TIMEOUT"] = "120000"  # Claude Code's wait for a server to start (ms): a loaded CI machine
        argv = [str(real_cli.executable), "-p", "--output-format", "json", "--mcp-config", str(config)]
        argv += ["--strict-mcp-config", "--allowedTools", "mcp__akira"]
        done = subprocess.run(
            argv,
            input="Run the feat spec with akira and tell me when it is done.",
            cwd=akira.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        last = scripted.main_requests()[-1].body
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["result"] == "The run has completed."
    results = tool_results(last)
    started = [result for name, result in results if name == "mcp__akira__start_loop"]
    assert len(started) == 1 and isinstance(started[0], dict), results
    task_id = started[0]["task_id"]
    assert started[0] == {"task_id": task_id, "status": "running", "pid": started[0]["pid"]}
    polls = [result for name, result in results if name == "mcp__akira__loop_status"]
    assert polls and all(isinstance(poll, dict) and poll["task_id"] == task_id for poll in polls)
    assert polls[-1]["status"] == "completed" and polls[-1]["group"] == "Completed"
    assert akira.state(task_id).status == "completed"
    assert (akira.root / "one.txt").read_text() == "one\n" and (akira.root / "two.txt").read_text() == "two\n"
