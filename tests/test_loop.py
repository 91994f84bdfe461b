"""The loop end to end, in-process through the real CLI, on real files and real subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from akira_cli.events import EventType
from tests.support.workspace import Akira


def types(akira: Akira) -> list[str]:
    return [event.type for event in akira.events()]


def test_example_runs_end_to_end_with_a_fallback(akira: Akira, capsys: pytest.CaptureFixture[str]) -> None:
    original = (akira.root / "Specs/example/tasks.md").read_bytes()
    result = akira.run("loop", "start", "--task", "Specs/example/tasks.md", capsys=capsys)
    assert result.code == 0, result.err
    done = akira.root / "Done/example/tasks.md"
    assert done.is_file() and not (akira.root / "Specs/example").exists()
    state = akira.state()
    assert state.status == "completed"
    assert [s.step_id for s in state.completed_steps] == ["1.1", "1.2", "2", "3"]
    attempts = state.steps["2"].attempts
    assert [a.approach for a in attempts] == ["Run", "Fallback 1"]
    assert [a.outcome for a in attempts] == ["failure", "success"]
    assert (akira.root / ".state/archive" / f"autonomous_loop_{state.task_id}.json").exists()
    report = (akira.root / "Logs/completion_reports" / f"{state.task_id}.md").read_text()
    for section in (
        "## Summary",
        "## Statistics",
        "## Completed Steps",
        "## Failed Steps (Recovered)",
        "## Metrics",
    ):
        assert section in report
    # Only checkbox characters changed; the optional step 4 was skipped.
    after = done.read_bytes()
    assert len(after) == len(original)
    changed = {original[i : i + 1] + after[i : i + 1] for i in range(len(after)) if after[i] != original[i]}
    assert changed == {b" x"}
    assert "- [ ]* 4." in done.read_text()
    assert "\x1b[" not in result.out  # plain lines in a pipe


@pytest.mark.slow
def test_init_twice_into_fresh_folders_and_keeps_an_edited_config(tmp_path: Path) -> None:
    from akira_cli.cli import main

    for name in ("a", "b"):
        assert main(["init", str(tmp_path / name)]) == 0
        assert (
            main(["loop", "start", "--root", str(tmp_path / name), "--task", "Specs/example/tasks.md"]) == 0
        )
    config = tmp_path / "a/config/autonomous_loop.yaml"
    config.write_text("autonomous_loop:\n  max_iterations: 7\n")
    assert main(["init", str(tmp_path / "a")]) == 0
    assert config.read_text() == "autonomous_loop:\n  max_iterations: 7\n"


@pytest.mark.slow
def test_max_iterations_writes_an_intervention_and_resume_continues(
    akira: Akira, capsys: pytest.CaptureFixture[str]
) -> None:
    akira.write_task(
        "three",
        """
        - [ ] 1. one
          - Run: `true`
        - [ ] 2. two
          - Run: `true`
        - [ ] 3. three
          - Run: `true`
    """,
    )
    started = akira.run(
        "loop", "start", "--task", "Specs/three/tasks.md", "--max-iterations", "2", capsys=capsys
    )
    assert started.code == 4
    [warned] = [line for line in started.err.splitlines() if "max_iterations" in line and "warning" in line]
    assert "3 steps left but autonomous_loop.max_iterations is 2" in warned and "--max-iterations 6" in warned
    state = akira.state()
    assert state.status == "needs_action" and state.iteration == 2
    assert state.stop_conditions.max_iterations_reached
    request = (akira.root / "Needs_Action" / f"intervention_{state.task_id}.md").read_text()
    assert "type: intervention_request" in request and "## Options" in request
    assert akira.run("loop", "resume", "--task-id", state.task_id, "--max-iterations", "5").code == 0
    assert akira.state().status == "completed" and akira.state().iteration == 3


@pytest.mark.slow
def test_same_error_twice_is_a_persistent_failure_with_an_escalation(akira: Akira) -> None:
    akira.write_task(
        "broken",
        """
        - [ ] 1. Build
          - Run: `echo "build failed at /tmp/x/$RANDOM.log line $RANDOM"; exit 3`
    """,
    )
    assert akira.run("loop", "start", "--task", "Specs/broken/tasks.md").code == 4
    state = akira.state()
    assert state.status == "needs_action" and state.stop_conditions.persistent_failure
    attempts = state.steps["1"].attempts
    assert len(attempts) == 2 and attempts[0].error_signature == attempts[1].error_signature
    escalation = (akira.root / "Needs_Action" / f"escalation_{state.task_id}.md").read_text()
    for part in (
        "type: escalation",
        "## Attempted Approaches",
        "## Recent Failures",
        "## Reflections",
        "exited 3",
        "What went wrong",
        "## Guidance",
    ):
        assert part in escalation
    assert EventType.PERSISTENT_FAILURE in types(akira)
    done = [e.data for e in akira.events() if e.type == EventType.REFLECTION_LOOP_COMPLETED]
    assert done == [{"iterations": 2, "outcome": "persistent_failure"}]


@pytest.mark.slow
def test_guidance_from_the_escalation_file_reaches_the_next_attempt(akira: Akira) -> None:
    akira.write_task(
        "guided",
        """
        - [ ] 1. Build
          - Run: `test -f fixed.txt || { echo missing fixed.txt; exit 1; }`
    """,
    )
    assert akira.run("loop", "start", "--task", "Specs/guided/tasks.md").code == 4
    task_id = akira.task_id()
    escalation = akira.root / "Needs_Action" / f"escalation_{task_id}.md"
    escalation.write_text(
        escalation.read_text().replace("## Guidance\n", "## Guidance\n\nCreate fixed.txt before building.\n")
    )
    (akira.root / "fixed.txt").write_text("ok")
    assert akira.run("loop", "resume", "--task-id", task_id).code == 0
    state = akira.state(task_id)
    assert state.steps["1"].guidance == "Create fixed.txt before building."
    assert not escalation.exists()
    assert list((akira.root / ".state/archive").glob(f"escalation_{task_id}.*.md"))


@pytest.mark.slow
def test_different_errors_use_up_the_step_and_escalate(akira: Akira) -> None:
    akira.write_task(
        "tries",
        """
        - [ ] 1. Try
          - Run: `echo alpha; exit 1`
          - Fallback: `echo beta; exit 1`
          - Fallback: `echo gamma; exit 1`
          - Fallback: `echo never; exit 1`
    """,
    )
    assert akira.run("loop", "start", "--task", "Specs/tries/tasks.md").code == 4
    state = akira.state()
    assert [a.approach for a in state.steps["1"].attempts] == ["Run", "Fallback 1", "Fallback 2"]
    assert len(state.reflections) == 3
    assert (akira.root / "Needs_Action" / f"escalation_{state.task_id}.md").exists()


@pytest.mark.slow
def test_failure_threshold_and_reset_failures(akira: Akira) -> None:
    akira.write_task(
        "flaky",
        """
        - [ ] 1. Once
          - Run: `test -f second || { touch second; echo first try; exit 1; }`
    """,
    )
    assert akira.run("loop", "start", "--task", "Specs/flaky/tasks.md", "--failure-threshold", "1").code == 4
    state = akira.state()
    assert state.stop_conditions.failure_threshold_exceeded and state.consecutive_failures == 1
    assert akira.run("loop", "resume", "--task-id", state.task_id).code == 0  # a person stepped in
    assert akira.state().status == "completed"


def test_a_resume_after_an_escalation_gives_the_step_a_fresh_try(
    akira: Akira, capsys: pytest.CaptureFixture[str]
) -> None:
    akira.write_task(
        "blocked",
        """
        - [ ] 1. Needs the fixture
          - Run: `test -f fixture`
          - Fallback: `test -e fixture`
          - Fallback: `test -r fixture`
    """,
    )
    assert akira.run("loop", "start", "--task", "Specs/blocked/tasks.md").code == 4
    state = akira.state()
    assert "step 1 failed 3 attempt(s)" in state.stop_reason
    (akira.root / "fixture").write_text("the person fixed the cause\n")
    assert akira.run("loop", "resume", "--task-id", state.task_id).code == 0
    assert akira.state().status == "completed" and len(akira.state().steps["1"].attempts) == 4
    progress = akira.run("loop", "progress", "--task-id", state.task_id, capsys=capsys).out
    report = (akira.root / "Logs" / "completion_reports" / f"{state.task_id}.md").read_text()
    assert "[x] 1 Needs the fixture (4 attempts)" in progress, progress  # both count the same
    assert "4 attempt(s))" in report, report


@pytest.mark.slow
def test_stop_hook_pauses_and_resume_removes_it(akira: Akira) -> None:
    akira.write_task(
        "hooked",
        """
        - [ ] 1. one
          - Run: `touch one`
    """,
    )
    (akira.root / ".hooks/stop_autonomous_loop.md").write_text("---\ntype: stop_hook\n---\n")
    assert akira.run("loop", "start", "--task", "Specs/hooked/tasks.md", "--no-wait").code == 3
    state = akira.state()
    assert state.status == "paused" and state.stop_conditions.stop_hook_triggered
    assert not (akira.root / "one").exists()
    assert akira.run("loop", "resume", "--task-id", state.task_id).code == 0
    assert not (akira.root / ".hooks/stop_autonomous_loop.md").exists()


@pytest.mark.slow
def test_a_shared_hook_for_another_task_is_ignored(akira: Akira) -> None:
    akira.write_task("other", "- [ ] 1. one\n  - Run: `true`\n")
    (akira.root / ".hooks/stop_autonomous_loop.md").write_text("---\ntask_id: task_1\n---\n")
    assert akira.run("loop", "start", "--task", "Specs/other/tasks.md", "--no-wait").code == 0


@pytest.mark.slow
def test_steps_added_during_an_attempt_wait_for_a_person_ticks_are_claims(akira: Akira) -> None:
    task = akira.write_task(
        "edits",
        """
        - [ ] 1. Add a step and tick step 2
          - Run: `bash add_and_tick.sh`
        - [ ] 2. Ticked by a person
          - Run: `touch should-not-run`
        - [ ] 3. Normal
          - Run: `touch three`
    """,
    )
    (akira.root / "add_and_tick.sh").write_text(
        "printf -- '- [ ] 4. Added later\\n  - Run: \\x60touch added\\x60\\n' >> Specs/edits/tasks.md\n"
        "sed -i 's/- \\[ \\] 2\\./- [x] 2./' Specs/edits/tasks.md\n"
    )
    # Unsandboxed: in the sandbox the running task file is read-only, so no agent can edit it.
    assert akira.run("loop", "start", "--task", str(task), "--no-wait", "--no-sandbox").code == 3
    assert not (akira.root / "added").exists()  # a new Run: line waits until a person has seen it
    assert "step(s) 4" in akira.state().stop_reason
    assert akira.run("loop", "resume", "--task-id", akira.task_id(), "--no-wait").code == 0
    assert (akira.root / "added").exists() and (akira.root / "three").exists()
    assert not (akira.root / "should-not-run").exists()
    done = [(s.step_id, s.done_by) for s in akira.state().completed_steps]
    assert done == [("1", "akira"), ("2", "claim"), ("3", "akira"), ("4", "akira")]


@pytest.mark.slow
def test_transient_failure_is_retried_without_costing_an_iteration(akira: Akira) -> None:
    akira.write_task(
        "busy",
        """
        - [ ] 1. Lock
          - Run: `test -f tried || { touch tried; echo "database is locked" >&2; exit 1; }`
    """,
    )
    assert akira.run("loop", "start", "--task", "Specs/busy/tasks.md").code == 0
    state = akira.state()
    assert state.iteration == 1 and state.total_failures == 0 and not state.reflections
    assert state.steps["1"].attempts[0].transient_retries == 1
    retry = next(e for e in akira.events() if e.type == EventType.TRANSIENT_RETRY)
    assert retry.data["mechanism"] == "backoff"


@pytest.mark.slow
def test_a_command_timeout_is_a_strategic_failure(akira: Akira) -> None:
    akira.write_task(
        "slow",
        """
        - [ ] 1. Slow
          - Run: `sleep 5`
          - Fallback: `true`
          - Timeout: 1
    """,
    )
    assert akira.run("loop", "start", "--task", "Specs/slow/tasks.md").code == 0
    first = akira.state().steps["1"].attempts[0]
    assert first.outcome == "failure" and "timed out" in first.error and first.transient_retries == 0


@pytest.mark.slow
def test_checks_decide_completion_and_project_checks_run_after_every_step(akira: Akira) -> None:
    akira.write_config("checks:\n  - run: test ! -f broken.flag\n    name: project ok\n")  # green at start
    akira.write_task(
        "checked",
        """
        - [ ] 1. Make it
          - Run: `printf 'class Store: pass\\n' > store.py; touch broken.flag`
          - Fallback: `rm broken.flag`
          - Exists: `store.py`
          - Contains: `store.py` `class Store`
          - Verify: `python3 -c "import store"`
    """,
    )
    assert akira.run("loop", "start", "--task", "Specs/checked/tasks.md").code == 0
    first, second = akira.state().steps["1"].attempts
    assert first.files_changed == ["broken.flag", "store.py"] and second.files_changed == ["broken.flag"]
    assert first.evaluation is not None and not first.evaluation.complete
    assert [c.name for c in first.evaluation.failures()] == ["check `project ok`"]
    assert first.evaluation.confidence == pytest.approx(4 / 5)
    assert second.evaluation is not None and second.evaluation.complete
    assert not akira.state().advisory_checks


@pytest.mark.slow
def test_optional_steps_and_depends(akira: Akira) -> None:
    akira.write_task(
        "deps",
        """
        - [ ] 1. Waits for 2
          - Run: `test -f two && echo 1 >> order`
          - Depends: 2
        - [ ] 2. First
          - Run: `touch two && echo 2 >> order`
        - [ ]* 3. Optional
          - Run: `touch optional`
    """,
    )
    assert akira.run("loop", "start", "--task", "Specs/deps/tasks.md").code == 0
    assert (akira.root / "order").read_text().split() == ["2", "1"]
    assert not (akira.root / "optional").exists()
    akira.write_task("opt", "- [ ]* 1. Optional\n  - Run: `touch optional`\n")
    assert akira.run("loop", "start", "--task", "Specs/opt/tasks.md", "--include-optional").code == 0
    assert (akira.root / "optional").exists()


@pytest.mark.slow
def test_parents_are_ticked_when_their_children_are_done(akira: Akira) -> None:
    akira.write_task(
        "tree",
        """
        - [ ] 1. Parent
          - [ ] 1.1 Child
            - Run: `true`
          - [ ]* 1.2 Optional child
            - Run: `false`
        - [ ] 2. Next
          - Run: `true`
    """,
    )
    assert akira.run("loop", "start", "--task", "Specs/tree/tasks.md").code == 0
    text = (akira.root / "Done/tree/tasks.md").read_text()
    assert "- [x] 1. Parent" in text and "- [x] 1.1 Child" in text and "- [ ]* 1.2" in text


@pytest.mark.slow
def test_step_without_run_and_no_agent_fails_clearly(
    akira: Akira, capsys: pytest.CaptureFixture[str]
) -> None:
    akira.write_task("noagent", "- [ ] 1. Think hard\n")
    result = akira.run("loop", "start", "--task", "Specs/noagent/tasks.md", capsys=capsys)
    assert result.code == 1
    assert "set llm.base_url" in result.err and "agent.command" in result.err
    assert not akira.state_files()  # refused before any state was written
    result = akira.run("loop", "start", "--task", "Specs/example/tasks.md", "--agent", "llm", capsys=capsys)
    assert result.code == 1 and "needs an LLM endpoint" in result.err and not akira.state_files()


@pytest.mark.slow
def test_missing_verify_command_escalates_with_command_not_found(akira: Akira) -> None:
    akira.write_task("verify", "- [ ] 1. Check\n  - Run: `true`\n  - Verify: `no-such-tool --check`\n")
    assert akira.run("loop", "start", "--task", "Specs/verify/tasks.md").code == 4
    escalation = (akira.root / "Needs_Action" / f"escalation_{akira.task_id()}.md").read_text()
    assert "command not found" in escalation


@pytest.mark.slow
def test_backups_every_n_iterations(akira: Akira) -> None:
    akira.write_config("autonomous_loop:\n  backup_state_every_n_iterations: 2\n")
    akira.write_task("many", "".join(f"- [ ] {n}. s{n}\n  - Run: `true`\n" for n in range(1, 6)))
    assert akira.run("loop", "start", "--task", "Specs/many/tasks.md").code == 0
    backups = sorted(p.name for p in (akira.root / ".state/backups").iterdir())
    assert [b.rsplit(".", 2)[1] for b in backups] == ["2", "4"]


@pytest.mark.slow
def test_events_cover_the_loop(akira: Akira, capsys: pytest.CaptureFixture[str]) -> None:
    assert akira.run("loop", "start", "--task", "Specs/example/tasks.md").code == 0
    seen = set(types(akira))
    for kind in (
        EventType.LOOP_STARTED,
        EventType.ITERATION_STARTED,
        EventType.STEP_STARTED,
        EventType.ATTEMPT_STARTED,
        EventType.EVALUATION,
        EventType.STEP_FAILED,
        EventType.REFLECTION_GENERATED,
        EventType.STEP_COMPLETED,
        EventType.STOP_CONDITION,
        EventType.LOOP_COMPLETED,
        EventType.POST_ACTION_REFLECTION,
        EventType.REFLECTION_LOOP_COMPLETED,
    ):
        assert kind in seen, kind
    events = akira.events()
    replanned = next(e for e in events if e.type == EventType.REPLANNED)
    assert replanned.step_id == "2" and "approach: Run -> Fallback 1" in replanned.data["differences"]
    outcomes = [e.data["outcome"] for e in events if e.type == EventType.REFLECTION_LOOP_COMPLETED]
    assert outcomes == ["success"] * 4
    metrics = [e for e in events if e.type == EventType.METRICS and e.step_id == "2"][-1]
    assert metrics.data["step_iterations"] == 2 and "iterations_per_step" not in metrics.data
    task_id = akira.task_id()
    capsys.readouterr()
    logs = akira.run("loop", "logs", "--task-id", task_id, "--json", capsys=capsys)
    lines = [json.loads(line) for line in logs.out.splitlines()]
    assert {"ts", "type", "task_id", "step_id", "iteration", "data"} <= set(lines[0])
    plain = akira.run("loop", "logs", "--task-id", "example", capsys=capsys)
    assert "step_completed" in plain.out


@pytest.mark.slow
def test_every_fallback_is_reached_across_resumes(akira: Akira) -> None:
    task = akira.write_task(
        "many",
        """
        - [ ] 1. Try them all
          - Run: `echo run; exit 1`
          - Fallback: `echo one; exit 1`
          - Fallback: `echo two; exit 1`
          - Fallback: `echo three; exit 1`
          - Fallback: `touch four`
          - Exists: `four`
    """,
    )
    assert akira.run("loop", "start", "--task", str(task)).code == 4  # three attempts used up
    assert akira.run("loop", "resume", "--task-id", akira.task_id(), "--reset-failures").code == 0
    approaches = [a.approach for a in akira.state().steps["1"].attempts]
    assert approaches == ["Run", "Fallback 1", "Fallback 2", "Fallback 3", "Fallback 4"]


@pytest.mark.slow
def test_start_refuses_a_task_under_done(akira: Akira) -> None:
    done = akira.root / "Done" / "old" / "tasks.md"
    done.parent.mkdir(parents=True)
    done.write_text("- [x] 1. Finished\n  - Run: `true`\n")
    result = akira.cli("loop", "start", "--task", "Done/old/tasks.md")
    assert result.code == 1 and "under Done/" in result.err and "move it back under Specs/" in result.err
    assert not akira.state_files()


def test_a_step_with_no_check_is_never_said_to_have_passed_its_checks(akira: Akira) -> None:
    akira.write_task(
        "bare", "- [ ] 1. Make\n  - Run: `touch made`\n- [ ] 2. Check\n  - Run: `touch b`\n  - Exists: `b`\n"
    )
    assert akira.run("loop", "start", "--task", "Specs/bare/tasks.md").code == 0
    said = {
        e.step_id: e.data.get("what_worked", "") for e in akira.events() if e.type == "post_action_reflection"
    }
    assert said["1"] == "Run changed files, with no check to pass (unverified)", said
    assert said["2"] == "Run passed its check", said
