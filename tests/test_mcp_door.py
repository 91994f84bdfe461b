"""The door of `akira mcp --http` (docs/mcp.md): a token always, loopback too; Host and Origin
checked on every loopback address in every spelling; the token never on a command line nor in
a step's environment; and a local user who is not the server's owner gets no tool. Real servers
on 127.0.0.1, 127.0.0.2 and [::1], real HTTP requests with forged headers."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.git import git, git_workspace
from tests.support.mcp import TOKEN, call, http_server, over_http, server_env
from tests.support.users import SETPRIV, nobody_python
from tests.support.workspace import Akira

pytest.importorskip("mcp")

HELLO = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
)
GATED = """\
# Implementation Plan

- [ ] 1. Dump the environment, then wait at the gate
  - Run: `env > env.txt; tr '\\0' ' ' < /proc/self/cmdline > argv.txt; while [ ! -e {gate} ]; do sleep 0.05; done`
  - Exists: `env.txt`
"""


def post(host: str, port: int, headers: dict[str, str]) -> int:
    """The status of an `initialize` POST to `host:port`, with exactly `headers` (Host too)."""
    connection = http.client.HTTPConnection(host, port, timeout=30)
    try:
        sent = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        }
        connection.request("POST", "/mcp", HELLO, headers=sent)
        return connection.getresponse().status
    finally:
        connection.close()


def test_on_loopback_akira_makes_a_token_and_a_request_without_it_gets_401(akira: Akira) -> None:
    with http_server(akira.root) as served:
        kept = akira.root / ".state" / "mcp_token"
        assert served.line.startswith(f"akira: MCP server on {served.url}; its token is in .state/mcp_token")
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600
        token = kept.read_text().strip()
        assert len(token) >= 32
        here = f"127.0.0.1:{served.port}"
        assert post("127.0.0.1", served.port, {"Host": here}) == 401
        assert post("127.0.0.1", served.port, {"Host": here, "Authorization": "Bearer nope"}) == 401
        assert post("127.0.0.1", served.port, {"Host": here, "Authorization": f"Bearer {token}x"}) == 401
        assert post("127.0.0.1", served.port, {"Host": here, "Authorization": f"Bearer {token}"}) == 200
    with http_server(akira.root) as again:  # the kept token is read again: a client keeps working
        assert kept.read_text().strip() == token
        assert (
            post(
                "127.0.0.1",
                again.port,
                {"Host": f"localhost:{again.port}", "Authorization": f"Bearer {token}"},
            )
            == 200
        )


@pytest.mark.parametrize(
    ("address", "connect", "spellings", "others"),
    [
        (
            "127.0.0.1:0",
            "127.0.0.1",
            ["127.0.0.1", "127.1", "0x7f.0.0.1", "localhost"],
            ["127.0.0.2", "[::1]"],
        ),
        ("127.0.0.2:0", "127.0.0.2", ["127.0.0.2", "127.0.2", "localhost"], ["127.0.0.1", "[::1]"]),
        ("[::1]:0", "::1", ["[::1]", "[0:0:0:0:0:0:0:1]", "localhost"], ["127.0.0.1", "[::2]"]),
    ],
)
def test_a_forged_host_or_origin_is_refused_on_every_loopback_address(
    akira: Akira, address: str, connect: str, spellings: list[str], others: list[str]
) -> None:
    """DNS rebinding: a page of evil.example whose name now points at this machine sends its
    own Host and Origin. Only this server's address, in any spelling, or localhost, with its
    port, is let through; the token does not make a forged Host right."""
    with http_server(akira.root, "--token", TOKEN, address=address) as served:
        port, auth = served.port, {"Authorization": f"Bearer {TOKEN}"}
        for name in spellings:
            assert post(connect, port, {**auth, "Host": f"{name}:{port}"}) == 200, name
            assert (
                post(connect, port, {**auth, "Host": f"{name}:{port}", "Origin": f"http://{name}:{port}"})
                == 200
            )
        for name in [*others, "evil.example", "127.0.0.1.evil.example", "localhost.evil.example"]:
            assert post(connect, port, {**auth, "Host": f"{name}:{port}"}) == 421, name
        right = f"{spellings[0]}:{port}"
        assert post(connect, port, {**auth, "Host": f"{spellings[0]}:{port + 1}"}) == 421
        assert post(connect, port, {**auth, "Host": f"{right} x"}) == 421
        for origin in ("http://evil.example", f"http://evil.example:{port}", f"https://{right}", "null"):
            assert post(connect, port, {**auth, "Host": right, "Origin": origin}) == 403, origin
        assert post(connect, port, {"Host": right}) == 401


def test_127_1_is_loopback(akira: Akira) -> None:
    with http_server(akira.root, address="127.1:0") as served:
        assert served.url.startswith("http://127.0.0.1:")
        token = (akira.root / ".state" / "mcp_token").read_text().strip()
        assert (
            post(
                "127.0.0.1", served.port, {"Host": f"127.1:{served.port}", "Authorization": f"Bearer {token}"}
            )
            == 200
        )


def test_a_port_already_taken_is_one_line(akira: Akira) -> None:
    with http_server(akira.root) as served:
        command = [sys.executable, "-m", "akira_cli", "mcp", "--root", str(akira.root)]
        taken = subprocess.run(
            [*command, "--http", f"127.0.0.1:{served.port}"], capture_output=True, text=True, timeout=60
        )
    assert taken.returncode == 1 and taken.stderr == (
        f"akira: error: --http 127.0.0.1:{served.port}: cannot listen there (Address already in use); "
        "name another port, or 0 for a free one\n"
    ), taken.stderr


def test_a_short_token_and_an_unreadable_token_file_are_one_line(akira: Akira, tmp_path: Path) -> None:
    for args, wanted in (
        (["--token", "short"], "akira: error: --token: the token has 5 characters, fewer than 16"),
        (
            ["--token-file", str(tmp_path / "none")],
            f"akira: error: --token-file {tmp_path / 'none'}: cannot read it",
        ),
        (
            ["--token", TOKEN, "--token-file", str(tmp_path)],
            "akira: error: give --token or --token-file, not both",
        ),
    ):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "akira_cli",
                "mcp",
                "--root",
                str(akira.root),
                "--http",
                "127.0.0.1:0",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env=server_env(),
        )
        assert done.returncode != 0 and len(done.stderr.splitlines()) == 1, done.stderr
        assert done.stderr.startswith(wanted), done.stderr


def command_lines() -> list[bytes]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found.append((entry / "cmdline").read_bytes())
            except OSError:
                continue
    return found


@pytest.mark.slow
@pytest.mark.parametrize("given", ["token-file", "environment"])
def test_the_token_is_in_no_command_line_and_no_step(tmp_path: Path, given: str) -> None:
    """A run started over HTTP, its step waiting at a gate: no process's command line holds the
    token (the server's, the run's, the step's), and the step's environment has neither the
    token nor any server variable, sandboxed or not."""
    gate = tmp_path / "gate"
    repo = git_workspace(tmp_path, GATED.format(gate=gate))
    # what the step dumps holds its own proxy password: committed, push protection would refuse it
    (repo.root / ".gitignore").write_text("argv.txt\nenv.txt\n")
    git(repo.root, "add", ".gitignore")
    git(repo.root, "commit", "-qm", "the step's dumps are not the work")
    secret = "door-token-7c1e5a9b3d2f4e6a8c0b"
    if given == "token-file":
        (tmp_path / "token").write_text(secret + "\n")
        args, env = ["--token-file", str(tmp_path / "token")], server_env()
    else:
        args, env = [], server_env(AKIRA_MCP_TOKEN=secret)

    async def drive(url: str) -> str:
        async with over_http(url, secret) as client:
            error, text, data = await call(client, "start_loop", task="Specs/feat/tasks.md")
            assert not error and data is not None, text
            return str(data["task_id"])

    with http_server(repo.root, *args, env=env) as served:
        task_id = asyncio.run(drive(served.url))
        repo.wait_for(lambda: (repo.root / "argv.txt").exists(), 120, "the step to run")
        lines = command_lines()
        gate.touch()
        repo.wait_for(lambda: repo.state(task_id).status == "completed", 120, "the run to complete")
    assert lines and not any(secret.encode() in line for line in lines)
    dumped = (repo.root / "env.txt").read_text()
    assert secret not in dumped and "AKIRA_MCP" not in dumped
    assert "AKIRA_TASK_ID=" in dumped


@pytest.mark.slow
@pytest.mark.skipif(
    os.geteuid() != 0 or nobody_python() is None, reason="needs root and a Python for uid 65534"
)
def test_another_local_user_gets_no_tool(akira: Akira) -> None:
    """A root-owned server on 127.0.0.1: uid 65534 can neither read its token nor call a tool
    without it. Root with a wrong token gets no further."""
    found = nobody_python()
    assert found is not None
    python, path = found
    with http_server(akira.root) as served:
        probe = (
            "import http.client, json, sys\n"
            "try:\n    open(sys.argv[1]).read(); print('read')\n"
            "except OSError as e:\n    print('unreadable', e.errno)\n"
            "c = http.client.HTTPConnection('127.0.0.1', int(sys.argv[2]), timeout=30)\n"
            "c.request('POST', '/mcp', sys.argv[3], headers={'Content-Type': 'application/json',"
            " 'Accept': 'application/json, text/event-stream'})\n"
            "print(c.getresponse().status)\n"
        )
        kept = akira.root / ".state" / "mcp_token"
        done = subprocess.run(
            [*SETPRIV, python, "-c", probe, str(kept), str(served.port), HELLO],
            capture_output=True,
            text=True,
            timeout=120,
            cwd="/",
            env={**os.environ, "PYTHONPATH": path} if path else None,
        )
        assert done.stdout.split() == ["unreadable", "13", "401"], (done.stdout, done.stderr)
        here = {"Host": f"127.0.0.1:{served.port}"}
        assert (
            post("127.0.0.1", served.port, {**here, "Authorization": "Bearer a-wrong-token-of-some-length"})
            == 401
        )


def test_stdio_needs_no_token_and_takes_an_exported_one_as_none(akira: Akira) -> None:
    """A person who exported AKIRA_MCP_TOKEN for an HTTP server's scripts still gets a stdio
    server from a client that starts akira (it inherits the variable); --token itself is refused."""
    command = [sys.executable, "-m", "akira_cli", "mcp", "--root", str(akira.root)]
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=server_env(AKIRA_MCP_TOKEN=TOKEN),
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(HELLO + "\n")
    process.stdin.flush()
    answer = process.stdout.readline()  # before stdin closes: the server ends on its end
    _, err = process.communicate(timeout=60)
    assert json.loads(answer)["result"]["serverInfo"]["name"] == "akira", err
    refused = subprocess.run(
        [*command, "--token", TOKEN], input="", capture_output=True, text=True, timeout=60, env=server_env()
    )
    assert refused.returncode == 2 and refused.stderr.splitlines() == [
        "akira: error: --host, --token and --token-file are for --http [HOST:]PORT; stdio needs none"
    ]
