"""The scripted model servers on their own (no CLI needed), and the skip line a machine without
npm prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from akira_cli.testing.anthropic_server import Anthropic
from akira_cli.testing.gemini_server import Gemini
from akira_cli.testing.openai_servers import ChatCompletions, Responses
from akira_cli.testing.scripted import Script, ScriptedServer, http, plan_limit, usage_limit

ROOT = Path(__file__).resolve().parents[2]


def post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


CLAUDE_TURN = {
    "model": "m",
    "stream": True,
    "tools": [{"name": "Write"}],
    "messages": [{"role": "user", "content": "go"}],
}


def test_anthropic_faults_come_first_then_the_write_then_the_answer(tmp_path: Path) -> None:
    script = Script(tmp_path, faults=[http(529, 2), plan_limit(1, 3600)])
    with ScriptedServer(Anthropic(), script) as server:
        url = f"{server.url}/v1/messages?beta=true"
        statuses = [post(url, CLAUDE_TURN)[0] for _ in range(3)]
        assert statuses == [529, 529, 429]
        status, headers, body = post(url, {**CLAUDE_TURN, "stream": False})  # the limit was answered once
        assert status == 200 and "anthropic-ratelimit-unified-status" not in {k.lower() for k in headers}
        block = json.loads(body)["content"][0]
        assert block["name"] == "Write" and block["input"]["file_path"] == str(tmp_path / "hello.txt")
        status, headers, body = post(url, CLAUDE_TURN)
        assert (
            status == 200 and headers["Content-Type"] == "text/event-stream" and b"input_json_delta" in body
        )
        done = {
            **CLAUDE_TURN,
            "stream": False,
            "messages": [{"role": "user", "content": [{"type": "tool_result"}]}],
        }
        assert json.loads(post(url, done)[2])["content"] == [
            {"type": "text", "text": "Done: wrote hello.txt."}
        ]
        side = post(url, {"model": "m", "messages": [{"role": "user", "content": "title?"}]})
        assert side[0] == 200 and [r.main for r in server.requests][-1] is False


def test_a_plan_limit_carries_the_unified_headers_claude_reads(tmp_path: Path) -> None:
    with ScriptedServer(Anthropic(), Script(tmp_path, faults=[plan_limit(1, 3600)])) as server:
        status, headers, _ = post(f"{server.url}/v1/messages", CLAUDE_TURN)
    lowered = {k.lower(): v for k, v in headers.items()}
    assert status == 429 and lowered["anthropic-ratelimit-unified-representative-claim"] == "five_hour"
    assert int(lowered["anthropic-ratelimit-unified-reset"]) > 0


def test_responses_usage_limit_and_apply_patch(tmp_path: Path) -> None:
    turn = {"model": "m", "tools": [{"type": "custom", "name": "apply_patch"}], "input": []}
    with ScriptedServer(Responses(), Script(tmp_path, faults=[usage_limit(1, 60)])) as server:
        status, _, body = post(f"{server.url}/v1/responses", turn)
        assert status == 429 and json.loads(body)["error"]["type"] == "usage_limit_reached"
        status, _, body = post(f"{server.url}/v1/responses", turn)
        item = json.loads(body)["output"][0]
        assert item["type"] == "custom_tool_call" and "*** Add File: hello.txt" in item["input"]


def test_chat_and_gemini_refuse_a_bad_key_as_their_providers_do(tmp_path: Path) -> None:
    script = Script(tmp_path, bad_key=True)
    with ScriptedServer(ChatCompletions(), script) as chat, ScriptedServer(Gemini(), script) as gemini:
        status, _, body = post(f"{chat.url}/v1/chat/completions", {"messages": []})
        assert status == 401 and json.loads(body)["error"]["code"] == "invalid_api_key"
        status, _, body = post(f"{gemini.url}/v1beta/models/g:generateContent", {"contents": []})
        assert status == 400 and "API_KEY_INVALID" in body.decode()


def test_gemini_side_calls_get_json_that_fits_their_schema(tmp_path: Path) -> None:
    schema = {"type": "OBJECT", "properties": {"score": {"type": "INTEGER"}, "why": {"type": "STRING"}}}
    body = {"contents": [], "generationConfig": {"responseJsonSchema": schema}}
    with ScriptedServer(Gemini(), Script(tmp_path)) as server:
        _, _, raw = post(f"{server.url}/v1beta/models/g:generateContent", body)
    text = json.loads(raw)["candidates"][0]["content"]["parts"][0]["text"]
    assert json.loads(text) == {"score": 1, "why": "x"}


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("report", ["-ra", "-rN"])
def test_no_npm_skips_with_one_line_that_says_what_to_install(tmp_path: Path, report: str) -> None:
    """pytest's own skip list (`-ra`, the project's default) or, without one, the summary hook:
    either way one line, and nothing installed."""
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty), "AKIRA_TEST_CLIS": str(tmp_path / "cache")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            report,
            "-p",
            "no:cacheprovider",
            "tests/realcli/test_real_clis.py",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=110,
    )
    lines = [line for line in done.stdout.splitlines() if "no npm on PATH" in line]
    assert len(lines) == 1, done.stdout
    assert "real claude 2.1.197, codex 0.169.0, gemini 0.61.0 not tested: no npm on PATH: " in lines[0]
    assert lines[0].endswith("install Node.js 20+ with npm (e.g. `apt-get install nodejs npm`)")
    assert "1 skipped" in done.stdout and not (tmp_path / "cache").exists()


FAKE_NPM = """#!/bin/sh
echo "$PYTEST_CURRENT_TEST" >> "$NPM_CALLS"
echo "no registry here" >&2
exit 1
"""
"""An npm that notes the test it was run for (none at collection), then fails: no network."""


def with_fake_npm(tmp_path: Path) -> dict[str, str]:
    folder = tmp_path / "bin"
    folder.mkdir()
    for name, script in (("npm", FAKE_NPM), ("node", "#!/bin/sh\nexit 1\n")):
        (folder / name).write_text(script)
        (folder / name).chmod(0o755)
    cache, calls = tmp_path / "cache", tmp_path / "npm-calls"
    return {
        **os.environ,
        "PATH": f"{folder}:/usr/bin:/bin",
        "AKIRA_TEST_CLIS": str(cache),
        "NPM_CALLS": str(calls),
    }


def pytest_run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=280)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_collecting_the_real_cli_tests_installs_nothing(tmp_path: Path) -> None:
    env = with_fake_npm(tmp_path)
    done = pytest_run(env, "--collect-only", "tests/realcli/test_real_clis.py")
    assert not (tmp_path / "npm-calls").exists() and not (tmp_path / "cache").exists()
    assert "installing" not in done.stdout + done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tests/realcli/test_real_clis.py::TestNpmClis::test_ok[claude]" in done.stdout


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_real_cli_is_installed_when_its_first_test_is_about_to_run(tmp_path: Path) -> None:
    """In that test's setup (where `timeout(func_only=True)` leaves it out of the test's time), once,
    and a failed install errors the test with what the installer said."""
    env = with_fake_npm(tmp_path)
    done = pytest_run(env, "tests/realcli/test_real_clis.py", "-k", "test_ok and (claude or codex)")
    calls = (tmp_path / "npm-calls").read_text().splitlines()
    first = "tests/realcli/test_real_clis.py::TestNpmClis::test_ok[claude] (setup)"
    assert calls == [first, first], done.stdout  # claude's and codex's, both before the first test
    assert (
        "installing claude 2.1.197 into " in done.stdout and "installing codex 0.169.0 into " in done.stdout
    )
    assert "installing claude 2.1.197 failed: " in done.stdout and "no registry here" in done.stdout
    assert "2 errors" in done.stdout, done.stdout
