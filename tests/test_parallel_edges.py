"""The edges of parallel `[P]` steps a new user meets (SPEC 13, issue 29), in real repositories
with real worktrees: commits carry ticks only, an escalation tells of every step that failed,
a linked environment survives a slot's reuse, and the worktree hint is given where it helps."""

from __future__ import annotations

from conftest import Akira
from test_git_runs import git, repo
from test_parallel import start, tasks

__all__ = ["repo"]

WAIT_FOR_ONE = (
    "for _ in $(seq 2400); do git log --format=%s akira/feat | grep -qx '1 A' && break; sleep 0.05; done"
)
"""A step that waits until step 1's commit is on the task branch (bounded: 2 minutes)."""


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
