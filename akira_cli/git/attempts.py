"""A failed attempt's changes on a git-native run, kept as a patch: the work tree before the attempt as
HEAD plus the blobs of the paths already changed, the attempt's patch against it, and going back
to it (`git.failed_attempt: reset`). The person's index is never used: trees are built in a
temporary one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from akira_cli.git.run import GitRun, _lines, _z


def blobs(run: GitRun, names: list[str]) -> dict[str, str | None]:
    """The blobs of `names` as the work tree has them (None: gone), hashed in one call."""
    present = [name for name in names if os.path.isfile(run.root / name)]
    hashed = (
        run.git.out("hash-object", "-w", "--stdin-paths", stdin=_lines(present)).split() if present else []
    )
    found: dict[str, str | None] = dict.fromkeys(names)
    found.update(zip(present, hashed, strict=False))
    return found


def dirty(run: GitRun) -> dict[str, str | None]:
    """Changed and new paths (repository-relative) with their blobs as they are now (None:
    deleted). Hashing writes the blobs, so a failed attempt's patch can be taken later."""
    listed = run.git.run("status", "--porcelain", "-z", "--untracked-files=all").stdout
    names = [entry[3:] for entry in listed.decode("utf-8", "replace").split("\0") if len(entry) > 3]
    return blobs(run, run.committable([run.root / name for name in names], seen_by_git=True))


def before_tree(run: GitRun, env: dict[str, str], dirty: dict[str, str | None]) -> str:
    """HEAD with the `dirty` blobs: the work tree as it was when they were taken."""
    run.git.run("read-tree", "HEAD", env=env)
    entries = b"".join(
        (f"{run.file_mode(name)} {blob}\t{name}" if blob else f"0 {'0' * 40}\t{name}").encode() + b"\0"
        for name, blob in dirty.items()
    )
    if entries:
        run.git.run("update-index", "-z", "--index-info", env=env, stdin=entries)
    return run.git.out("write-tree", env=env)


def attempt_diff(run: GitRun, before: dict[str, str | None], changed: Iterable[Path]) -> tuple[bytes, str]:
    """The patch (binary-safe) and `--stat` of what `changed` paths became since `before`."""
    names = run.committable(changed)
    if not names:
        return b"", ""
    with tempfile.TemporaryDirectory(prefix="akira-index-") as folder:
        env = {"GIT_INDEX_FILE": os.path.join(folder, "index")}
        old = before_tree(run, env, before)
        run.git.run("update-index", "--add", "--remove", "-z", "--stdin", env=env, stdin=_z(names))
        new = run.git.out("write-tree", env=env)
    patch = run.git.run("diff", "--binary", old, new).stdout
    stat = run.git.out("diff", "--stat", old, new)
    return patch, stat


def restore(run: GitRun, before: dict[str, str | None], changed: Iterable[Path]) -> None:
    """The `changed` paths as they were in `before` (HEAD and its dirty blobs): changed
    files restored, created ones removed. The person's index is not touched."""
    names = run.committable(changed)
    with tempfile.TemporaryDirectory(prefix="akira-index-") as folder:
        env = {"GIT_INDEX_FILE": os.path.join(folder, "index")}
        tree = before_tree(run, env, before)
    present = (
        set(run.git.out("ls-tree", "-r", "--name-only", tree, "--", *names).splitlines()) if names else set()
    )
    if present:
        run.git.run("restore", f"--source={tree}", "--worktree", "--", *sorted(present))
    for name in set(names) - present:
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            os.unlink(run.root / name)
