"""Person-to-loop control: resume requests for a live waiting process, and applying a resume."""

from __future__ import annotations

import contextlib
from pathlib import Path

from pydantic import BaseModel, ValidationError

from akira_cli.errors import AkiraError
from akira_cli.fileio import atomic_write
from akira_cli.state.models import LoopState

MAX_GUIDANCE = 16 * 1024
"""Bytes of UTF-8 a resume's guidance may hold, from MCP, `--guidance` or a `## Guidance`
section alike: it goes whole into a prompt and into the state."""


def bounded_guidance(text: str, where: str) -> str:
    """`text`, or a one-line refusal naming `where` when it is over `MAX_GUIDANCE`."""
    size = len(text.encode("utf-8"))
    if size > MAX_GUIDANCE:
        raise AkiraError(
            f"{where} is {size / 1024:.1f} KiB, more than the {MAX_GUIDANCE // 1024} KiB akira "
            "takes as guidance; say it shorter (it goes whole into the agent's prompt)"
        )
    return text


class ResumeRequest(BaseModel):
    """`.state/resume_<id>.json`, written by `loop resume` for a process that is waiting."""

    max_iterations: int | None = None
    reset_failures: bool = False
    guidance: str | None = None
    accept_exam: list[str] = []
    """Steps a person lets change their exam (`--accept-exam STEP`)."""


def request_path(state_dir: Path, task_id: str) -> Path:
    return state_dir / f"resume_{task_id}.json"


def write_request(state_dir: Path, task_id: str, request: ResumeRequest) -> None:
    atomic_write(request_path(state_dir, task_id), request.model_dump_json().encode())


def take_request(state_dir: Path, task_id: str) -> ResumeRequest | None:
    path = request_path(state_dir, task_id)
    try:
        request = ResumeRequest.model_validate_json(path.read_bytes())
    except (OSError, ValidationError):
        return None
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    return request


def apply_resume(state: LoopState, request: ResumeRequest) -> None:
    """Clears the stop flags. After a give-up (needs_action, failed) a person has stepped in,
    so every unfinished step also gets a fresh attempt window and the failures in a row start
    again from 0 (else the threshold the last window's attempts reached stops the loop again
    before any attempt); a paused or interrupted loop carries on with the attempts and the
    count it has (`--reset-failures` clears the count), so a crash never buys a failing
    approach a rerun."""
    if request.max_iterations is not None:
        state.max_iterations = request.max_iterations
    if request.reset_failures:
        state.consecutive_failures = 0
    if request.guidance:
        state.pending_guidance = request.guidance
    for step_id in request.accept_exam:
        if step_id in state.steps:
            state.steps[step_id].exam_accepted = True
    if state.status in ("needs_action", "failed"):
        state.no_progress_streak = state.consecutive_failures = 0
        done = state.completed_ids()
        for record in state.steps.values():
            if record.step_id not in done:
                record.new_window()
    state.stop_conditions.clear()
    state.stop_reason = ""
    state.status = "running"
