"""An `LLMClient` wired to a test's server, with the waits it asked for and the events it sent."""

from __future__ import annotations

import time
from typing import Any

from akira_cli.events import Event, EventBus, EventType
from akira_cli.llm.client import LLMClient
from akira_cli.sections import LLMSettings

USER = [{"role": "user", "content": "hi"}]


class Harness:
    """A client wired to a server, with its recorded waits and events."""

    def __init__(self, server_url: str, **options: Any) -> None:
        self.waits: list[float] = []
        self.events: list[Event] = []
        bus = EventBus()
        bus.subscribe(self.events.append)
        llm = {"base_url": server_url, "model": "fake-model", "max_retries": 3}
        llm.update(options.pop("llm", {}))
        self.client = LLMClient(LLMSettings(**llm), bus=bus, sleep=self.sleep, **options)

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        time.sleep(min(seconds, 0.01))

    def of_type(self, type_: EventType) -> list[dict[str, Any]]:
        return [e.data for e in self.events if e.type == type_]
