"""Configuration layering, the seed's monitoring keys, reinjection, and the two displays."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from akira_cli.config import Config, load_config
from akira_cli.errors import AkiraError
from akira_cli.events import EventType
from tests.support.workspace import Akira


def test_defaults_are_the_seeds() -> None:
    config = Config()
    loop = config.autonomous_loop
    assert (loop.max_iterations, loop.failure_threshold, loop.timeout_seconds) == (100, 3, 3600)
    assert (loop.reinject_every_n_iterations, loop.backup_state_every_n_iterations) == (10, 10)
    assert config.reflection.max_iterations == 3 and config.evaluation.confidence_threshold == 0.8
    assert config.resource_limits.max_api_calls_per_minute == 60


def test_layers_defaults_file_config_flags_env(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config/autonomous_loop.yaml").write_text(
        "autonomous_loop:\n  max_iterations: 7\n  failure_threshold: 2\nllm:\n  model: from-file\n"
    )
    extra = tmp_path / "extra.yaml"
    extra.write_text("autonomous_loop:\n  max_iterations: 9\nllm:\n  base_url: http://file/v1\n")
    config = load_config(
        tmp_path,
        extra,
        {"autonomous_loop.failure_threshold": 5},
        environ={"OPENAI_API_BASE": "http://env/v1", "AKIRA_MODEL": "from-env", "OPENAI_API_KEY": "k"},
    )
    assert config.autonomous_loop.max_iterations == 9  # --config beats the workspace file
    assert config.autonomous_loop.failure_threshold == 5  # flags beat files
    assert config.llm.base_url == "http://env/v1" and config.llm.model == "from-env"  # env wins
    assert config.llm.api_key is not None and config.llm.api_key.get_secret_value() == "k"
    assert config.public_dict()["llm"]["api_key"] == "****"


def test_the_shipped_config_documents_every_key_and_loads_to_the_defaults() -> None:
    root = Path(__file__).resolve().parent.parent
    shipped = root / "config" / "autonomous_loop.yaml"
    template = root / "akira_cli" / "templates" / "autonomous_loop.yaml"
    assert shipped.read_text() == template.read_text()
    assert load_config(root, environ={}) == Config()
    text = shipped.read_text()
    for section, model in Config.model_fields.items():
        assert f"{section}:" in text
        annotation = model.annotation
        if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
            for key in annotation.model_fields:
                line = next(line for line in text.splitlines() if line.strip().startswith(f"{key}:"))
                assert "#" in line or key in {"prices", "custom_criteria"}, f"{section}.{key} has no comment"


def test_a_missing_config_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(AkiraError, match=r"nope\.yaml: config file not found"):
        load_config(tmp_path, tmp_path / "nope.yaml", environ={})


@pytest.mark.slow
def test_an_event_line_spells_each_value_as_json_does_and_escapes_what_a_step_wrote() -> None:
    """The line `loop logs` and the display print: every value as json.dumps writes it (an
    int of any size, a float, NaN, a bool, None, a list), and no control character raw."""
    import json

    from akira_cli.events import Event

    data = {
        "big": 10**400,
        "count": 3,
        "seconds": 0.093,
        "nan": float("nan"),
        "far": float("inf"),
        "ok": True,
        "no": False,
        "none": None,
        "paths": ["a", 1],
        "said": "caf\u00e9 \x1b]8;;x\x07 done",
    }
    line = Event(ts="2026-11-28T00:00:00.000Z", type="metrics", step_id="1", iteration=2, data=data).line()
    big = json.dumps(10**400)
    assert line == (
        f"2026-11-28T00:00:00.000Z [2] step 1 metrics big={big[:119]}… count=3 seconds=0.093 nan=NaN "
        'far=Infinity ok=true no=false none=null paths=["a", 1] said=café \\x1b]8;;x\\x07 done'
    )


def test_progress_reports_and_retry_failed_steps(akira: Akira) -> None:
    akira.write_config(
        "autonomous_loop:\n  progress_report_every_n_iterations: 2\n  retry_failed_steps: false\n"
    )
    akira.write_task(
        "p",
        "- [ ] 1. a\n  - Run: `true`\n- [ ] 2. b\n  - Run: `true`\n- [ ] 3. c\n  - Run: `exit 1`\n  - Fallback: `true`\n",
    )
    assert akira.run("loop", "start", "--task", "Specs/p/tasks.md").code == 4
    report = (akira.root / "Logs/progress_reports" / f"{akira.task_id()}.md").read_text()
    assert "type: progress_report" in report and "**Iteration**: 3/100" in report  # the last word
    assert "**Status**: needs_action" in report
    assert len(akira.state().steps["3"].attempts) == 1  # no retry, so no fallback
    from importlib.resources import files

    from akira_cli.config_docs import docstrings
    from akira_cli.sections import LoopSettings

    said = "Logs/progress_reports/<id>.md"  # where the docs say it is, as it is written
    assert said in docstrings(LoopSettings)["create_progress_reports"]
    assert said in files("akira_cli.templates").joinpath("autonomous_loop.yaml").read_text()


@pytest.mark.slow
def test_log_every_iteration_false_keeps_the_rest_of_the_log(akira: Akira) -> None:
    akira.write_config("autonomous_loop:\n  log_every_iteration: false\n")
    assert akira.run("loop", "start", "--task", "Specs/example/tasks.md").code == 0
    kinds = {e.type for e in akira.events()}
    assert EventType.ITERATION_STARTED not in kinds and EventType.STEP_COMPLETED in kinds


@pytest.mark.slow
def test_reinjected_context_carries_the_current_state(akira: Akira) -> None:
    """The continuation context in each prompt is the current one."""
    agent = akira.root / "agent.py"
    agent.write_text(
        "import pathlib, sys, os\n"
        "pathlib.Path('prompt_' + os.environ['AKIRA_STEP_ID']).write_text(sys.stdin.read())\n"
    )
    akira.write_config(
        f"agent:\n  kind: command\n  command: {sys.executable} {agent}\n"
        "autonomous_loop:\n  reinject_every_n_iterations: 2\n"
    )
    akira.write_task("ctx", "".join(f"- [ ] {n}. step {n}\n" for n in range(1, 5)))
    assert akira.run("loop", "start", "--task", "Specs/ctx/tasks.md").code == 0
    third = (akira.root / "prompt_3").read_text()
    assert "# Task Continuation Context" in third and "**Iteration**: 3/100" in third
    assert "**Completed Steps**: 2 (1, 2)" in third and "**Step**: 3" in third
    reasons = [e.data["reason"] for e in akira.events() if e.type == EventType.REINJECTED]
    assert reasons == ["first", "every_n_iterations"]


@pytest.mark.slow
def test_a_terminal_gets_the_live_display(akira: Akira) -> None:
    akira.write_task("tty", "- [ ] 1. a\n  - Run: `sleep 0.3`\n")
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "akira_cli",
            "loop",
            "start",
            "--task",
            "Specs/tty/tasks.md",
            "--root",
            str(akira.root),
        ],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        close_fds=True,
        env={**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"},
    )
    os.close(follower)
    screen = b""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            screen += chunk
        elif process.poll() is not None:
            break
    os.close(leader)
    assert process.wait(timeout=10) == 0
    text = screen.decode(errors="replace")
    assert "\x1b[" in text  # Rich drew on the terminal
    for label in ("iteration", "attempt", "success rate", "elapsed", "ETA"):
        assert label in text, label


@pytest.mark.slow
def test_the_last_progress_report_says_how_the_run_ended_and_where_the_task_is(akira: Akira) -> None:
    akira.write_config("autonomous_loop:\n  progress_report_every_n_iterations: 2\n")
    assert akira.run("loop", "start", "--task", "Specs/example/tasks.md").code == 0  # 5 iterations
    report = (akira.root / "Logs" / "progress_reports" / f"{akira.task_id()}.md").read_text()
    assert "**Status**: completed (all 4 steps are done)" in report
    assert "**Task file**: Done/example/tasks.md" in report and "**Iteration**: 5/100" in report


def test_the_dashboard_in_a_pipe_is_one_line_per_loop_with_its_feature(akira: Akira) -> None:
    akira.write_task("greet", "- [ ] 1. s\n  - Run: `true`\n")
    assert akira.run("loop", "start", "--task", "Specs/greet/tasks.md").code == 0
    shown = akira.cli("loop", "status").out.splitlines()
    [line] = [row for row in shown if akira.task_id() in row]
    assert line.split()[:3] == [akira.task_id(), "greet", "completed"], shown
    assert "greet" not in [row.strip() for row in shown], shown
