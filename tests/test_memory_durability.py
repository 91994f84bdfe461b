"""reflections.jsonl survives kill -9: every line is whole, valid JSON, at any moment."""

from __future__ import annotations

import json
import signal

import pytest
from conftest import Akira

from akira_cli.reflection.memory import Reflection

# Every step fails once (a distinct error, so a reflection is written) and then passes.
STEPS = "".join(
    f"- [ ] {n}. step {n}\n  - Run: `echo 'step {n} broke: {'x' * 300}'; exit 1`\n"
    f"  - Fallback: `sleep 0.02`\n"
    for n in range(1, 41)
)
KILL_AT = (1, 4, 9, 15, 22, 30)
"""How many reflections the file holds when each kill comes: at the first one, then ever further on."""


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_reflections_survive_kill_9(akira: Akira) -> None:
    akira.write_task("mem", STEPS)
    memory = akira.root / ".state" / "memory" / "reflections.jsonl"

    def reflections() -> int:
        return memory.read_bytes().count(b"\n") if memory.exists() else 0

    process = akira.spawn(
        "loop", "start", "--task", "Specs/mem/tasks.md", "--no-wait", "--max-iterations", "400"
    )
    for target in KILL_AT:  # each kill lands while the run is writing reflections
        akira.wait_for(lambda n=target: reflections() >= n, timeout=90, what=f"{target} reflections")
        assert process.poll() is None, process.communicate()[1]
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        lines = memory.read_bytes().split(b"\n")
        assert lines[-1] == b"", "a torn last line"
        for line in lines[:-1]:
            Reflection.model_validate(json.loads(line))
        process = akira.spawn("loop", "resume", "--task-id", akira.task_id(), "--no-wait")
    _, err = process.communicate(timeout=90)
    assert process.returncode == 0, err
    written = [Reflection.model_validate_json(line) for line in memory.read_text().splitlines()]
    assert {r.step_id for r in written} == {str(n) for n in range(1, 41)}
