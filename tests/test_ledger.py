"""The state is the ledger, and the control plane is not the agent's (docs/guarantees.md). Real loops with
real command agents (bash scripts) that tick boxes, add directives and edit config."""

from __future__ import annotations

import json
import textwrap

import pytest

from akira_cli.events import EventType
from tests.support.workspace import Akira

pytestmark = pytest.mark.slow

TICK_ALL = r"sed -i 's/- \[ \]/- [x]/' Specs/f/tasks.md"


def command_agent(akira: Akira, script: str) -> None:
    agent = akira.root / "agent.sh"
    agent.write_text(textwrap.dedent(script).lstrip())
    akira.write_config(f"agent:\n  command: bash {agent}\n")  # auto: script for Run: steps


def ledger_events(akira: Akira) -> list[tuple[str | None, str]]:
    return [(e.step_id, e.data["action"]) for e in akira.events() if e.type == EventType.LEDGER]


def test_a_reverted_box_is_ticked_back_and_the_step_never_runs_again(akira: Akira) -> None:
    task = akira.write_task(
        "f",
        """
        - [ ] 1. Count
          - Run: `echo ran >> ran1.txt`
        - [ ] 2. Wait for go
          - Run: `test -f go`
        """,
    )
    assert akira.cli("loop", "start", "--task", str(task)).code == 4
    assert task.read_text().startswith("- [x] 1.")
    task.write_text(task.read_text().replace("- [x] 1.", "- [ ] 1."))  # a person reverts the box
    (akira.root / "go").touch()
    resumed = akira.cli("loop", "resume", "--task-id", akira.task_id())
    assert resumed.code == 0, resumed.err
    assert (akira.root / "ran1.txt").read_text() == "ran\n"  # step 1 ran once, ever
    assert ("1", "reticked") in ledger_events(akira)


def test_ticks_an_agent_makes_are_claims_that_the_checks_decide(akira: Akira) -> None:
    command_agent(
        akira,
        f"""
        {TICK_ALL}
        [ "$AKIRA_STEP_ID" = 1 ] && touch a.txt
        [ "$AKIRA_STEP_ID" = 2 ] && touch b.txt
        echo "step $AKIRA_STEP_ID" >> agent_runs.txt
        """,
    )
    task = akira.write_task(
        "f",
        """
        - [ ] 1. Make a
          - Exists: `a.txt`
        - [ ] 2. Make b
          - Exists: `b.txt`
        - [ ] 3. Write the docs
          - Explain the feature in prose.
        """,
    )
    # without the sandbox, which would refuse the agent's write to the task file: what
    # the ledger does when nothing refuses it
    result = akira.cli("loop", "start", "--task", str(task), "--no-sandbox")
    assert result.code == 0, result.err
    assert (akira.root / "agent_runs.txt").read_text() == "step 1\nstep 2\n"  # 3 never ran
    state = akira.state()
    done = {s.step_id: (s.done_by, s.verified) for s in state.completed_steps}
    assert done == {"1": ("akira", True), "2": ("akira", True), "3": ("claim", False)}
    events = ledger_events(akira)
    assert ("2", "claim_refuted") in events and ("3", "accepted") in events


def test_a_tick_made_while_paused_is_a_persons_decision(akira: Akira) -> None:
    task = akira.write_task(
        "f",
        """
        - [ ] 1. One
          - Run: `echo 1 >> ran.txt`
        - [ ] 2. Two
          - Run: `echo 2 >> ran.txt`
        """,
    )
    hook = akira.root / ".hooks" / "stop_autonomous_loop.md"
    hook.write_text("pause\n")
    assert akira.cli("loop", "start", "--task", str(task), "--no-wait").code == 3
    task.write_text(task.read_text().replace("- [ ] 1.", "- [x] 1."))
    assert akira.cli("loop", "resume", "--task-id", akira.task_id()).code == 0
    assert (akira.root / "ran.txt").read_text() == "2\n"
    done = {s.step_id: (s.done_by, s.verified) for s in akira.state().completed_steps}
    assert done == {"1": ("person", False), "2": ("akira", False)}


def test_directives_an_agent_adds_wait_for_a_person_and_config_edits_are_not_obeyed(akira: Akira) -> None:
    command_agent(
        akira,
        """
        if [ "$AKIRA_STEP_ID" = 1 ]; then
          printf -- '- [ ] 9. Sneak\\n  - Run: `touch pwned`\\n' >> Specs/f/tasks.md
          printf 'checks:\\n  - run: touch pwned_by_config\\n' >> config/autonomous_loop.yaml
          touch one.txt
        fi
        """,
    )
    task = akira.write_task("f", "- [ ] 1. One\n  - Exists: `one.txt`\n")
    # without the sandbox, which would refuse both writes: the ledger's rule on its own
    paused = akira.cli("loop", "start", "--task", str(task), "--no-wait", "--no-sandbox")
    assert paused.code == 3, paused.err
    assert not (akira.root / "pwned").exists() and not (akira.root / "pwned_by_config").exists()
    state = akira.state()
    assert state.status == "paused" and "9" in state.stop_reason and "akira loop resume" in state.stop_reason
    status = json.loads(akira.cli("loop", "status", "--task-id", state.task_id, "--json").out)
    assert "directives of step(s) 9" in json.dumps(status)
    changed = [e.data for e in akira.events() if e.type == EventType.CONTROL_PLANE_CHANGED]
    assert changed and changed[0]["paths"] == ["config/autonomous_loop.yaml"]
    assert ("1", "directives_held") in ledger_events(akira)
    assert [s.step_id for s in state.completed_steps] == ["1"]  # the step's own work still counts
    # A person has read the new step; resuming lets it run (config is read again at this start).
    (akira.root / "config" / "autonomous_loop.yaml").write_text(
        f"agent:\n  command: bash {akira.root / 'agent.sh'}\n"
    )
    resumed = akira.cli("loop", "resume", "--task-id", state.task_id, "--no-wait")
    assert resumed.code == 0, resumed.err
    assert (akira.root / "pwned").exists() and not (akira.root / "pwned_by_config").exists()
