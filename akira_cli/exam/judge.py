"""The exam of a step (docs/design.md, the exam): fixed before its first attempt, and a pass
that changed it judged once more on the exam as it stood.

A step that touched no exam file costs the names of the files it changed matched against the
rules, and nothing else. One that did gets a held-out run: the same checks on a scratch copy
of its tree with those files as they were, inside the same sandbox."""

from __future__ import annotations

import difflib
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli import nofollow
from akira_cli.checks import Check, evaluate
from akira_cli.events import EventType
from akira_cli.exam.base import Base, CommitBase, CopyBase, current
from akira_cli.exam.environments import environments
from akira_cli.exam.files import ExamRules, Kind, asks_for_exam, only_asserts_added, plain_test
from akira_cli.exam.heldout import copy_tree, put_back, remove_tree
from akira_cli.git.pinned import Git
from akira_cli.git.plumbing import Plumbing
from akira_cli.runner import CommandRunner
from akira_cli.state.records import CHANGED_EXAM, ExamResult

if TYPE_CHECKING:
    from akira_cli.changes import Snapshot
    from akira_cli.config import Config
    from akira_cli.events import EventBus
    from akira_cli.loop.partners import Where
    from akira_cli.state.models import LoopState
    from akira_cli.state.records import Attempt, Evaluation, StepRecord
    from akira_cli.tasks.model import Step
    from akira_cli.workspace import Workspace

DIFF_LIMIT = 6000
SAFE = re.compile(r"[^A-Za-z0-9._-]")


class ExamJudge:
    def __init__(self, config: Config, workspace: Workspace, state: LoopState, bus: EventBus) -> None:
        self.config, self.workspace, self.state, self.bus = config, workspace, state, bus
        self.threshold = config.evaluation.confidence_threshold
        self._gits: dict[Path, Git | None] = {}
        self._rules: dict[tuple[str, ...], tuple[ExamRules, dict[str, Kind | None]]] = {}

    def rules(self, step: Step) -> ExamRules:
        return self._ruled(step)[0]

    def kinds(self, step: Step, names: Iterable[str]) -> dict[str, Kind]:
        """The exam files among `names`, by kind; each path is judged once per set of checks (a
        step that touches no exam file costs these lookups and nothing else)."""
        rules, known = self._ruled(step)
        found = {}
        for name in names:
            kind = known[name] if name in known else known.setdefault(name, rules.kind(name))
            if kind is not None:
                found[name] = kind
        return found

    def _ruled(self, step: Step) -> tuple[ExamRules, dict[str, Kind | None]]:
        commands = (*step.verify, *(check.run for check in self.config.checks))
        if commands not in self._rules:
            rules = ExamRules.of(commands, self.config.checks.exam, self.config.checks.exam_exclude)
            self._rules[commands] = (rules, {})
        return self._rules[commands]

    def fix(self, step: Step, record: StepRecord, where: Where, files: Snapshot | None) -> None:
        """Before the step's first attempt: what its exam is judged against from now on."""
        if record.exam_base is not None:
            return
        record.exam_asked = step_text(step)
        record.exam_programs = {
            **programs(where.workdir, self.rules(step).scripts),
            **environments(where.workdir),
        }
        git = self.git(where)
        if git is not None:
            record.exam_base = Plumbing(git).head()[0] or None
            if record.exam_base is not None:
                return
        names = list(self.kinds(step, files or {}))
        if names:
            self.copy_base(step, create=True).take(where.workdir, names)
        record.exam_base = "copy"

    def judge(
        self,
        step: Step,
        record: StepRecord,
        attempt: Attempt,
        where: Where,
        checks: Callable[[CommandRunner, Path], list[Check]],
    ) -> None:
        """A passing attempt's exam: untouched (nothing to do), or held out."""
        if record.exam_base is None:
            return
        base = self.base(step, record, where)
        names, envs = self.touched(record, attempt, where, base)
        changed, found_now, own = self.sorted_out(step, names, base, where)
        if not changed and not envs:
            attempt.exam = ExamResult(own_tests=own) if own else None
            return
        exam = ExamResult(
            changed=[*sorted(changed), *envs], own_tests=own, diff=exam_diff(changed, found_now)
        )
        attempt.exam = exam
        held = None if envs else self.held_out(step, attempt.number, where, changed, checks)
        exam.held_out = "passed" if held is not None and held.complete else "failed"
        self.bus.emit(
            EventType.EXAM, step.id, attempt=attempt.number, changed=exam.changed[:20], held_out=exam.held_out
        )
        if held is None:
            exam.failing = (
                f"the Python environment the checks run in changed ({', '.join(envs)}): akira keeps "
                "no copy of it to put back, so no run of the checks in it is evidence"
            )
        elif held.complete:
            return
        else:
            exam.failing = "\n".join(held.reasons)[:3000]
        asked = record.exam_asked if record.exam_asked is not None else step_text(step)
        exam.allowed = (
            "person" if record.exam_accepted else "step" if asks_for_exam(asked, exam.changed) else None
        )
        if exam.allowed is None:
            refuse(attempt, exam, held_out=held is not None)

    def touched(
        self, record: StepRecord, attempt: Attempt, where: Where, base: Base
    ) -> tuple[set[str], list[str]]:
        """The paths the step's attempts may have changed (files, programs a check runs, what a
        commit of its own moved or a `.gitignore` hid), and the Python environments it changed."""
        names = {name for kept in [*record.attempts, attempt] for name in kept.files_changed}
        scripts = frozenset(name for name in record.exam_programs if not name.endswith("/"))
        now = {**programs(where.workdir, scripts), **environments(where.workdir)}
        moved = [name for name, seen in record.exam_programs.items() if now.get(name) != seen]
        names.update(name for name in moved if not name.endswith("/"))
        if isinstance(base, CommitBase):
            names.update(base.moved_since())
            if any(name.rsplit("/", 1)[-1] == ".gitignore" for name in names):
                names.update(base.ignored())  # a file the step hid from git is no less its work
        return names, [name for name in moved if name.endswith("/")]

    def sorted_out(
        self, step: Step, names: Iterable[str], base: Base, where: Where
    ) -> tuple[dict[str, bytes | None], dict[str, bytes | None], list[str]]:
        """The exam files among `names` that differ from the base, as they were and as they are,
        and the new or only stricter tests among them (the step's own, not held out)."""
        changed: dict[str, bytes | None] = {}
        found_now: dict[str, bytes | None] = {}
        own: list[str] = []
        for name, kind in sorted(self.kinds(step, names).items()):
            old, new = base.old(name), current(where.workdir, name)
            if old == new:
                continue
            if (
                kind == "test"
                and new is not None
                and (plain_test(new) if old is None else only_asserts_added(old, new))
            ):
                own.append(name)
            else:
                changed[name], found_now[name] = old, new
        return changed, found_now, own

    def held_out(
        self,
        step: Step,
        number: int,
        where: Where,
        files: dict[str, bytes | None],
        checks: Callable[[CommandRunner, Path], list[Check]],
    ) -> Evaluation:
        """The same checks on a scratch copy of the step's tree with `files` as they were."""
        source = where.path or self.workspace.root
        inner = where.workdir.relative_to(source) if where.workdir.is_relative_to(source) else None
        if inner is None:
            source, inner = where.workdir, Path()
        scratch = Path(tempfile.mkdtemp(prefix=f"akira-exam-{SAFE.sub('_', step.id)}-{number}-"))
        tree = scratch / source.name  # outside the tree: no config above it is found (pytest's rootdir)
        try:
            copy_tree(source, tree)
            put_back(tree / inner, files)
            runner = self.runner(where.runner, tree, source)
            return evaluate(checks(runner, tree / inner), self.threshold)
        finally:
            remove_tree(scratch)

    def runner(self, like: CommandRunner, tree: Path, source: Path) -> CommandRunner:
        env = {**(like.env or {}), "GIT_CEILING_DIRECTORIES": str(tree.parent)}
        workspace = Path(env.get("AKIRA_WORKSPACE", self.workspace.root))
        if workspace.is_relative_to(source):
            env["AKIRA_WORKSPACE"] = str(tree / workspace.relative_to(source))
        # the copy is the tree the checks may write; the step's is read-only
        wrapper = like.wrapper.moved(tree) if like.wrapper is not None else None
        return CommandRunner(tree, env=env, ledger=like.ledger, private_env=True, wrapper=wrapper)

    def base(self, step: Step, record: StepRecord, where: Where) -> Base:
        git = self.git(where)
        if record.exam_base not in (None, "copy") and git is not None:
            top = git.root
            prefix = where.workdir.relative_to(top).as_posix() + "/" if where.workdir != top else ""
            return CommitBase(git, record.exam_base or "", "" if prefix == "./" else prefix)
        return self.copy_base(step)

    def copy_base(self, step: Step, create: bool = False) -> CopyBase:
        """The step's copied exam files (`create`: its folder made, never through a link)."""
        parts = ("exam", SAFE.sub("_", self.state.task_id), SAFE.sub("_", step.id))
        if create:
            os.close(nofollow.open_folder(self.workspace.state_dir, parts, create=True))
        return CopyBase(self.workspace.state_dir.joinpath(*parts))

    def git(self, where: Where) -> Git | None:
        """The repository of the step's tree (a git-native run's), found once per tree."""
        if self.state.git is None:
            return None
        folder = where.path or where.workdir
        if folder not in self._gits:
            self._gits[folder] = Git.found(folder)
        return self._gits[folder]


def programs(workdir: Path, names: frozenset[str]) -> dict[str, str]:
    """What each of the files a check runs as its program is (its inode, change time, size and
    mode, or a link's target): a write, a replacement or a chmod changes it, and no step can set
    a change time back. A program in an ignored folder (`.venv/bin/python`) is seen this way."""
    found = {}
    for name in sorted(names):
        try:
            info = os.lstat(workdir / name)
            link = os.readlink(workdir / name) if stat.S_ISLNK(info.st_mode) else ""
        except OSError:
            continue
        found[name] = f"{info.st_ino}:{info.st_ctime_ns}:{info.st_size}:{info.st_mode:o}:{link}"
    return found


def exam_diff(files: dict[str, bytes | None], now: dict[str, bytes | None]) -> str:
    """The exam files' unified diff from what they were (`files`) to what they are (`now`, as the
    judge read them), cut to `DIFF_LIMIT`."""
    out: list[str] = []
    for name, old in files.items():
        new = now[name]
        before = (old or b"").decode("utf-8", "replace").splitlines(keepends=True)
        after = (new or b"").decode("utf-8", "replace").splitlines(keepends=True)
        out += difflib.unified_diff(
            before,
            after,
            f"a/{name}" if old is not None else "/dev/null",
            f"b/{name}" if new is not None else "/dev/null",
        )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in out)
    return text if len(text) <= DIFF_LIMIT else text[:DIFF_LIMIT] + "…\n"


def refuse(attempt: Attempt, exam: ExamResult, *, held_out: bool) -> None:
    """The passing attempt fails: it changed its exam, and nobody let it."""
    why = f"with those files as they were before the step, {exam.failing}" if held_out else exam.failing
    attempt.outcome = "failure"
    attempt.error = (
        f"{CHANGED_EXAM}: the checks passed only with exam files changed ({', '.join(exam.changed)}); "
        f"{why}\n"
        "Make the code pass the checks as they are: do not change the tests, their "
        "configuration, hooks, CI or the Python environment they run in."
    )
    attempt.error_signature = CHANGED_EXAM


def step_text(step: Step) -> str:
    return "\n".join([step.title, *step.details])
