"""Shared pytest fixtures. Each helper's fixtures live in a delimited section; what they are built
from lives in `tests/support/`."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

# Before the support modules are imported: their asserts explain a failure as a test's own do.
pytest.register_assert_rewrite("tests.support")

from akira_cli.cli import main  # noqa: E402
from tests.support.git import git_workspace  # noqa: E402
from tests.support.sandbox import Counter, Server  # noqa: E402
from tests.support.servers.fake_openai import FakeOpenAI  # noqa: E402
from tests.support.workspace import Akira, share_with_steps  # noqa: E402

# --- fake OpenAI server (tests/support/servers) ----------------------------------------------


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A started fake OpenAI-compatible server on 127.0.0.1, closed after the test."""
    with FakeOpenAI() as server:
        yield server


# --- end fake OpenAI server ----------------------------------------------------------------

# --- workspaces and the akira CLI ----------------------------------------------------------


@pytest.fixture
def akira(tmp_path: Path) -> Akira:
    root = tmp_path / "ws"
    assert main(["init", str(root)]) == 0
    share_with_steps(root, tmp_path)
    return Akira(root, tmp_path)


@pytest.fixture
def repo(tmp_path: Path) -> Akira:
    """An akira workspace that is a git repository with one commit, as a person has it."""
    return git_workspace(tmp_path)


# --- end workspaces ------------------------------------------------------------------------

# --- the sandbox's two servers -------------------------------------------------------------


@pytest.fixture
def servers() -> Iterator[tuple[Server, Server]]:
    """The allowed server and the forbidden one, on two ports of 127.0.0.1."""
    started = []
    for _ in range(2):
        server = Server(("127.0.0.1", 0), Counter)
        server.hits = []
        threading.Thread(target=server.serve_forever, daemon=True).start()
        started.append(server)
    yield started[0], started[1]
    for server in started:
        server.shutdown()
        server.server_close()


# --- end the sandbox's two servers ---------------------------------------------------------
