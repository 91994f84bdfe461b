"""Bounded state (schema 2) and the journal (flat cost): a long run keeps a small state file, the
full history is in `.state/history/<id>.jsonl`, the ledger survives steps leaving the state
file, and version 1 files are read."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from akira_cli.events import EventType
from akira_cli.state.journal import read_history
from akira_cli.state.models import KEEP_FINISHED, CompletedStep, LoopState
from akira_cli.state.records import KEEP_ATTEMPTS, KEEP_ENTRIES, Attempt
from akira_cli.state.store import StateStore
from tests.support.workspace import Akira

STEPS = 45


def many_steps(count: int, last: str = "true") -> str:
    lines = []
    for n in range(1, count + 1):
        command = last if n == count else f"echo {n} >> runs.txt"
        lines += [f"- [ ] {n}. step {n}", f"  - Run: `{command}`"]
    return "\n".join(lines) + "\n"


def runs(akira: Akira) -> list[str]:
    path = akira.root / "runs.txt"
    return path.read_text().split() if path.exists() else []


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_long_run_keeps_the_state_file_bounded_and_the_history_whole(akira: Akira) -> None:
    akira.write_task("long", many_steps(STEPS))
    assert akira.run("loop", "start", "--task", "Specs/long/tasks.md", "--no-wait").code == 0
    [archived] = (akira.root / ".state" / "archive").glob("autonomous_loop_*.json")
    raw = json.loads(archived.read_bytes())
    assert raw["schema_version"] == 2
    assert len(raw["completed_steps"]) < 2 * KEEP_ENTRIES
    assert len(raw["steps"]) < 2 * KEEP_FINISHED
    assert raw["history"]["completed_sealed"] + len(raw["completed_steps"]) == STEPS

    state = akira.state()
    assert state.completed_total == STEPS
    assert state.completed_ids() == {str(n) for n in range(1, STEPS + 1)}  # sealed ones read back
    assert state.done_breakdown()["unverified"] + state.done_breakdown()["verified"] == STEPS
    assert state.metrics.final_success_rate == 1.0 and state.metrics.first_attempt_success_rate == 1.0

    history = read_history(akira.root / ".state" / "history" / f"{state.task_id}.jsonl")
    assert [step.step_id for step in history.completed] == [str(n) for n in range(1, STEPS + 1)]
    assert sorted(history.attempts, key=int) == [str(n) for n in range(1, STEPS + 1)]
    assert all(len(attempts) == 1 for attempts in history.attempts.values())

    report = (akira.root / "Logs" / "completion_reports" / f"{state.task_id}.md").read_text()
    assert all(f"- {n}: step {n} (" in report for n in range(1, STEPS + 1))  # sealed ones too
    progress = json.loads(akira.cli("loop", "progress", "--task-id", state.task_id, "--json").out)
    assert progress["steps_done"] == STEPS and {s["attempts"] for s in progress["steps"]} == {1}

    events = akira.events(state.task_id)
    metrics = [e for e in events if e.type == EventType.METRICS]
    sizes = [len(e.model_dump_json()) for e in metrics]
    assert max(sizes) - min(sizes) < 40, "a metrics event grew with the run"
    assert all("iterations_per_step" not in e.data for e in metrics)
    completed = [e for e in events if e.type == EventType.LOOP_COMPLETED][-1]
    assert "iterations_per_step" not in completed.data["metrics"]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_sealed_step_unticked_by_a_person_is_ticked_back_not_run_again(akira: Akira) -> None:
    task = akira.write_task("long", many_steps(STEPS, last="test -f go"))
    assert akira.run("loop", "start", "--task", "Specs/long/tasks.md", "--no-wait").code == 4
    state = akira.state()
    assert state.history.completed_sealed >= KEEP_ENTRIES  # step 1 lives only in the journal
    assert "1" not in {step.step_id for step in state.completed_steps}
    assert runs(akira) == [str(n) for n in range(1, STEPS)]

    task.write_text(task.read_text().replace("- [x] 1. step 1", "- [ ] 1. step 1"))
    (akira.root / "go").touch()
    assert akira.run("loop", "resume", "--task-id", state.task_id, "--no-wait").code == 0
    assert runs(akira) == [str(n) for n in range(1, STEPS)]  # nothing ran twice
    done = (akira.root / "Done" / "long" / "tasks.md").read_text()
    assert "- [x] 1. step 1" in done and "- [ ]" not in done
    ledger = [e for e in akira.events(state.task_id) if e.type == EventType.LEDGER]
    assert any(e.step_id == "1" and e.data["action"] == "reticked" for e in ledger)


def attempt(step: str, n: int, outcome: str = "failure") -> Attempt:
    return Attempt(step_id=step, number=n, iteration=n, approach=f"Fallback {n}", outcome=outcome)  # type: ignore[arg-type]


def test_a_step_record_keeps_its_last_attempts_and_counts_them_all() -> None:
    state = LoopState(task_id="task_20260101_000000", task_path="/w/Specs/x/tasks.md")
    record = state.record("1", "one")
    for n in range(1, 10):
        record.add(attempt("1", n, "interrupted" if n == 4 else "failure"))
    assert len(record.attempts) == KEEP_ATTEMPTS and record.attempts_total == 9
    assert record.window_count == 8  # the interrupted one does not count
    assert record.tried() == {f"Fallback {n}" for n in range(1, 10) if n != 4}
    record.new_window()
    assert record.window() == [] and record.window_count == 0
    record.add(attempt("1", 10))
    assert [a.number for a in record.window()] == [10]


def test_every_attempt_reaches_the_journal_even_those_trimmed_from_the_state(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    state = LoopState(task_id="task_20260101_000000", task_path="/w/Specs/x/tasks.md")
    record = state.record("1", "one")
    for n in range(1, 15):
        record.add(attempt("1", n))
        store.save(state)
    state.status = "failed"
    store.save(state)  # a stop writes whatever waits
    history = store.history(state)
    assert [a.number for a in history.attempts["1"]] == list(range(1, 15))
    loaded = store.load(state.task_id)
    assert [a.number for a in loaded.steps["1"].attempts] == list(range(9, 15))
    assert loaded.steps["1"].attempts_total == 14


def test_a_version_1_state_file_is_read_counted_and_trimmed(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    old = {
        "schema_version": 1,
        "task_id": "task_20260101_000000",
        "task_path": "/w/Specs/x/tasks.md",
        "status": "paused",
        "completed_steps": [
            CompletedStep(step_id=str(n), description=f"step {n}").model_dump() for n in range(1, 31)
        ],
        "steps": {
            "31": {
                "step_id": "31",
                "description": "step 31",
                "window_start": 2,
                "attempts": [attempt("31", n).model_dump() for n in range(1, 9)],
            }
        },
        "metrics": {"iterations_per_step": {str(n): 1 for n in range(1, 32)}},
    }
    store.path(old["task_id"]).write_text(json.dumps(old))  # type: ignore[arg-type]
    state = store.load("task_20260101_000000")
    record = state.steps["31"]
    assert state.schema_version == 2
    assert record.attempts_total == 8 and record.window_count == 6 and len(record.tried()) == 8
    assert state.completed_ids() == {str(n) for n in range(1, 31)}

    store.save(state)
    saved = json.loads(store.path(state.task_id).read_bytes())
    assert saved["schema_version"] == 2
    assert len(saved["completed_steps"]) == KEEP_ENTRIES and saved["history"]["completed_sealed"] == 20
    assert len(saved["steps"]["31"]["attempts"]) <= KEEP_ATTEMPTS
    again = store.load(state.task_id)
    assert again.completed_ids() == {str(n) for n in range(1, 31)}
    assert again.steps["31"].window_count == 6


def test_the_journal_reader_skips_torn_lines_and_repeats_and_follows_the_sealed_chain(
    tmp_path: Path,
) -> None:
    path = tmp_path / "task.jsonl"
    completed = CompletedStep(step_id="1", description="one").model_dump_json()
    lost = CompletedStep(step_id="7", description="seven").model_dump_json()
    lines = [
        f'{{"kind":"completed","n":0,{lost[1:]}',  # its state file was never saved
        '{"kind":"sealed","from":0,"ids":["a","b"]}',  # cut off before its state file was saved
        f'{{"kind":"completed","n":0,{completed[1:]}',
        f'{{"kind":"completed","n":0,{completed[1:]}',  # a save repeated after a crash
        '{"kind":"sealed","from":0,"ids":["1","2"]}',
        '{"kind":"sealed","from":2,"ids":["3"]}',
        '{"kind":"attem',  # torn by a kill -9
    ]
    path.write_text("\n".join(lines) + "\n")
    history = read_history(path)
    assert [step.step_id for step in history.completed] == ["1"]
    assert history.sealed_ids(3) == {"1", "2", "3"}
    assert history.sealed_ids(2) == {"1", "2"}


def full_completed(ws: Path) -> list[str]:
    """Every completed step of the one loop in `ws`: the sealed ones and the state file's."""
    store = StateStore(ws / ".state")
    ids = store.task_ids()
    if not ids:
        return []
    state = store.load(ids[0])
    return [step.step_id for step in store.all_completed(state)]


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize("seed", [5, 17, 29])
def test_kill9_while_completed_steps_are_sealed_into_the_journal(tmp_path: Path, seed: int) -> None:
    """test_crash's invariants on a task long enough that completed steps leave the state file
    for the journal several times: no state file is corrupt, no completed step is lost or runs
    again, and at most the step in flight runs twice."""
    import random
    import subprocess

    from tests.support.crash import (
        AKIRA,
        Plan,
        init_workspace,
        kill9,
        load_states,
        loops_started,
        output_of,
        read_ledger,
        run_to_end,
        settle_orphans,
        spawn,
        wait_until_started,
    )

    plan = Plan([(str(n), []) for n in range(1, 51)])
    ws = init_workspace(tmp_path, plan)
    out = tmp_path / "akira.out"
    rng = random.Random(seed)
    completed: list[str] = []
    ledger = read_ledger(ws)
    kills = 0
    for _ in range(12):
        before = loops_started(ws)
        proc = spawn(ws, AKIRA, out)
        wait_until_started(ws, proc, before)
        try:
            code = proc.wait(timeout=rng.uniform(0.2, 0.9))
        except subprocess.TimeoutExpired:
            settle_orphans(kill9(proc), kill=False)
            kills += 1
            load_states(ws)  # every state file is valid JSON and a valid LoopState
            now, runs = full_completed(ws), read_ledger(ws)
            assert len(now) == len(set(now)), f"a step completed twice: {now}"
            assert now[: len(completed)] == completed, "completed steps were lost"
            assert all((ws / f"done_{step}.txt").exists() for step in now)
            delta = runs - ledger
            assert not set(delta) & set(completed), f"a completed step ran again: {delta}"
            assert all(count == 1 for count in delta.values()), delta
            assert len(set(runs) - set(now)) <= 1, "several steps started and not done"
            completed, ledger = now, runs
            continue
        assert code == 0, output_of(out)
        break
    else:
        run_to_end(ws, out, AKIRA)
    assert kills >= 3
    assert full_completed(ws) == plan.leaves
    runs = read_ledger(ws)
    assert sum(runs.values()) - len(plan.leaves) <= kills  # one in-flight step per crash at most
    [archived] = (ws / ".state" / "archive").glob("autonomous_loop_*.json")
    state = LoopState.model_validate_json(archived.read_bytes())
    assert state.status == "completed" and state.history.completed_sealed >= KEEP_ENTRIES


def test_a_deferred_seal_lets_completed_steps_go_only_once_their_batch_is_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The save at a step's start leaves the seal's fsync to the command starting next: until
    it is done, the state file still holds the steps, so a crash in between loses none."""
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".jsonl"):  # the journal's, not the state's
            synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    store = StateStore(tmp_path)
    state = LoopState(task_id="task_20260101_000000", task_path="/w/Specs/x/tasks.md")
    for n in range(1, 2 * KEEP_ENTRIES + 1):
        state.completed_steps.append(CompletedStep(step_id=str(n), description=f"step {n}"))
    store.save(state, defer_sync=True)
    on_disk = json.loads(store.path(state.task_id).read_bytes())
    assert not synced and len(on_disk["completed_steps"]) == 2 * KEEP_ENTRIES
    assert on_disk["history"]["completed_sealed"] == 0
    assert read_history(store.journal_path(state.task_id)).sealed == {0: [str(n) for n in range(1, 11)]}

    store.sync_pending()  # the next command's start
    assert len(synced) == 1
    store.save(state, defer_sync=True)
    on_disk = json.loads(store.path(state.task_id).read_bytes())
    assert len(synced) == 1 and on_disk["history"]["completed_sealed"] == KEEP_ENTRIES
    assert [s["step_id"] for s in on_disk["completed_steps"]] == [str(n) for n in range(11, 21)]
    assert StateStore(tmp_path).load(state.task_id).completed_ids() == {str(n) for n in range(1, 21)}


def test_without_a_command_in_between_the_next_save_syncs_the_batch_itself(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    state = LoopState(task_id="task_20260101_000000", task_path="/w/Specs/x/tasks.md")
    for n in range(1, 2 * KEEP_ENTRIES + 1):
        state.completed_steps.append(CompletedStep(step_id=str(n), description=f"step {n}"))
    store.save(state, defer_sync=True)
    store.save(state)  # a stop, say: no command ran
    loaded = StateStore(tmp_path).load(state.task_id)
    assert loaded.history.completed_sealed == KEEP_ENTRIES and len(loaded.completed_steps) == KEEP_ENTRIES
    assert loaded.completed_ids() == {str(n) for n in range(1, 21)}
