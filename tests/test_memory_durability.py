"""reflections.jsonl survives kill -9: every line is whole, valid JSON, at any moment."""

from __future__ import annotations

import json
import random
import signal
import time

import pytest

from akira_cli.reflection.memory import Reflection
from tests.support.workspace import Akira

# Every step fails once (a distinct error, so a reflection is written) and then passes.
STEPS = "".join(
    f"- [ ] {n}. step {n}\n  - Run: `echo 'step {n} broke: {'x' * 300}'; exit 1`\n"
    f"  - Fallback: `sleep 0.02`\n"
    for n in range(1, 41)
)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_reflections_survive_kill_9(akira: Akira) -> None:
    akira.write_task("mem", STEPS)
    memory = akira.root / ".state" / "memory" / "reflections.jsonl"
    rng = random.Random(7)
    kills = 0
    process = akira.spawn(
        "loop", "start", "--task", "Specs/mem/tasks.md", "--no-wait", "--max-iterations", "400"
    )
    while kills < 6:  # bounded: on a loaded machine a start can take longer than the next kill
        time.sleep(rng.uniform(0.05, 0.3) + 0.2 * kills)
        if process.poll() is not None:
            break
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        kills += 1
        lines = memory.read_bytes().split(b"\n") if memory.exists() else [b""]
        assert lines[-1] == b"", "a torn last line"
        for line in lines[:-1]:
            Reflection.model_validate(json.loads(line))
        if akira.state_files():
            process = akira.spawn("loop", "resume", "--task-id", akira.task_id(), "--no-wait")
        else:  # killed before the state file was first written
            process = akira.spawn(
                "loop", "start", "--task", "Specs/mem/tasks.md", "--no-wait", "--max-iterations", "400"
            )
    _, err = process.communicate(timeout=90)
    assert process.returncode == 0, err
    assert kills >= 3
    reflections = [Reflection.model_validate_json(line) for line in memory.read_text().splitlines()]
    assert {r.step_id for r in reflections} == {str(n) for n in range(1, 41)}
