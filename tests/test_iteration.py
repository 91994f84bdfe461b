"""`loop.iteration.Iteration`, the one writer of an iteration's part of the state: what each
call leaves on disk through a real save (a `StateStore`), and the events it tells of."""

from __future__ import annotations

from pathlib import Path

from akira_cli.events import Event, EventBus
from akira_cli.git.step_message import Found
from akira_cli.loop.iteration import Iteration
from akira_cli.state.models import LoopState
from akira_cli.state.records import Attempt, ReviewResult
from akira_cli.state.store import StateStore
from akira_cli.tasks.model import Step

TASK = "task_20261202_010000"


def step(step_id: str) -> Step:
    return Step(id=step_id, title=f"step {step_id}", box=" ", line=1, box_offset=0)


def setup(tmp_path: Path) -> tuple[StateStore, LoopState, Iteration, list[Event]]:
    store = StateStore(tmp_path / ".state")
    state = LoopState(task_id=TASK, task_path=str(tmp_path / "tasks.md"))
    bus, seen = EventBus(TASK), []
    bus.subscribe(seen.append)
    return store, state, Iteration(state, bus), seen


def test_begin_complete_and_give_back_through_a_real_save(tmp_path: Path) -> None:
    store, state, iteration, seen = setup(tmp_path)
    state.pending_guidance = "use the small fixture"
    one = step("1")
    assert iteration.begin(one, lambda: store.save(state)) == 1
    on_disk = store.load(TASK)
    assert on_disk.iteration == 1 and on_disk.current_step is not None
    assert (on_disk.current_step.step_id, on_disk.current_step.attempt) == ("1", 1)
    assert on_disk.steps["1"].guidance == "use the small fixture" and on_disk.pending_guidance is None
    assert [(e.type, e.iteration) for e in seen] == [("iteration_started", 1), ("step_started", 1)]

    iteration.give_back()  # a usage limit: the next begin is the same iteration again
    assert iteration.begin(one, lambda: store.save(state)) == 1
    assert store.load(TASK).iteration == 1
    assert [e.type for e in seen[2:]] == ["iteration_started", "step_started"]

    attempt = Attempt(step_id="1", number=1, iteration=1, approach="Run", outcome="success")
    attempt.review = ReviewResult(verdict="approved")
    state.record("1", one.title).add(attempt)
    state.record("1", one.title).collision = "an earlier wave's"
    iteration.complete(one, attempt)
    store.save(state)
    on_disk = store.load(TASK)
    assert on_disk.current_step is None and on_disk.completed_ids() == {"1"}
    assert on_disk.reviews == {"approved": 1} and on_disk.steps["1"].collision is None

    iteration.begin(step("2"), lambda: store.save(state))
    assert store.load(TASK).steps["2"].window_count == 0  # its attempt is numbered 1
    assert [e.type for e in seen[4:]] == ["iteration_started", "step_started"]


def test_a_wave_steps_begin_lists_it_running_and_a_collision_gives_its_attempt_back(tmp_path: Path) -> None:
    store, state, iteration, seen = setup(tmp_path)
    slot = tmp_path / "slots" / "1"
    iteration.begin(step("2"), lambda: store.save(state), worktree=slot)
    iteration.begin(step("3"), lambda: store.save(state), worktree=tmp_path / "slots" / "2")
    on_disk = store.load(TASK)
    assert on_disk.iteration == 2 and on_disk.current_step is None
    assert [(s.step_id, s.worktree) for s in on_disk.current_steps] == [
        ("2", str(slot)),
        ("3", str(tmp_path / "slots" / "2")),
    ]
    assert seen[0].data == {"attempt": 1, "worktree": str(slot)}

    iteration.finished("2")
    record = state.record("2", "step 2")
    record.add(Attempt(step_id="2", number=1, iteration=1, approach="Run", outcome="collided"))
    iteration.collided(step("2"), "a.py collided.")
    store.save(state)
    on_disk = store.load(TASK)
    assert [s.step_id for s in on_disk.current_steps] == ["3"]
    assert on_disk.iteration == 2  # a collision keeps its iteration spent
    assert on_disk.steps["2"].window_count == 0
    assert on_disk.steps["2"].collision == "Its parallel run collided: a.py collided."
    assert iteration.forget_running() == ["3"] and state.current_steps == []


def test_a_fix_step_takes_no_guidance_and_no_tally(tmp_path: Path) -> None:
    store, state, iteration, _ = setup(tmp_path)
    state.pending_guidance = "for the next task step"
    fix = step("ci-1")
    iteration.begin(fix, lambda: store.save(state), guidance=False)
    attempt = Attempt(step_id="ci-1", number=1, iteration=1, approach="Run", outcome="success")
    attempt.review = ReviewResult(verdict="approved")
    iteration.complete(fix, attempt, tally=False)
    store.save(state)
    on_disk = store.load(TASK)
    assert on_disk.pending_guidance == "for the next task step" and on_disk.reviews == {}
    assert on_disk.completed_ids() == {"ci-1"}


def test_commits_a_crash_left_unrecorded_are_adopted_and_a_tick_by_someone_accepted(tmp_path: Path) -> None:
    store, state, iteration, seen = setup(tmp_path)
    iteration.begin(step("1"), lambda: store.save(state))
    state.record("2", "step 2")
    iteration.accept(step("3"), "person", verified=False)
    found = [
        Found(sha="a" * 40, task_id=TASK, step_id="2", verified=True, review="approved"),
        Found(sha="b" * 40, task_id=TASK, step_id="3", verified=False),
        Found(sha="c" * 40, task_id=TASK, step_id="ci-1", verified=True),
    ]
    assert iteration.adopt(found) == ["2", "ci-1"]
    store.save(state)
    on_disk = store.load(TASK)
    done = {s.step_id: s for s in on_disk.completed_steps}
    assert (done["2"].description, done["2"].commit, done["2"].review) == ("step 2", "a" * 40, "approved")
    assert (done["3"].done_by, done["3"].attempts, done["3"].commit) == ("person", 0, "b" * 40)
    assert done["ci-1"].description == "ci-1" and on_disk.reviews == {"approved": 1}
    assert on_disk.current_step is None
    assert seen[-1].type == "ledger" and seen[-1].data == {
        "action": "commits_adopted",
        "steps": ["2", "ci-1"],
    }
    assert iteration.adopt(found) == [] and len(state.completed_steps) == 3  # adopted once
