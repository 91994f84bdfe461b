"""The values of the work tree's ignored `.env*` files: secrets known by value (docs/guarantees.md,
"Secrets"). A `.env` that git ignores is where a project keeps its keys; a step that prints one,
or a comment that asks for it, must find every value masked in what akira writes.

Read once at a run's start. Only files git ignores count (a tracked `.env.example` holds no
secret, and masking its words would garble the text); outside a repository, the `.env*` files
at the top of the work folder. Bounded: a few files, a few hundred kilobytes each.
"""

from __future__ import annotations

import re
from pathlib import Path

from akira_cli import nofollow
from akira_cli.git.pinned import Git, GitError

MAX_FILES = 20
MAX_BYTES = 256 * 1024
LINE = re.compile(r"^\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_.-]*\s*[=:]\s*(?P<value>.*?)\s*$")


def ignored_env_files(folder: Path) -> list[Path]:
    """The `.env*` files git ignores in `folder`'s repository."""
    git = Git.found(folder)
    if git is None:
        return sorted(path for path in folder.glob(".env*") if path.is_file())[:MAX_FILES]
    try:
        done = git.run(
            "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--",
            ":(glob)**/.env*", check=False, timeout=30,
        )  # fmt: skip
    except GitError:
        return []
    names = [name for name in done.stdout.decode("utf-8", "replace").split("\0") if name]
    return [git.root / name for name in names[:MAX_FILES]]


def values_in(text: str) -> list[str]:
    """The values of a `.env` file's `NAME=value` lines, their quotes and comments taken off."""
    found = []
    for line in text.splitlines():
        matched = LINE.match(line)
        if matched is None or line.lstrip().startswith("#"):
            continue
        value = matched["value"]
        if value[:1] in ("'", '"') and value.endswith(value[0]) and len(value) > 1:
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        found.append(value)
    return found


def ignored_env_values(folder: Path) -> list[str]:
    values: list[str] = []
    for path in ignored_env_files(folder):
        try:  # a step may have planted a link: never followed out of the file's folder
            data = nofollow.read(path.parent, path.name, MAX_BYTES)
        except (OSError, nofollow.Refused):
            continue
        values += values_in(data.decode("utf-8", "replace"))
    return values
