"""The payload of every event type, by its type."""

from __future__ import annotations

from types import ModuleType

from akira_cli.event_payloads import reasoning, run
from akira_cli.event_payloads.kinds import Payload, registry


def defined(module: ModuleType) -> list[type[Payload]]:
    """The payloads `module` defines."""
    return [
        value
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, Payload) and value.__module__ == module.__name__
    ]


PAYLOADS = registry(*defined(run), *defined(reasoning))
"""tests/test_events.py: one each, for every type."""
