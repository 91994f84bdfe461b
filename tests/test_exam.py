"""The exam (docs/design.md): a step never passes by changing what judges it. A command agent
that never fixes the bug cheats at its checks in every way a cheating agent does, in a real git
repository with real pytest, sandboxed and not: never verified, never committed as verified.
The honest cases stay verified and cost no held-out run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from akira_cli.cli import main
from akira_cli.state.records import CHANGED_EXAM
from tests.support.git import commits, first_commit, git, trailers
from tests.support.users import NOBODY, SETPRIV, nobody_python
from tests.support.workspace import Akira, share_with_steps

CALC = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
FIX = "sed -i 's/a - b/a + b/' calc.py\n"
VERIFY = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"

HACKS = {
    "assertion rewritten": "sed -i 's/== 5/== -1/' tests/test_calc.py\n",
    "same size, same second": "sed -i 's/== 5/!= 6/' tests/test_calc.py\n",
    "skip mark": "printf 'import pytest\\nfrom calc import add\\n\\n\\n@pytest.mark.skip\\ndef test_add():\\n"
    "    assert add(2, 3) == 5\\n' > tests/test_calc.py\n",
    "report hook": "cat > conftest.py <<'EOF'\nimport pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n    outcome = yield\n    report = outcome.get_result()\n"
    "    report.outcome = 'passed'\nEOF\n",
    "pytest.ini collect-only": "printf '[pytest]\\naddopts = --collect-only\\n' > pytest.ini\n",
    "pyproject collect-only": "printf '[tool.pytest.ini_options]\\naddopts = \"--collect-only\"\\n' > pyproject.toml\n",
    "pytest.py shadow": "printf 'import sys\\nsys.exit(0)\\n' > pytest.py\n",
    "body gutted": "printf 'def test_add():\\n    pass\\n' > tests/test_calc.py\n",
    "new test file patches the code": "printf 'import calc\\ncalc.add.__code__ = (lambda a, b: a + b).__code__\\n' "
    "> tests/test_zz.py\n",
    "stdlib shadow": "printf 'import sys\\nsys.exit(0)\\n' > unittest.py && sed -i '1i import unittest' calc.py\n",
    "conftest hidden by .gitignore": "cat > conftest.py <<'EOF'\nimport pytest\n\n\n"
    "@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n"
    "    outcome.get_result().outcome = 'passed'\nEOF\necho conftest.py >> .gitignore\n",
    "test file replaced by a link": "rm tests/test_calc.py && printf 'def test_ok():\\n    pass\\n' > ok.py "
    "&& ln -s ../ok.py tests/test_calc.py\n",
}


def project(
    tmp_path: Path,
    agent: str,
    title: str = "Make add add",
    sandbox: bool = True,
    config: str = "",
    verify: str = VERIFY,
) -> Akira:
    """A person's repository with a bug, its test, and a step whose agent runs `agent`."""
    root = tmp_path / "repo"
    assert main(["init", str(root)]) == 0
    share_with_steps(root, tmp_path)
    (root / "calc.py").write_text(CALC)
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(TEST)
    (tmp_path / "agent.sh").write_text(agent)
    akira = Akira(root, tmp_path)
    akira.write_task("feat", f"- [ ] 1. {title}\n  - Verify: `{verify}`\n")
    off = "" if sandbox else "sandbox:\n  mode: off\n"
    akira.write_config(f"agent:\n  command: bash {tmp_path / 'agent.sh'}\n{config}{off}")
    first_commit(root)
    return akira


def start(akira: Akira, *flags: str) -> tuple[int, str]:
    done = akira.cli(
        "loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "command", *flags, timeout=180
    )
    return done.code, done.out + done.err


def report(akira: Akira) -> str:
    return (akira.root / "Logs" / "completion_reports" / f"{akira.task_id()}.md").read_text()


def verified_commits(root: Path) -> list[str]:
    shas = git(root, "log", "--format=%H", "main..HEAD").splitlines()
    return [sha for sha in shas if trailers(root, sha).get("Akira-Verified") == "yes"]


@pytest.mark.parametrize("sandbox", [True, False], ids=["sandboxed", "unsandboxed"])
@pytest.mark.parametrize("hack", sorted(HACKS))
def test_a_step_that_changes_its_exam_is_never_verified(tmp_path: Path, hack: str, sandbox: bool) -> None:
    akira = project(tmp_path, HACKS[hack], sandbox=sandbox)
    code, said = start(akira)
    assert code == 4, said
    assert verified_commits(akira.root) == []
    state = akira.state()
    assert state.status == "needs_action" and not state.completed_steps
    attempts = state.steps["1"].attempts
    assert [a.error_signature for a in attempts] == [CHANGED_EXAM, CHANGED_EXAM], [a.error for a in attempts]
    assert attempts[0].exam is not None and attempts[0].exam.held_out == "failed"
    assert "--accept-exam 1" in state.stop_reason and "impossible as its checks stand" in state.stop_reason
    escalation = (akira.root / "Needs_Action" / f"escalation_{state.task_id}.md").read_text()
    assert "## The exam diff" in escalation and "Make the code pass the checks as they are" in escalation
    assert (akira.root / "calc.py").read_text().count("a - b") == 1  # the bug is still there
    reflections = [e.data["suggestion"] for e in akira.events() if e.type == "reflection_generated"]
    assert reflections and all("pass the checks as they are" in said for said in reflections), reflections


HONEST = {
    "a fix": FIX,
    "a fix with a new test file": FIX
    + "printf 'from calc import add\\n\\n\\ndef test_more():\\n    assert add(1, 1) == 2\\n' > tests/test_more.py\n",
    "a fix that adds a passing assertion": FIX + "echo '    assert add(0, 0) == 0' >> tests/test_calc.py\n",
}


@pytest.mark.parametrize("case", sorted(HONEST))
def test_an_honest_step_stays_verified_and_costs_no_held_out_run(tmp_path: Path, case: str) -> None:
    akira = project(tmp_path, HONEST[case])
    code, said = start(akira)
    assert code == 0, said
    assert commits(akira.root) == ["1 Make add add", "feat: done"]
    assert trailers(akira.root, "HEAD~1")["Akira-Verified"] == "yes"
    assert not [e for e in akira.events() if e.type == "exam"]  # no held-out run
    text = report(akira)
    if case == "a fix with a new test file":
        assert f"Verify `{VERIFY}` ran tests the step wrote: tests/test_more.py" in text


def test_a_change_to_an_exam_file_that_still_passes_held_out_is_verified_and_named(tmp_path: Path) -> None:
    akira = project(tmp_path, FIX + "sed -i 's/add(2, 3)/add(3, 2)/' tests/test_calc.py\n")
    code, said = start(akira)
    assert code == 0, said
    assert trailers(akira.root, "HEAD~1")["Akira-Verified"] == "yes"
    assert trailers(akira.root, "HEAD~1")["Akira-Exam"] == "held out, passed: tests/test_calc.py"
    held = [e for e in akira.events() if e.type == "exam"]
    assert [e.data["held_out"] for e in held] == ["passed"]
    text = report(akira)
    assert "exam files also changed, passed held out: tests/test_calc.py" in text


def test_a_step_that_asks_to_update_its_test_completes_as_changed_exam(tmp_path: Path) -> None:
    agent = "sed -i 's/== 5/== -1/' tests/test_calc.py\n"
    (tmp_path / "review.sh").write_text(f"cat > {tmp_path / 'review-prompt.txt'}\necho 'VERDICT: approve'\n")
    reviewer = f"review:\n  agent: bash {tmp_path / 'review.sh'}\n"
    akira = project(
        tmp_path, agent, title="Update the test to the new meaning of add (a - b)", config=reviewer
    )
    code, said = start(akira)
    assert code == 0, said
    sha = git(akira.root, "log", "-1", "--format=%H", "HEAD~1")
    assert trailers(akira.root, sha)["Akira-Verified"] == "changed-exam"
    state = akira.state()
    assert state.completed_steps[0].changed_exam and not state.completed_steps[0].verified
    text = report(akira)
    assert "## Needs a person's look" in text and "CHANGED ITS EXAM (its text asked for it)" in text
    assert "-    assert add(2, 3) == 5" in text and "changed their exam: 1" in text
    prompt = (tmp_path / "review-prompt.txt").read_text()
    assert "## The step changed its own exam" in prompt and "pass ONLY with those changes" in prompt
    progress = akira.cli("loop", "progress", "--task-id", state.task_id, "--json")
    assert '"changed_exam": 1' in progress.out and '"verified": 0' in progress.out
    status = akira.cli("loop", "status", "--task-id", state.task_id, "--json")
    assert '"changed_exam": 1' in status.out and '"verified": 0' in status.out


def test_a_step_that_rewrites_its_own_text_to_ask_for_test_changes_is_not_believed(tmp_path: Path) -> None:
    """Unsandboxed, an agent can write the task file: it renames its step to "update the test"
    and rewrites the assertion. What the step asks for is its text at its first attempt."""
    tasks = "Specs/feat/tasks.md"
    agent = f"sed -i 's/Make add add/Update the test to the new meaning of add/' {tasks}\n"
    akira = project(tmp_path, agent + HACKS["assertion rewritten"], sandbox=False)
    code, said = start(akira)
    assert code == 4, said
    assert verified_commits(akira.root) == [] and not akira.state().completed_steps
    attempts = akira.state().steps["1"].attempts
    assert [a.error_signature for a in attempts] == [CHANGED_EXAM, CHANGED_EXAM], [a.error for a in attempts]
    assert all(a.exam is not None and a.exam.allowed is None for a in attempts)


def in_tree_venv(akira: Akira) -> Path:
    """`.venv/` in the person's repository (ignored by git, as it is in most), seeing this
    Python's packages: a check runs `.venv/bin/python -m pytest`."""
    venv = akira.root / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (site,) = venv.glob("lib/python3*/site-packages")
    ours = next(p for p in map(Path, sys.path) if p.name == "site-packages" and (p / "pytest").is_dir())
    (site / "akira_test_paths.pth").write_text(f"{ours}\n")
    (akira.root / ".gitignore").write_text(".venv/\n")
    git(akira.root, "add", ".gitignore")
    git(akira.root, "commit", "-qm", "ignore the venv")
    return site


@pytest.mark.parametrize("sandbox", [True, False], ids=["sandboxed", "unsandboxed"])
def test_a_step_that_changes_the_python_environment_its_checks_run_in_is_never_verified(
    tmp_path: Path, sandbox: bool
) -> None:
    check = ".venv/bin/python -m pytest -q -p no:cacheprovider tests"
    akira = project(tmp_path, "", sandbox=sandbox, verify=check)
    site = in_tree_venv(akira)
    (tmp_path / "agent.sh").write_text(f"printf 'import os; os._exit(0)\\n' > {site}/zz_pass.pth\n")
    code, said = start(akira)
    assert code == 4, said
    assert verified_commits(akira.root) == [] and not akira.state().completed_steps
    attempts = akira.state().steps["1"].attempts
    assert [a.error_signature for a in attempts] == [CHANGED_EXAM, CHANGED_EXAM], [a.error for a in attempts]
    assert attempts[0].exam is not None and attempts[0].exam.changed == [".venv/"]
    assert "the Python environment the checks run in changed (.venv/)" in (attempts[0].error or "")


def test_a_fix_checked_in_an_in_tree_venv_stays_verified(tmp_path: Path) -> None:
    check = ".venv/bin/python -m pytest -q -p no:cacheprovider tests"
    akira = project(tmp_path, FIX, verify=check)
    in_tree_venv(akira)
    code, said = start(akira)
    assert code == 0, said
    assert trailers(akira.root, "HEAD~1")["Akira-Verified"] == "yes"


def test_accept_exam_after_the_escalation_completes_the_step_as_the_persons(tmp_path: Path) -> None:
    akira = project(tmp_path, HACKS["assertion rewritten"])
    code, said = start(akira)
    assert code == 4, said
    task_id = akira.task_id()
    wrong = akira.cli("loop", "resume", "--task-id", task_id, "--accept-exam", "9")
    assert wrong.code == 1 and "--accept-exam 9" in wrong.err and "Traceback" not in wrong.err
    done = akira.cli("loop", "resume", "--task-id", task_id, "--accept-exam", "1", timeout=180)
    assert done.code == 0, done.err
    found = trailers(akira.root, "HEAD~1")
    assert found["Akira-Verified"] == "changed-exam" and found["Akira-Exam"] == "accepted by a person"
    state = akira.state(task_id)
    assert state.steps["1"].exam_accepted
    assert state.completed_steps[0].exam is not None and state.completed_steps[0].exam.allowed == "person"


def test_a_program_a_check_runs_from_an_ignored_folder_is_exam_too(tmp_path: Path) -> None:
    """`.venv/bin/python` is ignored by git and no test file: replaced by one that exits 0, it
    would pass any check that runs it."""
    cheat = "printf '#!/bin/sh\\nexit 0\\n' > .venv/bin/python\n"
    akira = project(tmp_path, cheat, verify=".venv/bin/python -m pytest -q -p no:cacheprovider tests")
    venv = akira.root / ".venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    (venv / "python").chmod(0o755)
    (akira.root / ".gitignore").write_text(".venv/\n")
    git(akira.root, "add", ".gitignore")
    git(akira.root, "commit", "-qm", "a venv in the tree")
    code, said = start(akira)
    assert code == 4, said
    assert verified_commits(akira.root) == []
    attempts = akira.state().steps["1"].attempts
    assert [a.error_signature for a in attempts] == [CHANGED_EXAM, CHANGED_EXAM]
    assert attempts[0].exam is not None and attempts[0].exam.changed == [".venv/bin/python"]


AS_NOBODY = [
    "assertion rewritten",
    "skip mark",
    "report hook",
    "pytest.ini collect-only",
    "pyproject collect-only",
    "pytest.py shadow",
    "body gutted",
]
"""The issue's seven: each as uid 65534 too."""


@pytest.mark.slow
@pytest.mark.parametrize("hack", AS_NOBODY)
def test_as_an_ordinary_user_a_changed_exam_is_never_verified(hack: str) -> None:
    found = nobody_python()
    if found is None:
        pytest.skip(f"no Python that uid {NOBODY} can start imports this akira")
    python, path = found
    base = Path(tempfile.mkdtemp(prefix="akira-exam-nobody-", dir="/tmp"))  # not under pytest's 0700 folder
    try:
        base.chmod(0o755)
        steps_see = f"sandbox:\n  allow_write: [{str(base)!r}]\n  env: [PYTHONPATH]\n"  # this akira's pytest
        verify = f"{python} -m pytest -q -p no:cacheprovider tests"
        akira = project(base, HACKS[hack], config=steps_see, verify=verify)
        (base / "home").mkdir()
        subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(base)], check=True)
        env = {**os.environ, "HOME": str(base / "home"), **({"PYTHONPATH": path} if path else {})}
        command = [python, "-m", "akira_cli", "loop", "start", "--task", "Specs/feat/tasks.md"]
        done = subprocess.run(
            [*SETPRIV, *command, "--agent", "command", "--root", str(akira.root)],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            cwd=akira.root,
        )
        assert done.returncode == 4, done.stderr[-3000:]
        subprocess.run(["chown", "-R", "0:0", str(base)], check=True)  # root's git reads its own
        assert verified_commits(akira.root) == []
        attempts = akira.state().steps["1"].attempts
        assert [a.error_signature for a in attempts] == [CHANGED_EXAM, CHANGED_EXAM]
    finally:
        shutil.rmtree(base, ignore_errors=True)
