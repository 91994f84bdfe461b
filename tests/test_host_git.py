"""The host side of the sandbox, for git (docs/sandbox.md): nothing a step writes runs, or steers, the
git that akira runs on the host after it, nor the person's own `git status` the next morning.

A hostile step plants each trap for host-side git: `.git` renamed and replaced, a
`.git/commondir` that points at a repository of its own, a nested repository, a branch of the
person's moved and akira's folders made; in a parallel step, its worktree's `.git` file pointed
elsewhere, or a repository made in its worktree; with `git.verify`, a hook in a work-tree hooks
folder (husky's); in another task's folder, a repository of its own. Without the sandbox, a
moved branch pauses the run. Each trap's payload writes a marker
into a folder the sandbox cannot see (outside the work tree, not in `allow_write`): a marker
proves host execution, and must never appear, neither during the run nor when the test runs
`git status` itself afterwards, the traps still armed. The step plants from an agent script,
from a `Run:` line and from a project check, as root (as CI runs) and as an ordinary user
(uid 65534 when the suite runs as root)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from akira_cli.sandbox.probe import probe
from akira_cli.sections import SandboxSettings
from tests.support.users import NOBODY, SETPRIV, nobody_python

pytestmark = [
    pytest.mark.skipif(not probe(SandboxSettings()).ok, reason="needs a working bwrap"),
    pytest.mark.slow,
]

PAYLOAD = '#!/bin/sh\necho "$0 ran on the host as uid $(id -u)" >> {outside}/marker-{route}\nexit 1\n'
TRAPS = r"""#!/bin/bash
# A hostile step: it plants one trap ({trap}) for akira's host-side git, and notes what each
# attempt said in loot.txt (in the shared folder the sandbox lets it write).
[ -t 0 ] || cat > /dev/null
echo done > work.txt
[ -f {shared}/planted ] && exit 0
touch {shared}/planted
note() { echo "$1 => $2" >> {shared}/loot.txt; }
printf '{payload}' | sed "s/ROUTE/{trap}/" > {shared}/payload.sh && chmod +x {shared}/payload.sh
case {trap} in
renamed)  # .git renamed, and a new one planted with a program in its config and a hook
  mv .git .git-orig 2>> {shared}/said.txt; note "mv .git" $?
  if [ -d .git-orig ]; then
    cp -r .git-orig .git && git config -f .git/config core.fsmonitor {shared}/payload.sh
    cp {shared}/payload.sh .git/hooks/pre-commit
  fi ;;
commondir)  # .git/commondir to a repository of its own, whose config runs a program
  cp -r .git {shared}/evil && git config -f {shared}/evil/config core.fsmonitor {shared}/payload.sh
  cp {shared}/payload.sh {shared}/evil/hooks/pre-commit
  echo {shared}/evil > .git/commondir 2>> {shared}/said.txt; note "commondir" $? ;;
nested)  # a repository inside the work tree, with a program in its own config
  git init -q sub && echo inner > sub/inner.txt && git -C sub add inner.txt
  git -C sub -c user.name=s -c user.email=s@s commit -qm inner
  git -C sub config core.fsmonitor {shared}/payload.sh; note "nested" $? ;;
writes)  # the person's branch moved; akira's folders made, where they did not exist before
  git update-ref refs/heads/main refs/heads/main~1 2>> {shared}/said.txt; note "update-ref main" $?
  for folder in .akira/worktrees/evil Logs/evil Done/evil Needs_Action/evil .hooks/evil config/evil; do
    mkdir -p $folder 2>> {shared}/said.txt; note "mkdir $folder" $?
  done ;;
esac
exit 0
"""
SLOT = r"""#!/bin/bash
# A parallel step, in its worktree: its `.git` file pointed at a repository of its own, or a
# repository made inside the worktree, each with a program in its config ({trap}).
[ -t 0 ] || cat > /dev/null
printf '{payload}' | sed "s/ROUTE/{trap}-$1/" > {shared}/payload-$1.sh && chmod +x {shared}/payload-$1.sh
case {trap} in
gitdir)
  git init -q {shared}/evil-$1 && git -C {shared}/evil-$1 config core.fsmonitor {shared}/payload-$1.sh
  echo "gitdir: {shared}/evil-$1/.git" > .git 2>> {shared}/said-$1.txt
  echo "slot .git => $?" >> {shared}/loot-$1.txt ;;
nested)
  git init -q nest$1 && echo inner > nest$1/inner.txt && git -C nest$1 add inner.txt
  git -C nest$1 -c user.name=s -c user.email=s@s commit -qm inner
  git -C nest$1 config core.fsmonitor {shared}/payload-$1.sh
  echo "nested => $?" >> {shared}/loot-$1.txt ;;
esac
echo $1 > f$1.txt
"""
HUSKY = r"""#!/bin/bash
# with git.verify: a hook in the work-tree hooks folder the person's config names
[ -t 0 ] || cat > /dev/null
mkdir -p .husky
printf '#!/bin/sh\necho ran >> {shared}/hook-ran\necho pwned >> {outside}/marker-hook\n' > .husky/pre-commit
printf '[ -f {shared}/refused ] || { touch {shared}/refused; echo "husky: lint failed" >&2; exit 1; }\n' >> .husky/pre-commit
chmod +x .husky/pre-commit
echo done > work.txt
"""


@dataclass
class Place:
    """A project repository in a folder of its own that the run's user can reach, the step's
    shared folder (`allow_write`), and the folder where only a payload run on the host could
    write."""

    base: Path
    ws: Path
    shared: Path
    outside: Path
    home: Path
    as_user: list[str]
    python: str = sys.executable
    python_path: str = ""
    """For a Python the run's user can start that lies elsewhere than this one: where akira and
    its dependencies are."""

    def env(self) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if key != "AKIRA_ROOT"}
        env["HOME"] = str(self.home)
        if self.python_path:
            env["PYTHONPATH"] = self.python_path
        return env

    def git(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(
            [*self.as_user, "git", *args], cwd=self.ws, env=self.env(), capture_output=True, text=True
        )
        assert not check or done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
        return done.stdout.strip()

    def akira(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [*self.as_user, self.python, "-m", "akira_cli", *args, "--root", str(self.ws)]
        return subprocess.run(
            command, cwd=self.ws, env=self.env(), capture_output=True, text=True, timeout=300
        )

    def markers(self) -> list[str]:
        return sorted(path.name for path in self.outside.iterdir())

    def loot(self, name: str = "loot.txt") -> dict[str, int]:
        lines = (self.shared / name).read_text().splitlines()
        return {key: int(value) for key, _, value in (line.partition(" => ") for line in lines)}

    def state(self) -> dict[str, object]:
        import json

        [path] = [*self.ws.glob(".state/autonomous_loop_*.json"), *self.ws.glob(".state/archive/*.json")]
        return dict(json.loads(path.read_text()))

    def events(self) -> list[dict[str, object]]:
        import json

        [log] = self.ws.glob(".state/logs/*.jsonl")
        return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


@pytest.fixture(params=["root", "ordinary user"])
def place(request: pytest.FixtureRequest) -> Iterator[Place]:
    """As root (when the suite is root, as CI is), then as an ordinary user: uid 65534 when the
    suite is root (its folders handed to it), else whoever runs the suite."""
    as_user: list[str] = []
    if request.param == "root" and os.geteuid() != 0:
        pytest.skip("the suite does not run as root here: the ordinary-user case covers this machine")
    if request.param != "root" and os.geteuid() == 0:
        try:
            pwd.getpwuid(NOBODY)
        except KeyError:
            pytest.skip(f"this machine has no user {NOBODY} to drop to")
        as_user = SETPRIV
    base = Path(tempfile.mkdtemp(prefix="akira-host-git-", dir="/tmp"))  # not under pytest's 0700 folder
    base.chmod(0o755)
    place = Place(base, base / "ws", base / "shared", base / "outside", base / "home", as_user)
    if as_user:
        found = nobody_python()
        if found is None:
            pytest.skip(
                f"no Python that uid {NOBODY} can start imports this akira ({sys.executable} cannot be reached)"
            )
        place.python, place.python_path = found
    for folder in (place.ws, place.shared, place.outside, place.home):
        folder.mkdir()
    try:
        yield place
    finally:
        shutil.rmtree(base, ignore_errors=True)


def project(place: Place, tasks: str, config: str, scripts: dict[str, str]) -> None:
    """The person's repository: a task file, akira's config, the step's scripts, two commits on
    main (so that main has somewhere to be moved back to), and none of akira's other folders."""
    ws = place.ws
    (ws / "Specs" / "feat").mkdir(parents=True)
    (ws / "Specs" / "feat" / "tasks.md").write_text(tasks)
    (ws / "config").mkdir()
    shared = f"sandbox:\n  allow_write: [{str(place.shared)!r}]\n"
    (ws / "config" / "autonomous_loop.yaml").write_text(config + shared)
    payload = (
        PAYLOAD.replace("{outside}", str(place.outside)).replace("{route}", "ROUTE").replace("\n", "\\n")
    )
    for name, text in scripts.items():
        filled = text.replace("{payload}", payload).replace("{shared}", str(place.shared))
        (ws / name).write_text(filled.replace("{outside}", str(place.outside)))
    if place.as_user:
        subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(place.base)], check=True)
    place.git("init", "-q", "-b", "main")
    place.git("config", "user.name", "Person")
    place.git("config", "user.email", "person@example.com")
    place.git("commit", "-q", "--allow-empty", "-m", "first")
    place.git("add", "-A")
    place.git("commit", "-q", "-m", "base")


def assert_nothing_ran_on_the_host(place: Place) -> None:
    assert place.markers() == [], [(place.outside / name).read_text() for name in place.markers()]
    place.git("status")  # the person's own git, the traps still armed
    place.git("diff", "HEAD~1")
    assert place.markers() == [], [(place.outside / name).read_text() for name in place.markers()]


LATER = "- [ ] 2. Then more\n  - Run: `mkdir -p sub && echo more > sub/more.txt`\n"
"""A later step writes where the trap lies: a project check plants after its attempt's files
were looked at, so only a later attempt's change brings a nested repository to akira's commit."""
HOW = {
    "agent": (
        "- [ ] 1. Do the work\n  - Exists: `work.txt`\n",
        "agent:\n  command: bash traps.sh\n",  # the step with a Run: line runs it
        (),
    ),
    "run": (
        "- [ ] 1. Do the work\n  - Run: `bash traps.sh`\n  - Exists: `work.txt`\n",
        "",
        ("--agent", "script"),
    ),
    "check": (
        "- [ ] 1. Do the work\n  - Run: `echo done > work.txt`\n",
        'checks: ["test ! -f work.txt || bash traps.sh"]\n',
        ("--agent", "script"),
    ),
}


@pytest.mark.parametrize("how", list(HOW))
@pytest.mark.parametrize("trap", ["renamed", "commondir", "nested", "writes"])
def test_no_trap_a_step_plants_runs_on_the_host(place: Place, trap: str, how: str) -> None:
    tasks, config, flags = HOW[how]
    project(place, tasks + LATER, config, {"traps.sh": TRAPS.replace("{trap}", trap)})
    main_before = place.git("rev-parse", "main")
    done = place.akira("loop", "start", "--task", "Specs/feat/tasks.md", "--no-wait", *flags)
    assert place.markers() == [], [(place.outside / name).read_text() for name in place.markers()]
    assert done.returncode == 0, done.stderr
    assert place.state()["sandboxed"] is True
    assert_nothing_ran_on_the_host(place)
    loot = place.loot()
    if trap == "renamed":  # refused inside: a mount point cannot be renamed
        assert loot["mv .git"] != 0 and not (place.ws / ".git-orig").exists()
        assert "Device or resource busy" in (place.shared / "said.txt").read_text()
    if trap == "commondir":  # refused inside: .git is read-only
        assert loot["commondir"] != 0 and not (place.ws / ".git" / "commondir").exists()
    if trap == "nested":  # made, but never committed nor looked into: named in a warning
        assert loot["nested"] == 0 and (place.ws / "sub" / ".git").is_dir()
        assert place.git("ls-tree", "-r", "--name-only", "HEAD", "--", "sub") == ""
        warned = [
            e["data"]["nested"] for e in place.events() if e["type"] == "warning" and e["data"].get("nested")
        ]
        assert warned and warned[0] == ["sub"], place.events()
    if trap == "writes":
        assert loot["update-ref main"] != 0 and place.git("rev-parse", "main") == main_before
        for folder in (".akira/worktrees", "Logs", "Done", "Needs_Action", ".hooks", "config"):
            assert loot[f"mkdir {folder}/evil"] != 0 and not (place.ws / folder / "evil").exists()
    assert "work.txt" in place.git("ls-tree", "-r", "--name-only", "HEAD")


@pytest.mark.parametrize("trap", ["gitdir", "nested"])
def test_a_parallel_step_cannot_steer_the_git_of_its_worktree(place: Place, trap: str) -> None:
    tasks = "".join(
        f"- [ ] {n}. [P] Step {n}\n  - Run: `bash slot.sh {n}`\n  - Exists: `f{n}.txt`\n" for n in (1, 2)
    )
    project(place, tasks, "", {"slot.sh": SLOT.replace("{trap}", trap)})
    done = place.akira(
        "loop", "start", "--task", "Specs/feat/tasks.md", "--no-wait", "--agent", "script", "--parallel", "2"
    )
    assert place.markers() == [], [(place.outside / name).read_text() for name in place.markers()]
    assert done.returncode == 0, done.stderr
    for n in ("1", "2"):
        if trap == "gitdir":  # the worktree's `.git` file is read-only inside
            assert place.loot(f"loot-{n}.txt")["slot .git"] != 0
        else:  # made, but left out of the step's commit, with a warning
            assert place.loot(f"loot-{n}.txt")["nested"] == 0
            assert place.git("ls-tree", "-r", "--name-only", "HEAD", "--", f"nest{n}") == ""
    if trap == "nested":
        warned = sorted(e["data"]["nested"][0] for e in place.events() if e["data"].get("nested"))
        assert warned == ["nest1", "nest2"], place.events()
    assert place.git("log", "--format=%s", "main..akira/feat").splitlines() == [
        "feat: done",
        "2 Step 2",
        "1 Step 1",
    ]
    assert_nothing_ran_on_the_host(place)


def test_a_work_tree_hook_runs_in_the_sandbox_and_its_refusal_fails_the_attempt(place: Place) -> None:
    """`core.hooksPath` at a folder of the work tree (husky's): what the step writes there is a
    hook all the same, and with `git.verify` it runs inside the sandbox, never on the host."""
    tasks = "- [ ] 1. Do the work\n  - Run: `bash husky.sh`\n  - Exists: `work.txt`\n"
    project(place, tasks, "git:\n  verify: true\n", {"husky.sh": HUSKY})
    place.git("config", "core.hooksPath", ".husky")  # the person's own setting
    done = place.akira("loop", "start", "--task", "Specs/feat/tasks.md", "--no-wait", "--agent", "script")
    assert done.returncode == 0, done.stderr
    attempts = place.state()["steps"]["1"]["attempts"]  # type: ignore[index]
    assert [a["outcome"] for a in attempts] == ["failure", "success"]
    assert "the commit was refused" in attempts[0]["error"] and "husky: lint failed" in attempts[0]["error"]
    # it ran for both attempts' commits and the move to Done/'s, each time inside
    assert (place.shared / "hook-ran").read_text() == "ran\nran\nran\n"
    assert place.markers() == []


def test_a_branch_moved_without_the_sandbox_pauses_the_run_and_is_left_for_the_person(place: Place) -> None:
    tasks = (
        "- [ ] 1. Move main\n  - Run: `git update-ref refs/heads/main refs/heads/main~1 && echo x > x.txt`\n"
    )
    tasks += "- [ ] 2. Never reached\n  - Run: `echo y > y.txt`\n"
    project(place, tasks, "", {})
    main_before = place.git("rev-parse", "main")
    done = place.akira(
        "loop", "start", "--task", "Specs/feat/tasks.md", "--no-wait", "--agent", "script", "--no-sandbox"
    )
    assert done.returncode == 3, done.stderr
    state = place.state()
    assert state["status"] == "paused" and "moved the branch main" in str(state["stop_reason"])
    assert "moved the branch main" in done.stderr
    assert [c["step_id"] for c in state["completed_steps"]] == ["1"]  # type: ignore[union-attr]
    moved_to = place.git("rev-parse", "main~0")
    assert moved_to != main_before  # akira never sets it back itself
    warned = [e for e in place.events() if e["type"] == "warning" and e["data"].get("branches")]
    assert warned and warned[0]["data"]["branches"] == ["refs/heads/main"]
    [fix] = [part for part in str(state["stop_reason"]).split("'") if " branch -f main " in part]
    assert (
        subprocess.run([*place.as_user, "bash", "-c", fix], env=place.env(), capture_output=True).returncode
        == 0
    )
    assert place.git("rev-parse", "main") == main_before  # the printed command puts it back


def test_a_repository_a_step_made_in_another_tasks_folder_is_refused_at_its_start(place: Place) -> None:
    """What an earlier run's step left: `Specs/other/.git` with a program in its config. Starting
    that task, akira does not take it for the task's repository."""
    project(place, "- [ ] 1. Work\n  - Run: `echo x > x.txt`\n", "", {})
    other = place.ws / "Specs" / "other"
    other.mkdir()
    (other / "tasks.md").write_text("- [ ] 1. Other\n  - Run: `echo y > y.txt`\n")
    payload = place.shared / "payload.sh"
    payload.write_text(PAYLOAD.replace("{outside}", str(place.outside)).replace("{route}", "nested-start"))
    payload.chmod(0o755)
    if place.as_user:
        subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(place.base)], check=True)
    place.git("add", "-A")
    place.git("commit", "-q", "-m", "the other task")
    place.git("-C", str(other), "init", "-q")
    place.git(
        "-C",
        str(other),
        "-c",
        "user.name=s",
        "-c",
        "user.email=s@s",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "s",
    )
    place.git("-C", str(other), "config", "core.fsmonitor", str(payload))
    done = place.akira("loop", "start", "--task", "Specs/other/tasks.md", "--no-wait", "--agent", "script")
    assert place.markers() == [], [(place.outside / name).read_text() for name in place.markers()]
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "lies in a git repository of its own" in done.stderr and "--no-git" in done.stderr
    assert place.git("branch", "--show-current") == "main"
