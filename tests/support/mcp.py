"""`akira mcp` for the tests: the server over HTTP as a process (its URL read from the line it
prints), the SDK's client over stdio or HTTP with a bearer token, and a tool call's parts."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

TOKEN = "a-test-token-long-enough"


def server_env(**extra: str) -> dict[str, str]:
    return {**{key: value for key, value in os.environ.items() if key != "AKIRA_ROOT"}, **extra}


@dataclass
class Served:
    url: str
    """`http://HOST:PORT/mcp`, as the server printed it."""
    line: str
    """The first line it printed on stderr."""
    process: subprocess.Popen[str]

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/")[0])


@contextlib.contextmanager
def http_server(
    root: Path, *args: str, address: str = "127.0.0.1:0", env: dict[str, str] | None = None
) -> Iterator[Served]:
    """`akira mcp --http ADDRESS` as a process, until the block ends."""
    process = subprocess.Popen(
        [sys.executable, "-m", "akira_cli", "mcp", "--root", str(root), "--http", address, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env or server_env(),
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()  # blocks until it listens (or exits: an empty line)
        found = re.search(r"http://(\[[0-9a-f:]+\]|[0-9.]+):\d+/mcp", line)
        assert found, f"no URL in {line!r}"
        yield Served(found.group(0), line, process)
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextlib.asynccontextmanager
async def over_stdio(root: Path) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "akira_cli", "mcp", "--root", str(root)], env=server_env()
    )
    async with Client(params) as client:
        yield client


@contextlib.asynccontextmanager
async def over_http(url: str, token: str = TOKEN) -> AsyncIterator[Client]:
    import httpx2

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> tuple[bool, str, dict[str, Any] | None]:
    result = await client.call_tool(tool, arguments)
    text = "".join(getattr(block, "text", "") for block in result.content)
    return bool(result.is_error), text, result.structured_content


HELLO = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


class RawStdio:
    """`akira mcp` over stdio spoken to by hand, a JSON-RPC line at a time: for what the SDK's
    client hides (every line on stdout, a cancel mid-call, a method the server must refuse).
    Every message read is kept in `seen`, as its raw line in `lines`."""

    def __init__(self, root: Path, env: dict[str, str] | None = None, stderr: int = subprocess.PIPE) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "akira_cli", "mcp", "--root", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env=env or server_env(),
        )
        self.seen: list[dict[str, Any]] = []
        self.lines: list[str] = []

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        self.process.stdin.flush()

    def until(self, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first message from now on that `wanted` accepts."""
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            assert line, "the server closed stdout"
            self.lines.append(line)
            self.seen.append(json.loads(line))
            if wanted(self.seen[-1]):
                return self.seen[-1]

    def ask(self, number: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Request `number`, and its answer."""
        self.send({"id": number, "method": method, **({"params": params} if params is not None else {})})
        return self.until(lambda message: message.get("id") == number)

    def hello(self) -> dict[str, Any]:
        """The handshake: the server's `initialize` result."""
        result = self.ask(1, "initialize", HELLO)["result"]
        self.send({"method": "notifications/initialized"})
        return result  # type: ignore[no-any-return]

    def close(self) -> tuple[str, str]:
        """stdin closed: the server ends; what it wrote after the last message read."""
        out, err = self.process.communicate(timeout=60)
        self.lines += out.splitlines(keepends=True)
        return out, err or ""
