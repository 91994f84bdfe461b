"""Shared pytest fixtures. Each helper's fixtures live in a delimited section."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from akira_cli.testing import FakeOpenAI

# --- fake OpenAI server (akira_cli.testing) -------------------------------------------------


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A started fake OpenAI-compatible server on 127.0.0.1, closed after the test."""
    with FakeOpenAI() as server:
        yield server


# --- end fake OpenAI server ----------------------------------------------------------------
