"""A person steering a live loop: hooks, folder moves, forced stops, detach, one process per task.

Every test runs akira as a real subprocess with its real watchdog observer.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.support.workspace import Akira

SLOW_STEPS = "".join(
    f"- [ ] {n}. step {n}\n  - Run: `sleep 0.15 && echo {n} >> ledger`\n" for n in range(1, 9)
)


HELD_STEPS = SLOW_STEPS.replace(
    "`sleep 0.15 && echo 2", "`until test -f release; do sleep 0.05; done; echo 2"
)
"""Step 2 waits for `release`: a stop from another akira process (seconds on a loaded machine)
lands before the steps run out, however fast a sandboxed step runs."""


def ledger(akira: Akira) -> list[str]:
    path = akira.root / "ledger"
    return path.read_text().split() if path.exists() else []


def started(akira: Akira, steps: int = 1) -> str:
    akira.wait_for(lambda: len(ledger(akira)) >= steps, what=f"{steps} step(s) to run")
    return akira.task_id()


def test_stop_pauses_a_live_loop_and_deleting_the_hook_continues_it(akira: Akira) -> None:
    akira.write_task("live", HELD_STEPS)
    process = akira.spawn("loop", "start", "--task", "Specs/live/tasks.md")
    task_id = started(akira)
    assert akira.cli("loop", "stop", "--task-id", task_id).code == 0
    (akira.root / "release").touch()
    akira.wait_for(lambda: akira.state(task_id).status == "paused", what="paused")
    count = len(ledger(akira))
    assert process.poll() is None  # it waits, watching
    hook = akira.root / ".hooks" / f"stop_autonomous_loop_{task_id}.md"
    assert "type: stop_hook" in hook.read_text() and "**Iteration**:" in hook.read_text()
    assert len(ledger(akira)) == count
    hook.unlink()
    assert process.wait(timeout=30) == 0
    assert ledger(akira) == [str(n) for n in range(1, 9)]
    kinds = [e.type for e in akira.events(task_id)]
    assert kinds.index("loop_paused") < kinds.index("loop_resumed") < kinds.index("loop_completed")


@pytest.mark.slow
def test_resume_continues_a_waiting_process_with_new_limits(akira: Akira) -> None:
    akira.write_task("live", HELD_STEPS)
    process = akira.spawn("loop", "start", "--task", "Specs/live/tasks.md")
    task_id = started(akira)
    akira.cli("loop", "stop", "--task-id", task_id)
    (akira.root / "release").touch()
    akira.wait_for(lambda: akira.state(task_id).status == "paused", what="paused")
    result = akira.cli("loop", "resume", "--task-id", task_id, "--max-iterations", "50")
    assert result.code == 0 and f"process {process.pid} continues" in result.err
    assert process.wait(timeout=30) == 0
    assert akira.state(task_id).max_iterations == 50


@pytest.mark.slow
def test_no_wait_exits_3_on_a_stop_hook(akira: Akira) -> None:
    akira.write_task("live", HELD_STEPS)
    process = akira.spawn("loop", "start", "--task", "Specs/live/tasks.md", "--no-wait")
    task_id = started(akira)
    akira.cli("loop", "stop", "--task-id", task_id)
    (akira.root / "release").touch()
    assert process.wait(timeout=20) == 3
    assert akira.state(task_id).status == "paused"


@pytest.mark.slow
def test_moving_the_task_to_needs_action_pauses_and_moving_back_continues(akira: Akira) -> None:
    akira.write_task("moved", SLOW_STEPS)
    process = akira.spawn("loop", "start", "--task", "Specs/moved/tasks.md")
    task_id = started(akira)
    parked = akira.root / "Needs_Action" / "moved"
    shutil.move(str(akira.root / "Specs/moved"), str(parked))
    akira.wait_for(lambda: akira.state(task_id).status == "paused", what="paused")
    state = akira.state(task_id)
    assert state.stop_conditions.manual_intervention and "Needs_Action" in state.task_path
    shutil.move(str(parked), str(akira.root / "Specs/moved"))
    assert process.wait(timeout=30) == 0
    assert (akira.root / "Done/moved/tasks.md").exists()
    assert ledger(akira) == [str(n) for n in range(1, 9)]


@pytest.mark.slow
def test_moving_the_task_to_done_completes_it_as_declared_by_a_person(akira: Akira) -> None:
    akira.write_task("declared", SLOW_STEPS)
    process = akira.spawn("loop", "start", "--task", "Specs/declared/tasks.md")
    task_id = started(akira)
    shutil.move(str(akira.root / "Specs/declared"), str(akira.root / "Done/declared"))
    assert process.wait(timeout=20) == 0
    state = akira.state(task_id)
    assert state.status == "completed" and state.stop_conditions.task_in_done
    assert len(ledger(akira)) < 8
    report = (akira.root / "Logs/completion_reports" / f"{task_id}.md").read_text()
    assert "declared done by a person" in report
    assert "## Steps still open (a person declared the task done)" in report
    assert "- 8. step 8" in report  # who decided, and what was left


@pytest.mark.slow
def test_moving_a_paused_task_to_done_completes_it_at_once(akira: Akira) -> None:
    akira.write_task("paused", SLOW_STEPS)
    (akira.root / ".hooks/stop_autonomous_loop.md").write_text("pause\n")
    process = akira.spawn("loop", "start", "--task", "Specs/paused/tasks.md")  # waits while paused
    akira.wait_for(lambda: akira.state().status == "paused", 30, "the pause")
    shutil.move(str(akira.root / "Specs/paused"), str(akira.root / "Done/paused"))
    assert process.wait(timeout=30) == 0
    state = akira.state()
    assert state.status == "completed" and state.stop_conditions.task_in_done and ledger(akira) == []


@pytest.mark.slow
def test_a_malformed_edit_pauses_until_the_file_parses_again(akira: Akira) -> None:
    task = akira.write_task("edited", SLOW_STEPS)
    process = akira.spawn("loop", "start", "--task", "Specs/edited/tasks.md")
    task_id = started(akira)
    good = task.read_text()
    task.write_text(good.replace("- [ ] 8. step 8\n", "- [ ] 8. step 8\n  - Depends: 99\n"))
    akira.wait_for(lambda: akira.state(task_id).status == "paused", what="paused")
    assert "tasks.md:" in akira.state(task_id).stop_reason and "99" in akira.state(task_id).stop_reason
    task.write_text(task.read_text().replace("  - Depends: 99\n", ""))
    assert process.wait(timeout=30) == 0
    assert ledger(akira) == [str(n) for n in range(1, 9)]


@pytest.mark.slow
def test_a_deleted_task_file_pauses_and_is_never_done(akira: Akira) -> None:
    task = akira.write_task("gone", SLOW_STEPS)
    process = akira.spawn("loop", "start", "--task", "Specs/gone/tasks.md", "--no-wait")
    task_id = started(akira)
    task.unlink()
    _, err = process.communicate(timeout=20)
    assert process.returncode == 3
    state = akira.state(task_id)
    assert state.status == "paused" and state.stop_conditions.task_file_deleted
    assert "was deleted" in err and not list((akira.root / "Done").glob("gone*"))
    result = akira.cli("loop", "resume", "--task-id", task_id)
    assert result.code == 1 and "not found" in result.err and len(result.err.strip().splitlines()) == 1


@pytest.mark.slow
def test_force_stop_kills_the_running_command_group(akira: Akira) -> None:
    mark = f"30.{os.getpid()}"  # this test's own sleep, found by its command line
    akira.write_task(
        "stuck",
        f"""
        - [ ] 1. Hang
          - Run: `echo $$ > pid; sleep {mark} & echo $! > child; wait`
    """,
    )
    process = akira.spawn("loop", "start", "--task", "Specs/stuck/tasks.md")
    akira.wait_for(lambda: (akira.root / "child").read_text().strip() != "", what="the command")
    task_id = akira.task_id()
    assert _sleeping(mark)
    assert akira.cli("loop", "stop", "--task-id", task_id, "--force").code == 0
    assert process.wait(timeout=10) == 3
    # By its command line: in the sandbox, $! is a pid of the step's own PID namespace.
    akira.wait_for(lambda: not _sleeping(mark), timeout=5, what="the command's group to die")
    state = akira.state(task_id)
    assert state.status == "paused"
    assert [a.outcome for a in state.steps["1"].attempts] == ["interrupted"]
    assert state.total_failures == 0 and state.total_successes == 0


def _sleeping(seconds: str) -> bool:
    """Whether a `sleep SECONDS` lives."""
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == f"sleep\0{seconds}\0".encode():
                return True
        except OSError:
            continue
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


GATED_STEPS = "- [ ] 1. step 1\n  - Run: `echo 1 >> ledger; until test -f release; do sleep 0.05; done`\n"


@pytest.mark.slow
def test_a_second_live_process_is_refused_naming_the_pid(akira: Akira) -> None:
    akira.write_task("busy", GATED_STEPS)  # runs until the test releases it, however slow the machine
    process = akira.spawn("loop", "start", "--task", "Specs/busy/tasks.md")
    task_id = started(akira)
    again = akira.cli("loop", "start", "--task", "Specs/busy/tasks.md")
    assert again.code == 1 and f"process {process.pid}" in again.err
    resumed = akira.cli("loop", "resume", "--task-id", task_id)
    assert resumed.code == 1 and f"process {process.pid}" in resumed.err
    status = akira.cli("loop", "status", "--task-id", task_id, "--json")
    assert '"status": "running"' in status.out
    (akira.root / "release").touch()
    assert process.wait(timeout=60) == 0


@pytest.mark.slow
def test_start_on_an_unfinished_loop_names_the_resume_command(akira: Akira) -> None:
    akira.write_task("paused", "- [ ] 1. one\n  - Run: `true`\n")
    (akira.root / ".hooks/stop_autonomous_loop.md").write_text("stop\n")
    assert akira.cli("loop", "start", "--task", "Specs/paused/tasks.md", "--no-wait").code == 3
    again = akira.cli("loop", "start", "--task", "Specs/paused/tasks.md")
    assert again.code == 1
    assert f"akira loop resume --task-id {akira.task_id()}" in again.err


@pytest.mark.slow
def test_detach_runs_in_the_background(akira: Akira) -> None:
    akira.write_task("bg", "- [ ] 1. one\n  - Run: `sleep 0.2 && touch one`\n")
    result = akira.cli("loop", "start", "--task", "Specs/bg/tasks.md", "--detach", timeout=10)
    assert result.code == 0
    task_id = result.out.strip()
    follow = akira.cli("loop", "logs", "--task-id", task_id, "--follow", timeout=30)
    assert "loop_completed" in follow.out  # followed from before the process took its lock
    assert akira.state(task_id).status == "completed" and (akira.root / "one").exists()


@pytest.mark.slow
def test_an_interrupted_loop_is_shown_and_resumed(akira: Akira) -> None:
    akira.write_task("killed", SLOW_STEPS)
    process = akira.spawn("loop", "start", "--task", "Specs/killed/tasks.md")
    task_id = started(akira, 2)
    process.kill()
    process.wait(timeout=10)
    status = akira.cli("loop", "status", "--json")
    assert '"status": "interrupted"' in status.out
    assert akira.cli("loop", "resume", "--task-id", task_id).code == 0
    done = akira.state(task_id).completed_steps
    assert sorted(int(s.step_id) for s in done) == list(range(1, 9))


def test_the_apis_settings_reach_a_detached_run_and_a_key_is_refused(akira: Akira) -> None:
    from akira_cli import api
    from akira_cli.errors import AkiraError

    task = akira.write_task("quiet", "- [ ] 1. s\n  - Run: `touch made`\n  - Exists: `made`\n")
    settings = {"autonomous_loop.create_completion_report": False}
    started = api.start(akira.root, str(task), settings=settings)
    akira.wait_for(lambda: akira.state(started.task_id).status == "completed", 60, "the detached run")
    assert akira.state(started.task_id).settings == settings
    assert not (akira.root / "Logs" / "completion_reports" / f"{started.task_id}.md").exists()
    with pytest.raises(AkiraError, match=r"llm\.api_key"):
        api.start(akira.root, str(task), settings={"llm.api_key": "sk-a-key-long-enough-to-mask"})
