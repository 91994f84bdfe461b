"""What keeps an iteration cheap (issue 11) must not change what akira writes or reads."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from conftest import Akira

from akira_cli.events import stamp, utcnow


def test_a_stamp_is_the_iso_utc_text_to_the_millisecond() -> None:
    rng = random.Random(11)
    for seconds in [0.0, 1.9995, 1_700_000_000.999, 1_700_000_001.0005] + [
        rng.uniform(0, 4e9) for _ in range(20_000)
    ]:
        whole = datetime.fromtimestamp(int(seconds * 1000) / 1000, UTC)
        assert stamp(seconds) == whole.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert utcnow().endswith("Z") and len(utcnow()) == len("2026-11-23T17:35:53.411Z")


def test_a_start_parses_the_task_file_once(akira: Akira, monkeypatch: pytest.MonkeyPatch) -> None:
    """The start checks the file by parsing it; the loop goes on from that parse."""
    import akira_cli.tasks.parser as parser
    import akira_cli.tasks.source as source

    parsed: list[str] = []
    real = parser.parse_task_text

    def counting(data: bytes | str, path: object) -> object:
        parsed.append(str(path))
        return real(data, path)  # type: ignore[arg-type]

    monkeypatch.setattr(parser, "parse_task_text", counting)
    monkeypatch.setattr(source, "parse_task_text", counting)
    akira.write_task("once", "- [ ] 1. one\n  - Run: `true`\n- [ ] 2. two\n  - Run: `true`\n")
    assert akira.run("loop", "start", "--task", "Specs/once/tasks.md").code == 0
    assert len(parsed) == 1
