"""A wave step's commit brought onto the task branch, one at a time, without touching the person's
index: git merges the step's commit into the tip in memory (`merge-tree`, from the wave's base),
and the files the merge changed are written into the main work tree. The loop then runs the
step's checks there and commits those files as the step's commit (`StepCommits.commit`).

A conflict, or a file of the person's that is dirty where the step wrote, is a collision: the
step runs again after the wave, from the new tip.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from akira_cli.git.run import GitRun


@dataclass
class Landing:
    paths: list[Path] = field(default_factory=list)
    """The main work tree's files the merge wrote (and deleted)."""
    collided: list[str] = field(default_factory=list)
    """The files that collided (empty when the step landed)."""


def land(run: GitRun, base: str, step_commit: str, task_file: str) -> Landing:
    """Writes the merge of `step_commit` (made from `base`) with HEAD into the work tree."""
    tip = run.plumb.head()[0]
    tree = merged(run, tip, base, step_commit)
    if isinstance(tree, Landing):
        return tree
    changes = changed(run, tip, tree, task_file)
    if not changes:
        return Landing()
    theirs = dirty(run, changes)
    if theirs:
        return Landing(collided=theirs[:20])
    write(run, changes)
    return Landing(paths=[run.root / change.name for change in changes])


def merged(run: GitRun, tip: str, base: str, step_commit: str) -> str | Landing:
    """The tree of `step_commit` merged into `tip`, or the collision. `tip` descends from
    `base`, so `base` is the merge's base (git 2.39 has no `--merge-base`)."""
    if tip == base:
        return run.git.out("rev-parse", f"{step_commit}^{{tree}}")
    done = run.git.run("merge-tree", "--write-tree", "-z", "--name-only", tip, step_commit, check=False)
    fields = done.stdout.decode("utf-8", "replace").split("\0")
    if done.returncode == 1:
        names = fields[1 : fields.index("", 1)] if "" in fields[1:] else fields[1:]
        return Landing(collided=sorted(set(names))[:20] or ["(a conflict git did not name)"])
    if done.returncode != 0:
        return Landing(collided=[done.stderr.decode("utf-8", "replace").strip()[:200] or "merge-tree failed"])
    return fields[0]


def changed(run: GitRun, tip: str, tree: str, task_file: str) -> list[Change]:
    """What `tree` changes in `tip`, but the task file and the control plane."""
    raw = run.git.run("diff-tree", "-r", "-z", "--raw", "--no-renames", tip, tree).stdout
    parts = [part for part in raw.decode("utf-8", "surrogateescape").split("\0") if part]
    changes = []
    for at in range(0, len(parts) - 1, 2):
        _, mode, _, blob, _ = parts[at][1:].split(" ")
        changes.append(Change(mode, blob, parts[at + 1]))
    return [c for c in changes if c.name != task_file and not run.is_control(run.root / c.name)]


def dirty(run: GitRun, changes: list[Change]) -> list[str]:
    """The work tree's files where the merge writes that a person changed (a file a landing
    cut short by a kill -9 wrote already is the merge's, not theirs)."""
    names = [change.name for change in changes]
    found = run.git.run(
        "status", "--porcelain", "-z", "--untracked-files=all", "--", *names, env={"GIT_OPTIONAL_LOCKS": "0"}
    ).stdout
    entries = [entry[3:] for entry in found.decode("utf-8", "surrogateescape").split("\0") if entry[3:]]
    blobs = {change.name: change.blob for change in changes}
    return [name for name in entries if not already_merged(run, name, blobs.get(name))]


def already_merged(run: GitRun, name: str, blob: str | None) -> bool:
    """Whether the work tree's file is the merge's already (a landing cut short wrote it)."""
    path = run.root / name
    if blob is None or not path.is_file():
        return False
    return run.git.out("hash-object", "--", str(path)) == blob


@dataclass
class Change:
    """One path the merge changed: its new mode and blob (mode 000000: deleted)."""

    mode: str
    blob: str
    name: str = ""


def write(run: GitRun, changes: list[Change]) -> None:
    """The work tree's paths as `changes` have them: the blobs read in one `cat-file --batch`."""
    for change in changes:
        if change.mode == "000000":
            with contextlib.suppress(FileNotFoundError):
                os.unlink(run.root / change.name)
    kept = [change for change in changes if change.mode != "000000"]
    if not kept:
        return
    out = run.git.run("cat-file", "--batch", stdin="".join(f"{c.blob}\n" for c in kept).encode()).stdout
    at = 0
    for change in kept:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        data = out[header_end + 1 : header_end + 1 + size]
        at = header_end + 1 + size + 1
        target = run.root / change.name
        target.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            if target.is_symlink() or change.mode == "120000":
                target.unlink()
        if change.mode == "120000":
            os.symlink(data, target)
            continue
        target.write_bytes(data)
        os.chmod(target, 0o755 if change.mode == "100755" else 0o644)


def unland(run: GitRun, landing: Landing) -> None:
    """Puts the files a landing wrote back as HEAD has them (its checks failed there)."""
    names = [run.relative(path) for path in landing.paths]
    listed = run.git.out("ls-tree", "-r", "-z", "HEAD", "--", *names)
    present = {}
    for entry in listed.split("\0"):
        if entry:
            info, name = entry.split("\t", 1)
            mode, _, blob = info.split(" ")
            present[name] = Change(mode, blob, name)
    write(run, [present.get(name, Change("000000", "", name)) for name in names])
