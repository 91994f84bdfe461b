"""The edges of parallel `[P]` steps a new user meets, in real repositories
with real worktrees: commits carry ticks only, an escalation tells of every step that failed,
a linked environment survives a slot's reuse, and the worktree hint is given where it helps."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.git import git
from tests.support.parallel import start, tasks
from tests.support.workspace import Akira

WAIT_FOR_ONE = (
    "for _ in $(seq 2400); do git log --format=%s akira/feat | grep -qx '1 A' && break; sleep 0.05; done"
)
"""A step that waits until step 1's commit is on the task branch (bounded: 2 minutes)."""


@pytest.mark.slow
def test_a_waves_commits_carry_no_running_mark_of_a_sibling(repo: Akira) -> None:
    repo.write_config("reflection:\n  max_iterations: 1\n")
    tasks(
        repo,
        "- [ ] 1. [P] A\n  - Run: `echo a > a.txt`\n  - Exists: `a.txt`\n"
        f"- [ ] 2. [P] B\n  - Run: `{WAIT_FOR_ONE}; exit 3`\n",
    )
    code, err = start(repo, "--parallel", "2")
    assert code == 4, err
    root = repo.root
    shas = git(root, "rev-list", "main..akira/feat").splitlines()
    assert len(shas) == 1  # step 1 landed while step 2 ran
    committed = git(root, "show", f"{shas[0]}:Specs/feat/tasks.md")
    assert "- [x] 1. [P] A" in committed and "- [ ] 2. [P] B" in committed
    assert "[-]" not in committed
    assert "- [ ] 2. [P] B" in (root / "Specs" / "feat" / "tasks.md").read_text()  # put back at the stop
    assert git(root, "status", "--porcelain") == ""


@pytest.mark.slow
def test_linked_environments_ignored_with_a_trailing_slash_survive_a_slots_reuse(
    repo: Akira, tmp_path: Path
) -> None:
    root = repo.root
    (root / ".gitignore").write_text(".venv/\nvenv/\nnode_modules/\n")
    tool = root / ".venv" / "bin" / "tool"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\necho tool-ran\n")
    tool.chmod(0o755)
    (root / "venv").mkdir()
    (root / "venv" / "marker").write_text("venv\n")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "marker").write_text("node\n")
    repo.write_config("reflection:\n  max_iterations: 2\n")
    gates, failed_once = tmp_path / "gates", tmp_path / "failed-once"
    uses = "test -f venv/marker && test -f node_modules/marker && .venv/bin/tool"

    def meet(pair: str, me: int) -> str:
        gate = gates / pair
        gate.mkdir(parents=True, exist_ok=True)
        return (
            f"touch {gate}/{me}; for _ in $(seq 2400); do [ $(ls {gate} | wc -l) -ge 2 ] && break; "
            "sleep 0.05; done"
        )

    fail_first = f"if [ ! -f {failed_once} ]; then touch {failed_once}; exit 3; fi"
    steps = "".join(
        f"- [ ] {n}. [P] Use the env {n}\n"
        f"  - Run: `{meet('ab' if n < 3 else 'cd', n)}; {uses} > t{n}.txt"
        + (f"; {fail_first}" if n == 1 else "")
        + "`\n"
        f"  - Contains: `t{n}.txt` `tool-ran`\n"
        for n in range(1, 5)
    )
    tasks(repo, steps)
    code, err = start(repo, "--parallel", "2")
    assert code == 0, err
    state = repo.state()
    outcomes = {n: [a.outcome for a in state.steps[n].attempts] for n in "1234"}
    assert outcomes == {"1": ["failure", "success"], "2": ["success"], "3": ["success"], "4": ["success"]}
    runs = [e for e in repo.events() if e.type == "iteration_started" and e.step_id in ("3", "4")]
    assert all("worktree" in e.data for e in runs)  # both ran in reused slots
    assert (root / ".venv" / "bin" / "tool").is_file()  # the main tree's environment is untouched
    committed = git(root, "log", "--name-only", "--format=", "main..HEAD").splitlines()
    assert not any(name.split("/")[0] in (".venv", "venv", "node_modules") for name in committed)


@pytest.mark.slow
def test_the_worktree_hint_names_worktreeinclude_only_for_what_the_main_tree_has_and_ignores(
    repo: Akira, tmp_path: Path
) -> None:
    root = repo.root
    (root / ".gitignore").write_text(".env\n")
    (root / ".env").write_text("TOKEN=1\n")  # the person's, ignored: a worktree lacks it
    repo.write_config("reflection:\n  max_iterations: 1\n")
    gate = tmp_path / "gate"
    gate.mkdir()
    meet = f"touch {gate}/$AKIRA_STEP_ID; for _ in $(seq 2400); do [ $(ls {gate} | wc -l) -ge 2 ] && break; sleep 0.05; done"
    tasks(
        repo,
        f"- [ ] 1. [P] Use the module\n  - Run: `{meet}; python3 -c 'import not_written_yet'`\n"
        f"- [ ] 2. [P] Read the env\n  - Run: `{meet}; cat .env > copy.txt`\n  - Exists: `copy.txt`\n",
    )
    code, err = start(repo, "--parallel", "2")
    assert code == 4, err
    steps = repo.state().steps
    module, env = steps["1"].attempts[-1], steps["2"].attempts[-1]
    assert "ModuleNotFoundError" in module.output_tail  # the step has not written it: no hint
    assert "ran in a worktree" not in module.error and ".worktreeinclude" not in module.error
    assert ".env: No such file or directory" in env.output_tail
    [hint] = [line for line in env.error.splitlines() if ".worktreeinclude" in line]
    assert "this step ran in a worktree" in hint and ".env is in the main work tree" in hint


@pytest.mark.slow
def test_an_escalation_describes_every_step_that_failed_in_the_wave(repo: Akira, tmp_path: Path) -> None:
    repo.write_config("reflection:\n  max_iterations: 1\n")
    gate = tmp_path / "gate"
    gate.mkdir()
    meet = f"touch {gate}/$AKIRA_STEP_ID; for _ in $(seq 2400); do [ $(ls {gate} | wc -l) -ge 3 ] && break; sleep 0.05; done"
    tasks(
        repo,
        f"- [ ] 1. [P] Break left\n  - Run: `{meet}; echo left-broke; exit 3`\n"
        f"- [ ] 2. [P] Pass\n  - Run: `{meet}; echo ok > ok.txt`\n  - Exists: `ok.txt`\n"
        f"- [ ] 3. [P] Break right\n  - Run: `{meet}; echo right-broke; exit 5`\n",
    )
    code, err = start(repo, "--parallel", "3")
    assert code == 4, err
    text = (repo.root / "Needs_Action" / f"escalation_{repo.task_id()}.md").read_text()
    assert "exited 3" in text and "exited 5" in text  # both failures, whichever stopped the loop
    assert "**Step**: 1" in text or "**Step**: 3" in text
    other = "3" if "**Step**: 1" in text else "1"
    assert f"## Also failed in the same wave: step {other}" in text
    assert "Break left" in text and "Break right" in text
    assert "Also failed in the same wave: step 2" not in text  # it passed and landed


@pytest.mark.slow
def test_a_wave_step_that_changes_no_file_gets_its_own_tick_commit(repo: Akira, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    gate.mkdir()
    meet = f"touch {gate}/$AKIRA_STEP_ID; for _ in $(seq 2400); do [ $(ls {gate} | wc -l) -ge 2 ] && break; sleep 0.05; done"
    tasks(
        repo,
        f"- [ ] 1. [P] Write\n  - Run: `{meet}; echo w > w.txt`\n  - Exists: `w.txt`\n"
        f"- [ ] 2. [P] Only look\n  - Run: `{meet}`\n  - Verify: `test -f README.md || true`\n",
    )
    code, err = start(repo, "--parallel", "2")
    assert code == 0, err
    root = repo.root
    assert git(root, "log", "--reverse", "--format=%s", "main..HEAD").splitlines() == [
        "1 Write",
        "2 Only look",
        "feat: done",
    ]
    assert git(root, "show", "--name-only", "--format=", "HEAD~1") == "Specs/feat/tasks.md"
    assert "- [x] 2. [P] Only look" in git(root, "show", "HEAD~1:Specs/feat/tasks.md")
    assert git(root, "status", "--porcelain") == ""


def test_the_worktree_hint_reads_commands_and_node_modules_from_the_output(tmp_path: Path) -> None:
    from akira_cli.git.hints import candidates

    slot, text = (
        tmp_path / "slot",
        (
            "bash: line 1: eslint: command not found\n"
            "Error: Cannot find module 'left-pad'\n"
            "Error: Cannot find module './gen/api'\n"
            f"cat: {tmp_path}/slot/sub/.env: No such file or directory\n"
            "cat: /etc/elsewhere: No such file or directory\n"
        ),
    )
    found = candidates(text, slot, slot / "sub")
    assert found == [
        "sub/.env",
        "sub/node_modules/left-pad",
        "node_modules/left-pad",  # Node looks upward
        "sub/gen/api",
        "sub/.venv/bin/eslint",
        ".venv/bin/eslint",
        "sub/venv/bin/eslint",
        "venv/bin/eslint",
        "sub/node_modules/.bin/eslint",
        "node_modules/.bin/eslint",
    ]


REFUSE_B_ONCE = """#!/bin/sh
# it runs in the sandbox, where .git/ is read-only: it keeps its note in the test's own folder
if git diff --cached --name-only | grep -qx b.txt && [ ! -f "{shared}/refused-once" ]; then
  touch "{shared}/refused-once"
  echo "pre-commit: b.txt is not welcome yet" >&2
  exit 1
fi
"""


@pytest.mark.slow
def test_a_wave_step_whose_landing_a_hook_refuses_is_taken_back_out_and_runs_again(
    repo: Akira, tmp_path: Path
) -> None:
    hook = repo.root / ".git" / "hooks" / "pre-commit"
    hook.write_text(REFUSE_B_ONCE.replace("{shared}", str(repo.shared)))
    hook.chmod(0o755)
    gate = tmp_path / "gate"
    gate.mkdir()
    meet = f"touch {gate}/$AKIRA_STEP_ID; for _ in $(seq 2400); do [ $(ls {gate} | wc -l) -ge 2 ] && break; sleep 0.05; done"
    tasks(
        repo,
        f"- [ ] 1. [P] A\n  - Run: `{meet}; echo a > a.txt`\n  - Exists: `a.txt`\n"
        # the retry runs in the main work tree: the refused landing's b.txt must be gone there
        f"- [ ] 2. [P] B\n  - Run: `{meet}; test ! -f b.txt && echo b > b.txt`\n  - Exists: `b.txt`\n",
    )
    code, err = start(repo, "--parallel", "2")
    assert code == 0, err
    root = repo.root
    assert git(root, "log", "--reverse", "--format=%s", "main..HEAD").splitlines() == [
        "1 A",
        "2 B",
        "feat: done",
    ]
    attempts = repo.state().steps["2"].attempts
    assert [a.outcome for a in attempts] == ["failure", "success"]
    assert "the commit was refused" in attempts[0].error
    assert "pre-commit: b.txt is not welcome yet" in attempts[0].error
    assert git(root, "status", "--porcelain") == ""
