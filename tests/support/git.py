"""Git repositories as a person has them, for the git-native runs' tests: `git` that fails
loudly, an akira workspace with one commit, a Kiro spec worked in place, and what a run's
commits say."""

from __future__ import annotations

import subprocess
from pathlib import Path

from akira_cli.cli import main
from tests.support.workspace import Akira, share_with_steps

STEPS = """
- [ ] 1. Write a
  - Run: `echo a > a.txt`
  - Exists: `a.txt`
- [ ] 2. Only folders
  - Run: `mkdir -p empty/dirs`
- [ ] 3. Write b
  - Run: `echo b > b.txt`
  - Contains: `b.txt` `b`
"""


def git(root: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {done.stderr}")
    return done.stdout.strip()


def person_repository(root: Path) -> None:
    """`root` made a git repository on `main`, with a person's name and email to commit as."""
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Person")
    git(root, "config", "user.email", "person@example.com")


def first_commit(root: Path) -> None:
    """`root` made a person's repository whose one commit, `base`, holds everything in it."""
    person_repository(root)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")


def git_workspace(tmp_path: Path, steps: str = STEPS) -> Akira:
    """An akira workspace that is a git repository with one commit, as a person has it: its
    task file `Specs/feat/tasks.md` holds `steps`."""
    root = tmp_path / "repo"
    assert main(["init", str(root)]) == 0
    share_with_steps(root, tmp_path)
    akira = Akira(root, tmp_path)
    akira.write_task("feat", steps)
    first_commit(root)
    return akira


def commits(root: Path, rev: str = "main..HEAD") -> list[str]:
    return git(root, "log", "--reverse", "--format=%s", rev).splitlines()


def trailers(root: Path, rev: str) -> dict[str, str]:
    body = git(root, "log", "-1", "--format=%B", rev)
    return dict(line.split(": ", 1) for line in body.splitlines() if line.startswith("Akira-"))


KILL_AT_COMMIT = r"""
import os, sys
from akira_cli.cli import main
from akira_cli.git.run import GitRun
original = GitRun.commit
def commit_then_die(self, subject, trailers, paths, replaced=None, **options):
    sha = original(self, subject, trailers, paths, replaced, **options)
    if trailers.get("Akira-Step") == sys.argv[1]:
        os._exit(137)
    return sha
GitRun.commit = commit_then_die
sys.exit(main(sys.argv[2:]))
"""


KIRO_AGENT = """\
case "$AKIRA_STEP_ID" in
  1) echo 'VALUE = 1' > mod.py ;;
  fail) exit 3 ;;
esac
"""


def kiro_repo(tmp_path: Path, tasks: str, config: str = "") -> Path:
    """A project repository with a Kiro spec and nothing of akira's (no Logs/, no Needs_Action/)."""
    root = tmp_path / "project"
    spec = root / ".kiro" / "specs" / "feat"
    spec.mkdir(parents=True)
    (spec / "tasks.md").write_text(tasks)
    (root / "README.md").write_text("# project\n")
    (tmp_path / "agent.sh").write_text(KIRO_AGENT)
    (root / "config").mkdir()
    (root / "config" / "autonomous_loop.yaml").write_text(
        f"agent:\n  command: bash {tmp_path / 'agent.sh'}\n{config}"
        # the agent script lies beside the repository, outside the work tree: let the steps read it
        f"sandbox:\n  allow_read: [{str(tmp_path / 'agent.sh')!r}]\n"
    )
    first_commit(root)
    return root
