"""A new user's set-up: `akira init` in a project that keeps its specs with a spec tool, or has
its own `.venv`; every mistyped checkbox named in one refusal; help that a narrow pipe does not
cut; no internal section numbers in what a user reads. Real subprocesses and files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from akira_cli.cli import main
from tests.support.workspace import Akira

COMMANDS = [
    ["init"], ["loop", "start"], ["loop", "resume"], ["loop", "status"], ["loop", "state"],
    ["loop", "progress"], ["loop", "logs"], ["loop", "stop"], ["loop", "cancel"],
    ["loop", "undo"], ["fleet", "add"], ["fleet", "worker"], ["fleet", "status"], ["fleet", "cancel"],
    ["reason"], ["config", "show"], ["doctor"], [],
]  # fmt: skip


def run(*args: str, cwd: Path, columns: str = "") -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "AKIRA_ROOT"}
    if columns:
        env["COLUMNS"] = columns
    return subprocess.run(
        [sys.executable, "-m", "akira_cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("layout", "task"),
    [
        ({".kiro/specs/calc/tasks.md": "- [ ] 1. Add\n  - Run: `true`\n"}, ".kiro/specs/calc/tasks.md"),
        ({".specify/memory/constitution.md": "", "specs/001-calc/tasks.md": "- [ ] T001 Add\n"}, "specs/001-calc/tasks.md"),
        ({"openspec/changes/add-calc/tasks.md": "- [ ] 1.1 Add\n"}, "openspec/changes/add-calc/tasks.md"),
    ],
)  # fmt: skip
@pytest.mark.slow
def test_init_in_a_project_with_its_specs_adds_no_example_and_names_its_task(
    tmp_path: Path, layout: dict[str, str], task: str
) -> None:
    project = tmp_path / "project"
    for name, text in layout.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    done = run("init", cwd=project)
    assert done.returncode == 0, done.stderr
    assert not (project / "Specs").exists() and not (project / "Done").exists()
    assert not (project / "Needs_Action").exists()
    assert (project / "config" / "autonomous_loop.yaml").is_file() and (project / ".state").is_dir()
    assert done.stdout.splitlines()[-1] == f"next: akira loop start --task {task}"
    if task.startswith(".kiro"):  # the line it prints runs as it is
        started = run("loop", "start", "--task", task, "--agent", "script", cwd=project)
        assert started.returncode == 0, started.stderr
        assert (project / task).read_text().startswith("- [x] 1.")


@pytest.mark.slow
def test_init_proposes_the_projects_own_interpreter_when_it_has_a_venv(tmp_path: Path) -> None:
    project = tmp_path / "app"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'app'\n")
    venv.create(project / ".venv", with_pip=False)
    done = run("init", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "proposed project check (commented in the config): .venv/bin/python -m pytest -q" in done.stdout
    config = (project / "config" / "autonomous_loop.yaml").read_text()
    assert "  #   - run: .venv/bin/python -m pytest -q\n" in config
    confirmed = config.replace("  # commands:\n", "  commands:\n").replace(
        "  #   - run: .venv", "    - run: .venv"
    )
    (project / "config" / "autonomous_loop.yaml").write_text(confirmed)  # as the comment says
    shown = run("config", "show", cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert ".venv/bin/python -m pytest -q" in shown.stdout
    answer = subprocess.run(
        [".venv/bin/python", "-c", "import sys; print(sys.prefix)"],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert Path(answer.stdout.strip()) == project / ".venv"  # the project's, not akira's


@pytest.mark.slow
def test_every_mistyped_checkbox_is_named_in_one_refusal(akira: Akira) -> None:
    task = akira.write_task(
        "boxes",
        "- [ ] 1. Fine\n- [y] 2. Yes\n- [xx] 3. Twice\n  - [ x ] 3.1 Spaced\n- [] 4. Empty\n- [~] 5. Queued\n",
    )
    done = run("loop", "start", "--task", str(task), "--root", str(akira.root), cwd=akira.root)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    for line, box in ((2, "[y]"), (3, "[xx]"), (4, "[ x ]"), (5, "[]")):
        assert f"'{box}' on line {line}" in done.stderr
    assert "[~]" not in done.stderr  # queued: a step to do
    assert not akira.state_files()
    task.write_text(
        "- [ ] 1. Fine\n  - Run: `true`\n- [~] 5. Queued\n  - Run: `touch queued.txt`\n", encoding="utf-8"
    )
    done = run(
        "loop", "start", "--task", str(task), "--root", str(akira.root), "--agent", "script", cwd=akira.root
    )
    assert done.returncode == 0, done.stderr
    assert (akira.root / "queued.txt").exists()


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS, ids=lambda words: " ".join(words) or "akira")
def test_help_in_an_80_column_pipe_cuts_no_option_name(tmp_path: Path, command: list[str]) -> None:
    done = run(*command, "--help", cwd=tmp_path, columns="80")
    assert done.returncode == 0, done.stderr
    assert "…" not in done.stdout and "\x1b[" not in done.stdout, done.stdout
    assert all(len(line) <= 80 for line in done.stdout.splitlines()), done.stdout
    if command == ["loop", "start"]:
        names = set(re.findall(r"--[a-z][a-z-]+", done.stdout))
        assert {"--failure-threshold", "--include-optional", "--max-iterations", "--no-sandbox"} <= names


@pytest.mark.slow
def test_no_internal_section_numbers_in_what_a_user_reads(akira: Akira, tmp_path: Path) -> None:
    task = akira.write_task("plain", "- [ ] 1. One\n  - Run: `true`\n  - Exists: `Specs`\n")
    done = run(
        "loop", "start", "--task", str(task), "--root", str(akira.root), "--agent", "script", cwd=akira.root
    )
    assert done.returncode == 0, done.stderr
    report = next((akira.root / "Logs" / "completion_reports").glob("*.md")).read_text()
    assert "**Sandbox**: " in report
    said = [report, done.stderr, (akira.root / "config" / "autonomous_loop.yaml").read_text()]
    said += [run(*words, "--help", cwd=tmp_path, columns="200").stdout for words in COMMANDS]
    for text in said:
        assert not re.search(r"\bSPEC\s*\d", text), re.findall(r".{40}\bSPEC\s*\d.{20}", text)
    assert main(["init", str(tmp_path / "fresh")]) == 0
    assert "SPEC" not in (tmp_path / "fresh" / "config" / "autonomous_loop.yaml").read_text()


@pytest.mark.slow
def test_a_count_of_one_is_said_in_the_singular(akira: Akira) -> None:
    akira.write_config("autonomous_loop:\n  no_progress_threshold: 1\n")
    task = akira.write_task("idle", "- [ ] 1. Idle\n  - Run: `true`\n  - Verify: `test -f never`\n")
    done = run(
        "loop", "start", "--task", str(task), "--root", str(akira.root), "--agent", "script", cwd=akira.root
    )
    assert done.returncode == 4, done.stderr
    assert "no progress: 1 attempt in a row changed no file" in done.stderr, done.stderr


@pytest.mark.parametrize("command", [["doctor"], ["pr", "follow"]], ids=" ".join)
def test_config_help_says_what_config_does_for_that_command(tmp_path: Path, command: list[str]) -> None:
    done = run(*command, "--help", cwd=tmp_path, columns="200")
    assert done.returncode == 0, done.stderr
    assert "--config" in done.stdout and "resume reuses" not in done.stdout, done.stdout


def test_logs_json_says_it_is_json_lines_and_an_error_under_json_is_json_too(akira: Akira) -> None:
    helped = run("loop", "logs", "--help", cwd=akira.root, columns="200")
    assert "JSON Lines" in helped.stdout, helped.stdout
    done = run("loop", "logs", "--task-id", "nope", "--json", "--root", str(akira.root), cwd=akira.root)
    assert done.returncode == 1 and done.stderr.startswith("akira: error: ")
    answer = json.loads(done.stdout)
    assert answer["exit_code"] == 1 and answer["error"] == done.stderr.strip().removeprefix("akira: error: ")
