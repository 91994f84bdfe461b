"""A wave step's commit brought onto the task branch (SPEC 13), without touching the person's
index: git merges the step's commit into the tip in memory (`merge-tree`, from the wave's base),
and the files the merge changed are written into the main work tree. The loop then runs the
step's checks there and commits those files as the step's commit (`StepCommits.commit`).

A conflict, or a file of the person's that is dirty where the step wrote, is a collision: the
step runs again after the wave, from the new tip.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
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
    """Writes the merge of `step_commit` (made from `base`) with HEAD into the work tree. HEAD
    descends from `base`, so `base` is the merge's base (git 2.39 has no `--merge-base`)."""
    tip = run.plumb.head()[0]
    if tip == base:
        tree = run.git.out("rev-parse", f"{step_commit}^{{tree}}")
    else:
        done = run.git.run(
            "merge-tree",
            "--write-tree",
            "-z",
            "--name-only",
            tip,
            step_commit,
            check=False,
        )
        fields = done.stdout.decode("utf-8", "replace").split("\0")
        if done.returncode == 1:
            names = fields[1 : fields.index("", 1)] if "" in fields[1:] else fields[1:]
            return Landing(collided=sorted(set(names))[:20] or ["(a conflict git did not name)"])
        if done.returncode != 0:
            return Landing(
                collided=[done.stderr.decode("utf-8", "replace").strip()[:200] or "merge-tree failed"]
            )
        tree = fields[0]
    listing = run.git.out("diff-tree", "-r", "-z", "--name-status", "--no-renames", tip, tree)
    parts = [part for part in listing.split("\0") if part]
    changes = [(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
    changes = [
        (kind, name) for kind, name in changes if name != task_file and not run.is_control(run.root / name)
    ]
    if not changes:
        return Landing()
    names = [name for _, name in changes]
    dirty = run.git.run(
        "status", "--porcelain", "-z", "--untracked-files=all", "--", *names, env={"GIT_OPTIONAL_LOCKS": "0"}
    ).stdout
    if dirty:  # a person's change (or a landing a kill -9 cut short) where the step wrote
        entries = dirty.decode("utf-8", "replace").split("\0")
        return Landing(collided=[entry[3:] for entry in entries if entry[3:]][:20])
    write(run, tree, names, [name for kind, name in changes if kind == "D"])
    return Landing(paths=[run.root / name for name in names])


def write(run: GitRun, tree: str, names: list[str], deleted: list[str]) -> None:
    """The work tree's `names` as `tree` has them, through a temporary index of akira's own."""
    for name in deleted:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(run.root / name)
    kept = [name for name in names if name not in set(deleted)]
    if not kept:
        return
    with tempfile.TemporaryDirectory(prefix="akira-land-") as folder:
        env = {"GIT_INDEX_FILE": str(Path(folder) / "index")}
        run.git.run("read-tree", tree, env=env)
        run.git.run(
            "checkout-index", "-f", "-z", "--stdin", env=env, stdin=b"".join(n.encode() + b"\0" for n in kept)
        )


def unland(run: GitRun, landing: Landing) -> None:
    """Puts the files a landing wrote back as HEAD has them (its checks failed there)."""
    names = [run.relative(path) for path in landing.paths]
    listed = run.git.out("ls-tree", "-r", "-z", "--name-only", "HEAD", "--", *names)
    present = {name for name in listed.split("\0") if name}
    write(run, "HEAD", names, [name for name in names if name not in present])
