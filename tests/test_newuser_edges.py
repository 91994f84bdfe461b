"""Edges a new user meets from the README alone: real repositories in
temp folders whose names hold a space, akira run as a subprocess as a person runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.git import first_commit, git, person_repository
from tests.support.workspace import akira


def kiro_repo(tmp_path: Path, tasks: str, config: str = "") -> Path:
    root = tmp_path / "my project"
    spec = root / ".kiro" / "specs" / "feat"
    spec.mkdir(parents=True)
    (spec / "tasks.md").write_text(tasks)
    (root / "config").mkdir()
    (root / "config" / "autonomous_loop.yaml").write_text(config)
    first_commit(root)
    return root


OPTIONAL_ONLY = """\
# Implementation Plan

- [ ] 1. Make a file
  - Run: `echo a > a.txt`
- [ ] 2. Extras
  - [ ]* 2.1 Optional one
    - Run: `echo x > x.txt`
  - [ ]* 2.2 Optional two
    - Run: `echo y > y.txt`
- [ ] 3. Nothing to do
  - Run: `true`
"""


@pytest.mark.slow
def test_a_parent_of_optional_steps_only_stays_open_for_a_run_that_includes_them(tmp_path: Path) -> None:
    root = kiro_repo(tmp_path, OPTIONAL_ONLY)
    tasks = root / ".kiro" / "specs" / "feat" / "tasks.md"
    first = akira(root, "loop", "start", "--task", ".kiro/specs/feat/tasks.md")
    assert first.returncode == 0, first.stderr
    assert "- [ ] 2. Extras" in tasks.read_text()  # none of its steps ran: not done
    assert "- [x] 3. Nothing to do" in tasks.read_text()
    assert git(root, "status", "--porcelain") == ""
    second = akira(root, "loop", "start", "--task", ".kiro/specs/feat/tasks.md", "--include-optional")
    assert second.returncode == 0, second.stderr
    assert (root / "x.txt").read_text() == "x\n" and (root / "y.txt").read_text() == "y\n"
    assert "- [x] 2. Extras" in tasks.read_text()
    assert git(root, "status", "--porcelain") == ""


@pytest.mark.slow
def test_a_host_rule_with_a_scheme_a_space_a_path_or_a_bad_port_is_one_line_and_starts_nothing(
    tmp_path: Path,
) -> None:
    tasks = "- [ ] 1. Make a file\n  - Run: `echo a > a.txt`\n"
    root = kiro_repo(tmp_path, tasks, 'sandbox:\n  allow_hosts: ["pypi.org"]\n')
    config = root / "config" / "autonomous_loop.yaml"
    for entry in ("a b", "https://pypi.org", "pypi.org/simple", "pypi.org:99999", "*", ""):
        config.write_text(f"sandbox:\n  allow_hosts: [{entry!r}]\n")
        done = akira(root, "loop", "start", "--task", ".kiro/specs/feat/tasks.md")
        assert done.returncode == 1, (entry, done.stderr)
        assert f"entry '{entry}'" in done.stderr and "e.g. 'pypi.org'" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
        assert git(root, "branch", "--show-current") == "main" and not (root / "a.txt").exists()
    config.write_text('sandbox:\n  allow_hosts: ["PyPI.org", "*.npmjs.org", "127.0.0.1:8080"]\n')
    done = akira(root, "loop", "start", "--task", ".kiro/specs/feat/tasks.md")
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_a_config_error_names_its_file_quoted_so_it_pastes_from_a_folder_with_a_space(tmp_path: Path) -> None:
    import shlex

    tasks = "- [ ] 1. Make a file\n  - Run: `echo a > a.txt`\n"
    root = kiro_repo(tmp_path, tasks)
    config = root / "config" / "autonomous_loop.yaml"
    quoted = shlex.quote(str(config))
    assert quoted != str(config)  # the folder's name has a space
    cases = {
        "sandbox:\n  mode: auto\nsandbox:\n  mode: off\n": "key 'sandbox' is given twice, on lines 1 and 3",
        "review:\n  when: on\n": "key 'review.when'",
        "git:\n  pr: draft\n": "git.pr: draft needs git.push",
        "agent:\n  comand: x\n": "unknown key 'agent.comand'",
    }
    for text, what in cases.items():
        config.write_text(text)
        before = config.read_bytes()
        done = akira(root, "loop", "start", "--task", ".kiro/specs/feat/tasks.md")
        assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert done.stderr.startswith(f"akira: error: {quoted}: {what}"), done.stderr
        assert config.read_bytes() == before and git(root, "branch", "--show-current") == "main"


@pytest.mark.slow
def test_ctrl_c_says_how_to_continue_and_the_printed_command_pastes_from_another_folder(
    tmp_path: Path,
) -> None:
    import shlex
    import signal
    import time

    tasks = (
        "- [ ] 1. First\n  - Run: `echo 1 > one.txt`\n"
        "- [ ] 2. Slow\n"
        "  - Run: `if [ -f started ]; then echo 2 > two.txt; else touch started; sleep 120; fi`\n"
        "  - Exists: `two.txt`\n"
    )
    root = kiro_repo(tmp_path, tasks)
    env = {key: value for key, value in os.environ.items() if key != "AKIRA_ROOT"}
    task = str(root / ".kiro" / "specs" / "feat" / "tasks.md")
    run = subprocess.Popen(
        [sys.executable, "-m", "akira_cli", "loop", "start", "--task", task],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 90
        while not (root / "started").exists():
            assert time.monotonic() < deadline and run.poll() is None, "step 2 never started"
            time.sleep(0.05)
        run.send_signal(signal.SIGINT)
        _, err = run.communicate(timeout=90)
    finally:
        run.kill()
    assert run.returncode == 3, err
    last = err.strip().splitlines()[-1]
    assert "paused: step 2 attempt 1 was interrupted; continue with: akira loop resume" in last, last
    words = shlex.split(last.split("continue with: ", 1)[1])
    assert words[words.index("--root") + 1] == str(root)
    done = subprocess.run(
        [sys.executable, "-m", "akira_cli", *words[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert (root / "two.txt").read_text() == "2\n"


@pytest.mark.slow
def test_without_gh_on_resume_the_command_by_hand_updates_the_pull_request_already_opened(
    tmp_path: Path,
) -> None:
    tasks = "- [ ] 1. First\n  - Run: `echo 1 > one.txt`\n- [ ] 2. Gated\n  - Run: `test -f go`\n"
    root = kiro_repo(tmp_path, tasks, "git:\n  push: origin\n  pr: draft\n  pr_tool: gh\n")
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "origin.git")], check=True)
    git(root, "remote", "add", "origin", str(tmp_path / "origin.git"))
    fake = tmp_path / "fake bin"
    fake.mkdir()
    log = tmp_path / "gh.log"
    (fake / "gh").write_text(
        f"#!/bin/sh\necho \"$*\" >> '{log}'\n"
        'if [ "$1 $2" = "pr view" ]; then echo "no pull requests found for branch" >&2; exit 1; fi\n'
        "echo https://github.com/acme/app/pull/12\n"
    )
    (fake / "gh").chmod(0o755)
    env = {key: value for key, value in os.environ.items() if key != "AKIRA_ROOT"}
    command = [sys.executable, "-m", "akira_cli", "loop"]
    first = subprocess.run(
        [*command, "start", "--task", ".kiro/specs/feat/tasks.md"],
        cwd=root, capture_output=True, text=True, timeout=120,
        env={**env, "PATH": f"{fake}{os.pathsep}{env['PATH']}"},
    )  # fmt: skip
    assert first.returncode == 4 and "pull request: https://github.com/acme/app/pull/12" in first.stderr
    assert "pr create" in log.read_text()
    (root / "go").write_text("")
    again = subprocess.run(
        [*command, "resume", "--task-id", "feat"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert again.returncode == 0, again.stderr
    warning = next(line for line in again.stderr.splitlines() if "gh is not on PATH" in line)
    assert "the pull request https://github.com/acme/app/pull/12 was not updated" in warning
    assert "gh pr edit akira/feat --title 'feat: 2/2 steps' --body-file" in warning
    assert "pr create" not in warning


@pytest.mark.slow
def test_undo_from_another_folder_prints_a_resume_that_pastes_and_does_the_steps_again(
    tmp_path: Path,
) -> None:
    import shlex

    tasks = "- [ ] 1. First\n  - Run: `echo 1 > one.txt`\n- [ ] 2. Second\n  - Run: `echo 2 > two.txt`\n"
    root = kiro_repo(tmp_path, tasks)
    assert akira(root, "loop", "start", "--task", ".kiro/specs/feat/tasks.md").returncode == 0
    undone = akira(tmp_path, "loop", "undo", "--root", str(root), "--task-id", "feat", "--step", "2")
    assert undone.returncode == 0, undone.stderr
    assert not (root / "two.txt").exists()
    line = undone.stderr.strip().splitlines()[-1]
    words = shlex.split(line.split("run: ", 1)[1])  # the rest of the line is the command
    assert words[:3] == ["akira", "loop", "resume"] and words[words.index("--root") + 1] == str(root)
    again = akira(tmp_path, *words[1:])
    assert again.returncode == 0, again.stderr
    assert (root / "two.txt").read_text() == "2\n"


@pytest.mark.slow
def test_a_command_in_a_sentence_with_a_quoted_root_is_in_double_quotes_and_pastes(tmp_path: Path) -> None:
    import shlex

    tasks = "- [ ] 1. Gated\n  - Run: `test -f go`\n"
    root = kiro_repo(tmp_path, tasks)
    task = str(root / ".kiro" / "specs" / "feat" / "tasks.md")
    assert akira(tmp_path, "loop", "start", "--task", task).returncode == 4  # needs action
    again = akira(tmp_path, "loop", "start", "--task", task)
    assert again.returncode == 1 and len(again.stderr.strip().splitlines()) == 1, again.stderr
    assert "already has an unfinished loop" in again.stderr
    quoted = again.stderr.split("continue it with ", 1)[1].strip()
    assert quoted[0] == quoted[-1] == '"', quoted  # the command holds 'my project' in single quotes
    words = shlex.split(quoted[1:-1])
    assert words[:3] == ["akira", "loop", "resume"] and words[words.index("--root") + 1] == str(root)
    (root / "go").write_text("")
    done = akira(tmp_path, *words[1:])
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_a_push_remote_the_repository_lacks_is_refused_before_anything_starts(tmp_path: Path) -> None:
    tasks = "- [ ] 1. First\n  - Run: `echo 1 > one.txt`\n"
    root = kiro_repo(tmp_path, tasks, "git:\n  push: upstream\n")
    done = akira(root, "loop", "start", "--task", ".kiro/specs/feat/tasks.md")
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "git.push names upstream, which is not a remote of" in done.stderr
    assert "(its remotes: none)" in done.stderr and "remote add upstream" in done.stderr
    assert git(root, "branch", "--show-current") == "main" and not (root / "one.txt").exists()
    assert not (root / ".state").exists() or not list((root / ".state").glob("autonomous_loop_*.json"))
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "up.git")], check=True)
    git(root, "remote", "add", "upstream", str(tmp_path / "up.git"))
    done = akira(root, "loop", "start", "--task", ".kiro/specs/feat/tasks.md")
    assert done.returncode == 0, done.stderr
    assert git(tmp_path / "up.git", "branch", "--list", "akira/feat") != ""


@pytest.mark.slow
def test_a_repository_without_a_commit_is_told_a_command_that_pastes(tmp_path: Path) -> None:
    import shlex

    root = tmp_path / "my project"
    (root / "specs").mkdir(parents=True)
    (root / "specs" / "tasks.md").write_text("- [ ] 1. First\n  - Run: `echo 1 > one.txt`\n")
    person_repository(root)
    done = akira(tmp_path, "loop", "start", "--task", str(root / "specs" / "tasks.md"))
    assert done.returncode == 1 and "has no commit yet" in done.stderr, done.stderr
    assert f"{shlex.quote(str(root))} has no commit yet" in done.stderr
    quoted = done.stderr.split("; run ", 1)[1].strip()
    assert quoted[0] == quoted[-1] == '"', quoted
    subprocess.run(shlex.split(quoted[1:-1]), cwd=tmp_path, check=True, capture_output=True, timeout=60)
    done = akira(tmp_path, "loop", "start", "--task", str(root / "specs" / "tasks.md"))
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_doctor_json_says_a_config_that_does_not_load_as_a_failed_check(tmp_path: Path) -> None:
    import json

    root = kiro_repo(tmp_path, "- [ ] 1. First\n", "sandbox:\n  mode: auto\nsandbox:\n  mode: off\n")
    done = akira(root, "doctor", "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is False and report["workspace"] == str(root)
    [check] = report["checks"]
    assert check["check"] == "config" and check["status"] == "fail"
    assert "key 'sandbox' is given twice, on lines 1 and 3" in check["detail"] and check["fix"]
    plain = akira(root, "doctor")  # the table, with the same row
    assert plain.returncode == 1 and "│ config │ fail" in plain.stdout and "given twice" in plain.stdout


@pytest.mark.slow
def test_doctor_from_another_folder_ends_with_its_command_again_in_quotes_that_paste(tmp_path: Path) -> None:
    import shlex

    root = kiro_repo(tmp_path, "- [ ] 1. First\n")
    env = {key: value for key, value in os.environ.items() if key != "AKIRA_ROOT"}
    env.update(PATH=str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin", COLUMNS="200")
    done = subprocess.run(
        [sys.executable, "-m", "akira_cli", "doctor", "--agent", "claude", "--root", str(root)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    quoted = last.split("fix them and run ", 1)[1].removesuffix(" again")
    assert quoted[0] == quoted[-1] == '"', last
    assert shlex.split(quoted[1:-1]) == ["akira", "doctor", "--agent", "claude", "--root", str(root)]


@pytest.mark.slow
def test_review_when_naming_a_step_the_task_lacks_is_a_warning_at_start(tmp_path: Path) -> None:
    tasks = "- [ ] 1. First\n  - Run: `echo 1 > one.txt`\n- [ ] 2. Second\n  - Run: `echo 2 > two.txt`\n"
    root = kiro_repo(tmp_path, tasks, 'review:\n  agent: "true"\n  when: ["2", "9", "2.1"]\n')
    done = akira(root, "loop", "start", "--task", ".kiro/specs/feat/tasks.md")
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("akira: warning: review.when")]
    assert warnings == [
        "akira: warning: review.when names step(s) 9, 2.1, which tasks.md lacks, so nothing is reviewed "
        "for them; fix the ids in config/autonomous_loop.yaml"
    ]


@pytest.mark.slow
def test_start_warnings_name_their_files_quoted_so_they_paste(tmp_path: Path) -> None:
    import shlex

    tasks = "- [ ] 1. First\n  - Run: `echo 1 > one.txt`\n  - _Requirements: 9.9_\n- [y] 2. Not a box\n"
    root = kiro_repo(tmp_path, tasks.replace("- [y] 2. Not a box\n", "  - Verfy: `true`\n"))
    spec = root / ".kiro" / "specs" / "feat"
    (spec / "requirements.md").write_text(
        "# Requirements\n\n### Requirement 1\n\n#### Acceptance Criteria\n\n1. WHEN x THEN y SHALL z\n"
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "requirements")
    done = akira(tmp_path, "loop", "start", "--task", str(spec / "tasks.md"))
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("akira: warning: ")]
    tasks_at, spec_at = shlex.quote(str(spec / "tasks.md")), shlex.quote(str(spec / "requirements.md"))
    assert any(
        line.startswith(f"akira: warning: {tasks_at}:3: step 1 names requirement 9.9") for line in warnings
    )
    assert any(f"which {spec_at} lacks" in line for line in warnings), warnings
    assert any(line.startswith(f"akira: warning: {tasks_at}:4: ") for line in warnings), warnings  # Verfy


@pytest.mark.slow
def test_a_corrupt_state_is_named_with_a_command_in_double_quotes_that_pastes(tmp_path: Path) -> None:
    import shlex

    root = kiro_repo(tmp_path, "- [ ] 1. Gated\n  - Run: `test -f go`\n")
    assert akira(root, "loop", "start", "--task", ".kiro/specs/feat/tasks.md").returncode == 4
    [state] = (root / ".state").glob("autonomous_loop_task_*.json")
    state.write_text("garbage\n")
    for log in (root / ".state").glob("*.wal"):
        log.unlink()
    done = akira(tmp_path, "loop", "progress", "--root", str(root), "--task-id", "feat")
    assert done.returncode == 1 and "is corrupt and may be it" in done.stderr, done.stderr
    quoted = done.stderr.split("may be it: run ", 1)[1].split(" to quarantine", 1)[0]
    assert quoted[0] == quoted[-1] == '"', quoted
    words = shlex.split(quoted[1:-1])
    assert words[words.index("--root") + 1] == str(root)
    looked = akira(tmp_path, *words[1:])
    assert "Traceback" not in looked.stderr and "corrupt" in looked.stdout + looked.stderr


REQUIREMENTS = """\
# Requirements

### Requirement 1

#### Acceptance Criteria

1. WHEN a user logs in THEN the system SHALL greet them
2. IF the password is wrong THEN the system SHALL refuse
"""


@pytest.mark.slow
def test_a_criterion_whose_verified_step_was_disputed_says_so_in_not_covered(tmp_path: Path) -> None:
    tasks = (
        "- [ ] 1. Greet\n  - Run: `echo hi > hello.txt`\n  - Exists: `hello.txt`\n  - _Requirements: 1.1_\n"
        "- [ ] 2. Refuse\n  - Run: `echo no > refuse.txt`\n  - Exists: `refuse.txt`\n  - _Requirements: 1.2_\n"
    )
    reviewer = (
        'if [ "$AKIRA_STEP_ID" = 2 ]; then echo "refuse.txt says no politely"; echo "VERDICT: changes"; '
        'else echo "VERDICT: approve"; fi'
    )
    root = kiro_repo(tmp_path, tasks, f"review:\n  agent: {reviewer!r}\n")
    (root / ".kiro" / "specs" / "feat" / "requirements.md").write_text(REQUIREMENTS)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "requirements")
    done = akira(root, "loop", "start", "--task", ".kiro/specs/feat/tasks.md")
    assert done.returncode == 0, done.stderr
    [report] = (root / "Logs" / "completion_reports").glob("*.md")
    missing = report.read_text().split("## Not covered by evidence", 1)[1]
    lines = [line for line in missing.splitlines() if line.startswith("- ")]
    assert lines == [
        "- **1.2** IF the password is wrong THEN the system SHALL refuse: its checks passed, but the "
        "reviewer disputed step(s) 2"
    ]


def test_starting_a_spec_akira_moved_to_done_says_where_it_is_and_changes_nothing(tmp_path: Path) -> None:
    """The README's start, run again once the run moved the spec into Done/ (or a person parked
    it in Needs_Action/): one line that says where it is, not "run 'akira init'"."""
    root = tmp_path / "my project"
    assert akira(tmp_path, "init", str(root)).returncode == 0
    done = akira(root, "loop", "start", "--task", "Specs/example/tasks.md")
    assert done.returncode == 0, done.stderr
    assert (root / "Done" / "example" / "tasks.md").is_file()

    def files() -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    before = files()
    for ref in ("Specs/example/tasks.md", "Specs/example"):
        again = akira(root, "loop", "start", "--task", ref)
        assert again.returncode == 1 and again.stderr.splitlines() == [
            f"akira: error: {ref}: task file not found; it is finished, in Done/example/tasks.md; "
            "move it back under Specs/ to work on it"
        ], again.stderr
    assert files() == before
    (root / "Done" / "example").rename(root / "Needs_Action" / "example")
    parked = akira(root / "Needs_Action", "loop", "start", "--task", "../Specs/example/tasks.md")
    assert parked.returncode == 1 and parked.stderr.splitlines() == [
        "akira: error: ../Specs/example/tasks.md: task file not found; it is waiting for a person, "
        "in example/tasks.md; move it back under Specs/ to work on it"
    ], parked.stderr
    missing = akira(root, "loop", "start", "--task", "Specs/other/tasks.md")
    assert missing.returncode == 1 and missing.stderr.strip().endswith("check the path or run 'akira init'")
