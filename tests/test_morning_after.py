"""What a person sees and types the morning after: the exit line names the file to read, each
stop condition suggests the command that addresses it, and a loop can be ended for good."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from akira_cli.state.store import StateStore
from akira_cli.workspace import Workspace, command_line
from tests.support.workspace import Akira


@pytest.mark.slow
def test_a_give_up_names_its_file_and_the_fix_and_cancel_files_it_away(akira: Akira) -> None:
    task = akira.write_task("long", "".join(f"- [ ] {n}. s{n}\n  - Run: `touch f{n}`\n" for n in range(1, 5)))
    result = akira.cli("loop", "start", "--task", str(task), "--max-iterations", "2")
    assert result.code == 4
    task_id = akira.task_id()
    assert f"read Needs_Action/intervention_{task_id}.md" in result.err.splitlines()[-1]
    text = (akira.root / "Needs_Action" / f"intervention_{task_id}.md").read_text()
    assert f"`akira loop resume --task-id {task_id} --max-iterations 4`" in text  # run from the workspace
    assert f"`akira loop cancel --task-id {task_id}`" in text
    assert akira.cli("loop", "cancel", "--task-id", task_id).code == 0
    assert list((akira.root / "Needs_Action").glob(f"*_{task_id}.md")) == []  # nothing left to do
    assert list((akira.root / ".state" / "archive").glob(f"intervention_{task_id}.*.md"))


@pytest.mark.slow
def test_a_timeout_suggests_raising_the_timeout_not_the_iterations(akira: Akira) -> None:
    akira.write_config("autonomous_loop:\n  timeout_seconds: 1\n")
    task = akira.write_task("t", "- [ ] 1. s\n  - Run: `sleep 1.2`\n- [ ] 2. t\n  - Run: `true`\n")
    assert akira.cli("loop", "start", "--task", str(task)).code == 4
    text = (akira.root / "Needs_Action" / f"intervention_{akira.task_id()}.md").read_text()
    assert "Raise autonomous_loop.timeout_seconds" in text and "--max-iterations" not in text


@pytest.mark.slow
def test_cancel_ends_a_loop_for_good_and_leaves_the_task_file(akira: Akira) -> None:
    task = akira.write_task("c", "- [ ] 1. s\n  - Run: `true`\n")
    (akira.root / ".hooks" / "stop_autonomous_loop.md").write_text("pause\n")
    assert akira.cli("loop", "start", "--task", str(task), "--no-wait").code == 3
    task_id = akira.task_id()
    result = akira.cli("loop", "cancel", "--task-id", task_id)
    assert result.code == 0, result.err
    assert task.exists() and not (akira.root / ".hooks" / "stop_autonomous_loop.md").exists()
    assert (akira.root / ".state" / "archive" / f"autonomous_loop_{task_id}.json").exists()
    status = json.loads(akira.cli("loop", "status", "--json").out)["loops"]
    assert [(row["task_id"], row["status"], row["group"]) for row in status] == [
        (task_id, "cancelled", "Cancelled")
    ]
    again = akira.cli("loop", "resume", "--task-id", task_id)
    assert again.code == 1 and "was cancelled" in again.err
    assert akira.cli("loop", "start", "--task", str(task)).code == 0  # a new loop may start on it


def test_printed_commands_carry_root_and_quotes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = Workspace((tmp_path / "my work").resolve())
    workspace.root.mkdir()
    monkeypatch.chdir(tmp_path)
    line = command_line(workspace, "loop", "resume", "--task-id", "task_1")
    assert line == f"akira loop resume --task-id task_1 --root '{workspace.root}'"
    monkeypatch.chdir(workspace.root)
    assert (
        command_line(workspace, "loop", "resume", "--task-id", "task_1")
        == "akira loop resume --task-id task_1"
    )


@pytest.mark.slow
def test_stop_says_what_happens_to_a_loop_that_is_not_running(akira: Akira) -> None:
    task = akira.write_task("s", "- [ ] 1. s\n  - Run: `true`\n")
    (akira.root / ".hooks" / "stop_autonomous_loop.md").write_text("pause\n")
    assert akira.cli("loop", "start", "--task", str(task), "--no-wait").code == 3
    result = akira.cli("loop", "stop", "--task-id", akira.task_id(), "--force")
    assert result.code == 0
    assert (
        f"no process runs {akira.task_id()}, its state is paused; there is no command to kill" in result.err
    )


@pytest.mark.slow
def test_stop_force_on_a_waiting_loop_says_it_exits(akira: Akira) -> None:
    task = akira.write_task("w", "- [ ] 1. s\n  - Run: `true`\n")
    (akira.root / ".hooks" / "stop_autonomous_loop.md").write_text("pause\n")
    process = akira.spawn("loop", "start", "--task", str(task))  # waits in the pause

    def waiting() -> bool:
        return (
            akira.state().status == "paused"
            and StateStore(akira.root / ".state").lock(akira.task_id()).holder() == process.pid
        )

    akira.wait_for(waiting, 30, "the wait")
    result = akira.cli("loop", "stop", "--task-id", akira.task_id(), "--force")
    assert f"process {process.pid} was waiting (paused); it exits now" in result.err
    assert process.wait(timeout=30) == 3


@pytest.mark.slow
def test_notifications_run_on_completion_and_on_needs_action(akira: Akira) -> None:
    log = akira.root.parent / "notified.txt"
    akira.write_config(
        f'notify:\n  command: echo "$AKIRA_EVENT|$AKIRA_STATUS|$AKIRA_FILE|$AKIRA_MESSAGE" >> {log}\n'
    )
    ok = akira.write_task("ok", "- [ ] 1. s\n  - Run: `true`\n")
    assert akira.cli("loop", "start", "--task", str(ok)).code == 0
    bad = akira.write_task("bad", "- [ ] 1. s\n  - Run: `exit 3`\n")
    assert akira.cli("loop", "start", "--task", str(bad)).code == 4
    lines = log.read_text().splitlines()
    assert lines[0].startswith("completed|completed|") and lines[0].split("|")[2].endswith(".md")
    assert lines[1].startswith("needs_action|needs_action|") and "Needs_Action/escalation_" in lines[1]


@pytest.mark.slow
def test_a_failing_notification_is_logged_not_fatal(akira: Akira) -> None:
    akira.write_config("notify:\n  command: exit 9\n")
    task = akira.write_task("n", "- [ ] 1. s\n  - Run: `true`\n")
    assert akira.cli("loop", "start", "--task", str(task)).code == 0
    assert any("notify.command exited 9" in str(e.data) for e in akira.events())


@pytest.mark.slow
def test_guidance_from_the_file_and_the_flag_both_reach_the_attempt(akira: Akira) -> None:
    task = akira.write_task(
        "g", "- [ ] 1. s\n  - Run: `exit 3`\n  - Fallback: `exit 4`\n  - Fallback: `exit 5`\n"
    )
    assert akira.cli("loop", "start", "--task", str(task)).code == 4
    task_id = akira.task_id()
    escalation = akira.root / "Needs_Action" / f"escalation_{task_id}.md"
    escalation.write_text(escalation.read_text().replace("## Guidance\n", "## Guidance\nUse the cache.\n"))
    task.write_text("- [ ] 1. s\n  - Run: `true`\n")
    assert akira.cli("loop", "resume", "--task-id", task_id, "--guidance", "Mind the lock.").code == 0
    guidance = akira.state().steps["1"].guidance or ""
    assert "Use the cache." in guidance and "Mind the lock." in guidance
    assert not escalation.exists()  # archived with the state, not left stale in Needs_Action/
    assert list((akira.root / ".state" / "archive").glob(f"escalation_{task_id}.*.md"))


@pytest.mark.slow
def test_resume_detach_runs_in_the_background(akira: Akira) -> None:
    task = akira.write_task("d", "- [ ] 1. s\n  - Run: `touch detached`\n")
    (akira.root / ".hooks" / "stop_autonomous_loop.md").write_text("pause\n")
    assert akira.cli("loop", "start", "--task", str(task), "--no-wait").code == 3
    (akira.root / ".hooks" / "stop_autonomous_loop.md").unlink()
    result = akira.cli("loop", "resume", "--task-id", akira.task_id(), "--detach")
    assert result.code == 0 and result.out.strip() == akira.task_id()
    akira.wait_for(lambda: akira.state().status == "completed", 60, "the background run")
    assert (akira.root / "detached").exists()


@pytest.mark.slow
def test_the_escalation_and_the_stop_hook_print_commands_to_paste(akira: Akira) -> None:
    task = akira.write_task("e", "- [ ] 1. s\n  - Run: `exit 3`\n")
    assert akira.cli("loop", "start", "--task", str(task)).code == 4
    task_id = akira.task_id()
    text = (akira.root / "Needs_Action" / f"escalation_{task_id}.md").read_text()
    for command in ("logs", "resume", "cancel"):
        assert f"`akira loop {command} --task-id {task_id}`" in text
    stop = akira.cli("loop", "stop", "--task-id", task_id)
    assert stop.code == 0
    hook = (akira.root / ".hooks" / f"stop_autonomous_loop_{task_id}.md").read_text()
    assert f"`akira loop resume --task-id {task_id}`" in hook


def test_boxes_an_earlier_run_ticked_are_not_counted_as_a_persons(akira: Akira) -> None:
    task = akira.write_task(
        "again", "- [ ] 1. s\n  - Run: `touch one`\n  - Exists: `one`\n- [ ] 2. t\n  - Run: `exit 3`\n"
    )
    assert akira.cli("loop", "start", "--task", str(task)).code == 4  # step 1 done, step 2 escalated
    first = akira.task_id()
    assert akira.cli("loop", "cancel", "--task-id", first).code == 0
    task.write_text(task.read_text().replace("`exit 3`", "`true`"))
    assert akira.cli("loop", "start", "--task", str(task)).code == 0
    state = akira.state()
    assert state.task_id != first and state.done_breakdown()["done_by_person"] == 0
    assert [(done.step_id, done.done_by, done.earlier_run) for done in state.completed_steps] == [
        ("1", "akira", first),
        ("2", "akira", None),
    ]
