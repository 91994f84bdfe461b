"""akira's own file work on the host never obeys what a step wrote (docs/sandbox.md, the host side).

A hostile step, from a `Run:` line or an agent script, plants a trap where akira reads or writes
for itself: the spec's design.md linked to a key in a planted fake home, `Logs`, `Done` and the
worktree slots' folder linked out of the tree, `.worktreeinclude` linked to patterns outside,
the task file's folder renamed with a forged tick in a new tasks.md, a FIFO or a link out of the
tree under a `Contains:` check. The key never reaches a prompt, nothing is written, moved or
deleted outside the tree, the forged tick is never taken, and akira never hangs. Most run with
`--no-sandbox` too: there the host code is the only guard. Real files, real git, real runs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from akira_cli.events import Event, read_events
from akira_cli.sandbox.probe import probe
from akira_cli.sections import SandboxSettings
from tests.support.git import git, kiro_repo
from tests.support.sandbox import SSH_KEY, plant
from tests.support.workspace import Akira, Result
from tests.support.workspace import akira as akira_in

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]  # above `start`'s own bound: it kills a hung akira

SANDBOXED = pytest.param(
    (),
    id="sandboxed",
    marks=pytest.mark.skipif(not probe(SandboxSettings()).ok, reason="needs a working bwrap"),
)
UNSANDBOXED = ("--no-sandbox",)
MODES = [SANDBOXED, pytest.param(UNSANDBOXED, id="no-sandbox")]


def start(akira: Akira, *flags: str, timeout: float = 240) -> Result:
    """`loop start` in a subprocess; one that is still running at `timeout` (a hang) is killed,
    and the test fails."""
    process = akira.spawn("loop", "start", "--task", "Specs/feat/tasks.md", "--no-wait", *flags)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise AssertionError(f"akira still ran after {timeout}s: it hung") from None
    return Result(process.returncode, out, err)


def warnings(akira: Akira) -> list[str]:
    return [str(e.data.get("message", "")) for e in akira.events() if e.type == "warning"]


def text_under(root: Path) -> str:
    """Every regular file under `root` (never through a link), as text."""
    return "\n".join(
        path.read_text(errors="replace")
        for path in root.rglob("*")
        if path.is_file() and not path.is_symlink() and "objects" not in path.parts
    )


def outside(tmp_path: Path) -> Path:
    """A folder outside the tree, with a sentinel folder in it that nothing may delete."""
    folder = tmp_path / "outside"
    (folder / "keep").mkdir(parents=True)
    (folder / "keep" / "sentinel.txt").write_text("the person's\n")
    return folder


def untouched(folder: Path) -> bool:
    return (
        sorted(p.name for p in folder.iterdir()) == ["keep"] and (folder / "keep" / "sentinel.txt").is_file()
    )


# --- reads: the spec's design.md -------------------------------------------------------------


@pytest.mark.parametrize("flags", MODES)
@pytest.mark.parametrize("how", ["run", "agent"])
def test_a_design_linked_to_a_key_outside_never_reaches_the_prompt(
    akira: Akira, tmp_path: Path, how: str, flags: tuple[str, ...]
) -> None:
    key = plant(tmp_path) / ".ssh" / "id_rsa"
    link = f"ln -sf {key} Specs/feat/design.md"
    agent = tmp_path / "agent.sh"
    agent.write_text(f'[ "$AKIRA_STEP_ID" = 1 ] && {link}\necho done > "step$AKIRA_STEP_ID.txt"\n')
    akira.write_config(f"agent:\n  command: bash {agent}\n")
    run = f"  - Run: `{link}; echo done > step1.txt`\n" if how == "run" else ""
    spec = akira.write_task("feat", f"- [ ] 1. Plant a link\n{run}- [ ] 2. Read the private notes\n").parent
    (spec / "design.md").write_text("# Design\n\n## Notes\nThe private notes are kept apart.\n")
    done = start(akira, *flags)
    assert done.code == 0, done.err
    prompts = text_under(akira.root / ".state" / "prompts")
    assert "Read the private notes" in prompts  # step 2's prompt was written there
    assert SSH_KEY not in prompts and SSH_KEY not in text_under(akira.root)
    assert SSH_KEY not in done.out + done.err
    if (akira.root / "Done" / "feat" / "design.md").is_symlink():  # planted (the sandbox may refuse it)
        assert any("design.md is left out of the prompt" in line for line in warnings(akira))


# --- writes: Logs/, Done/ ---------------------------------------------------------------------


@pytest.mark.parametrize("flags", MODES)
def test_logs_linked_out_of_the_tree_get_no_report(tmp_path: Path, flags: tuple[str, ...]) -> None:
    """A Kiro repository has no Logs/ until akira writes a report (here a progress report at
    each step's start): a step makes it a link out."""
    out = outside(tmp_path)
    plant_link = f"rm -rf Logs; ln -s {out} Logs; echo a > a.txt"
    tasks = f"- [ ] 1. Plant\n  - Run: `{plant_link}`\n- [ ] 2. More\n  - Run: `echo b > b.txt`\n"
    root = kiro_repo(tmp_path, tasks, "autonomous_loop:\n  progress_report_every_n_iterations: 1\n")
    done = akira_in(root, "loop", "start", "--task", ".kiro/specs/feat/tasks.md", *flags)
    assert done.returncode == 0, done.stderr
    assert untouched(out)  # neither the completion report nor a progress report went there
    if (root / "Logs").is_symlink():
        said = [str(e.data.get("message", "")) for e in events_of(root) if e.type == "warning"]
        for report in ("progress report", "completion report"):
            assert any(f"{report} not written: Logs: is a symbolic link" in line for line in said)


def events_of(root: Path) -> list[Event]:
    [log] = (root / ".state" / "logs").glob("*.jsonl")
    return list(read_events(log))


@pytest.mark.parametrize("flags", MODES)
@pytest.mark.parametrize("trap", ["Done", "Done/feat_<id>"])
def test_done_linked_out_of_the_tree_moves_nothing_out(
    akira: Akira, tmp_path: Path, trap: str, flags: tuple[str, ...]
) -> None:
    """`Done` a link out, or both names the move could take (`Done/feat`, `Done/feat_<id>`)
    links to folders out of the tree: the feature folder stays under Specs/."""
    out, spare = outside(tmp_path), outside(tmp_path / "spare")
    plants = {
        "Done": f"rm -rf Done && ln -s {out} Done",
        "Done/feat_<id>": f'ln -s {spare} Done/feat && ln -s {out} "Done/feat_$AKIRA_TASK_ID"',
    }
    akira.write_task("feat", f"- [ ] 1. Plant\n  - Run: `{plants[trap]}; echo a > a.txt`\n")
    done = start(akira, *flags)
    assert done.code == 0, done.err
    assert untouched(out) and untouched(spare)
    state = akira.state()
    assert state.status == "completed"
    if (akira.root / "Done").is_symlink() or (akira.root / "Done" / "feat").is_symlink():
        assert (akira.root / "Specs" / "feat" / "tasks.md").is_file()
        assert Path(state.task_path) == akira.root / "Specs" / "feat" / "tasks.md"
        assert any("the task was not moved to Done/" in line for line in warnings(akira))


# --- the worktree slots' folder and .worktreeinclude ------------------------------------------

SLOTS = ".akira/worktrees/$AKIRA_TASK_ID"


def wave_after(plant_step: str) -> str:
    return (
        f"- [ ] 1. Plant\n  - Run: `{plant_step}; echo 1 > one.txt`\n"
        "- [ ] 2. [P] Two\n  - Run: `echo 2 > two.txt`\n"
        "- [ ] 3. [P] Three\n  - Run: `echo 3 > three.txt`\n"
    )


@pytest.mark.parametrize("flags", MODES)
def test_slots_linked_out_before_the_first_wave_are_never_made_there(
    repo: Akira, tmp_path: Path, flags: tuple[str, ...]
) -> None:
    out = outside(tmp_path)
    repo.write_task("feat", wave_after(f"rm -rf {SLOTS}; mkdir -p .akira/worktrees && ln -s {out} {SLOTS}"))
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-q", "-m", "the tasks")
    done = start(repo, "--parallel", "2", *flags)
    assert untouched(out), sorted(p.name for p in out.iterdir())  # no slot there, nothing deleted
    if done.code == 0:  # the sandbox kept the step from planting it: .akira/ existed, read-only
        assert not (repo.root / ".akira" / "worktrees").is_symlink()
        return
    assert done.code == 4, done.err
    assert "is a symbolic link" in repo.state().stop_reason and "delete the link" in repo.state().stop_reason


def test_slots_linked_out_at_the_completion_delete_nothing_there(repo: Akira, tmp_path: Path) -> None:
    out = outside(tmp_path)
    repo.write_task(
        "feat",
        "- [ ] 1. [P] One\n  - Run: `echo 1 > one.txt`\n"
        "- [ ] 2. [P] Two\n  - Run: `echo 2 > two.txt`\n"
        f"- [ ] 3. Plant\n  - Run: `rm -rf {SLOTS} && ln -s {out} {SLOTS}; echo 3 > three.txt`\n",
    )
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-q", "-m", "the tasks")
    done = start(repo, "--parallel", "2", "--no-sandbox")
    assert done.code == 0, done.err
    assert untouched(out)
    assert any("the task's worktrees were not removed" in line for line in warnings(repo))


@pytest.mark.parametrize("flags", MODES)
def test_a_worktreeinclude_linked_out_of_the_tree_is_not_read(
    repo: Akira, tmp_path: Path, flags: tuple[str, ...]
) -> None:
    patterns = tmp_path / "patterns"
    patterns.write_text(".env\n")
    (repo.root / ".gitignore").write_text(".env\n")
    (repo.root / ".env").write_text("TOKEN=the-persons\n")
    seen = "test -f .env && touch copied$AKIRA_STEP_ID.txt; echo $AKIRA_STEP_ID > s$AKIRA_STEP_ID.txt"
    repo.write_task(
        "feat", wave_after(f"ln -s {patterns} .worktreeinclude").replace("echo 2 > two.txt", seen)
    )
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-q", "-m", "the tasks")
    done = start(repo, "--parallel", "2", *flags)
    assert done.code == 0, done.err
    assert git(repo.root, "ls-tree", "-r", "--name-only", "HEAD", "--", "copied2.txt") == ""
    assert any(".worktreeinclude not read" in line and "outside" in line for line in warnings(repo))


# --- the task file: renamed, with a forged tick -------------------------------------------------

FORGE = {
    "folder": "mv Specs/feat Specs/feat-old && mkdir -p Specs/feat && "
    "sed 's/- \\[ \\] 2\\./- [x] 2./' Specs/feat-old/tasks.md > Specs/feat/tasks.md",
    "parent": "mv Specs Specs-old && mkdir -p Specs/feat && "
    "sed 's/- \\[ \\] 2\\./- [x] 2./' Specs-old/feat/tasks.md > Specs/feat/tasks.md",
}


@pytest.mark.parametrize(
    ("how", "trap", "flags"),
    [
        pytest.param("run", "folder", UNSANDBOXED, id="run-folder-no-sandbox"),
        pytest.param("agent", "folder", UNSANDBOXED, id="agent-folder-no-sandbox"),
        pytest.param("run", "parent", UNSANDBOXED, id="run-parent-no-sandbox"),
        pytest.param("run", "parent", (), marks=SANDBOXED.marks, id="run-parent-sandboxed"),
        pytest.param("agent", "parent", (), marks=SANDBOXED.marks, id="agent-parent-sandboxed"),
    ],
)
def test_a_forged_tick_in_a_task_file_put_in_its_place_is_never_taken(
    akira: Akira, tmp_path: Path, how: str, trap: str, flags: tuple[str, ...]
) -> None:
    forge = f"{FORGE[trap]} && echo 1 > one.txt"
    agent = tmp_path / "agent.sh"
    agent.write_text(f'case "$AKIRA_STEP_ID" in 1) {forge} ;; *) touch two-ran ;; esac\n')
    akira.write_config(f"agent:\n  command: bash {agent}\n")
    run = (f"  - Run: `{forge}`\n", "  - Run: `touch two-ran`\n") if how == "run" else ("", "")
    task = akira.write_task("feat", f"- [ ] 1. Forge\n{run[0]}- [ ] 2. Never ran\n{run[1]}")
    before = task.read_bytes()
    done = start(akira, *flags)
    state = akira.state()
    assert "2" not in state.completed_ids() and not (akira.root / "two-ran").exists()
    if not flags:  # sandboxed, every spec folder is read-only: the step cannot even move one
        assert not (akira.root / "Specs-old").exists() and task.read_bytes() == before
        assert state.status == "needs_action" and "exited 1" in state.stop_reason, done.err
        return
    assert done.code == 3 and state.status == "paused", done.err
    assert "was replaced while step 1 ran" in state.stop_reason
    assert (akira.root / ".hooks" / f"stop_autonomous_loop_{state.task_id}.md").is_file()


def test_a_task_file_a_step_replaced_by_a_link_out_of_the_tree_is_never_read_or_ticked(
    akira: Akira, tmp_path: Path
) -> None:
    """Unsandboxed (sandboxed, the task file is bound read-only): the step deletes the task file
    and leaves a link to a file outside in its place. akira's tick of step 1, and the running
    mark of step 2, would go through it; it found the link's path inside once and did not look
    again. It is gone, so the loop pauses, and the file outside keeps its bytes."""
    target = tmp_path / "outside.md"
    target.write_text("- [ ] 1. Plant\n- [ ] 2. Never ran\n")
    before = target.read_bytes()
    plant_link = f"rm Specs/feat/tasks.md && ln -s {target} Specs/feat/tasks.md"
    akira.write_task(
        "feat", f"- [ ] 1. Plant\n  - Run: `{plant_link}`\n- [ ] 2. Never ran\n  - Run: `touch two-ran`\n"
    )
    done = start(akira, *UNSANDBOXED)
    assert target.read_bytes() == before
    assert done.code == 3 and not (akira.root / "two-ran").exists(), done.err
    assert "was deleted" in akira.state().stop_reason


# --- Contains: a FIFO, a link out of the tree ----------------------------------------------------


@pytest.mark.parametrize(
    ("trap", "flags"),
    [
        pytest.param("fifo", (), marks=SANDBOXED.marks, id="fifo-sandboxed"),
        pytest.param("fifo", UNSANDBOXED, id="fifo-no-sandbox"),
        pytest.param("link", UNSANDBOXED, id="link-no-sandbox"),
    ],
)
def test_contains_reads_a_regular_file_in_the_tree_only_and_never_hangs(
    akira: Akira, tmp_path: Path, trap: str, flags: tuple[str, ...]
) -> None:
    key = plant(tmp_path) / ".ssh" / "id_rsa"
    made = {"fifo": "mkfifo out.txt", "link": f"ln -s {key} out.txt"}[trap]
    akira.write_config("reflection:\n  max_iterations: 1\n")
    akira.write_task("feat", f"- [ ] 1. Make it\n  - Run: `{made}`\n  - Contains: `out.txt` `SSH-PRIVATE`\n")
    done = start(akira, *flags)
    assert done.code == 4, done.err  # the check failed; akira went on to the escalation
    [attempt] = akira.state().steps["1"].attempts
    assert attempt.evaluation is not None
    [check] = [c for c in attempt.evaluation.checks if c.name.startswith("Contains")]
    reason = {"fifo": "not a regular file (a FIFO, socket or device)", "link": "outside"}[trap]
    assert not check.passed and reason in check.detail, check.detail
    assert SSH_KEY not in text_under(akira.root)
