"""The state store: encoding, atomic saves, quarantine, backups."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from akira_cli.errors import AkiraError
from akira_cli.state.models import LoopState
from akira_cli.state.records import Attempt, PostActionReflection
from akira_cli.state.store import StateStore


def state_with_history() -> LoopState:
    state = LoopState(task_id="task_20260101_000000", task_path="/w/Specs/x/tasks.md")
    for n in range(1, 4):
        record = state.record(str(n), f"step {n}")
        record.add(
            Attempt(
                step_id=str(n), number=1, iteration=n, approach="Run", actions=["true"], outcome="success"
            )
        )
    return state


def test_cached_encoding_matches_pydantic_and_follows_every_change(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    state = state_with_history()

    def same() -> None:
        assert json.loads(store.encode(state)) == json.loads(state.model_dump_json())
        assert LoopState.model_validate_json(store.encode(state)) == state

    same()
    record = state.steps["2"]
    record.add(Attempt(step_id="2", number=2, iteration=4, approach="Fallback 1"))
    same()
    record.reflections.append("ref-1")
    record.post_action = PostActionReflection(what_worked="it ran")
    record.guidance = "try harder"
    record.window_start = 2
    same()
    state.record("9", "new").add(Attempt(step_id="9", number=1, iteration=5, approach="Run"))
    state.iteration = 5
    same()


def test_save_is_atomic_and_loadable(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    state = state_with_history()
    store.save(state)
    assert store.load(state.task_id) == state
    names = sorted(p.name for p in tmp_path.iterdir())
    # history: the journal; .wal: the save log that makes each save durable
    assert names == [f"autonomous_loop_{state.task_id}.{ext}" for ext in ("json", "wal")] + ["history"]


def test_backups_keep_the_last_five(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    state = state_with_history()
    for iteration in range(1, 9):
        state.iteration = iteration
        store.backup(state)
    kept = sorted(int(p.suffixes[-2][1:]) for p in (tmp_path / "backups").iterdir())
    assert kept == [4, 5, 6, 7, 8]


def test_a_backup_copies_the_last_save(tmp_path: Path) -> None:
    """The bytes the last save wrote (the loop backs up right after a save); a state this
    store never saved is encoded."""
    store = StateStore(tmp_path)
    state = state_with_history()
    assert LoopState.model_validate_json(store.backup(state).read_bytes()) == state
    store.save(state)
    saved = store.path(state.task_id).read_bytes()
    state.iteration = 7
    assert store.backup(state).read_bytes() == saved


def test_a_corrupt_state_file_names_the_backup_to_restore(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    state = LoopState(task_id="task_20260101_000000", task_path="x")
    store.save(state)
    backup = store.backup(state)
    store.log_path(state.task_id).unlink()  # no save log to recover it from
    store.path(state.task_id).write_text("{not json")
    with pytest.raises(AkiraError) as raised:
        store.load(state.task_id)
    assert f"restore the newest backup with: cp {backup} {store.path(state.task_id)}" in str(raised.value)
    store.path(state.task_id).write_text("{not json")
    backup.unlink()
    with pytest.raises(AkiraError, match="there is no backup of it"):
        store.load(state.task_id)
