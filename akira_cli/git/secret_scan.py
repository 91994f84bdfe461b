"""Push protection (docs/guarantees.md, "Secrets"): a step's commit whose added lines hold a
secret, known by value (`redaction.known`) or by shape (`secret_shapes`), is not made. The
attempt fails with each file and line and the masked value, and its reflection says to keep
secrets out of the tree; nothing with a secret is ever pushed.

Only the lines the commit adds count (and the names of the files it adds): a secret the branch
already held is not the step's, and a file's other lines are not read again. A binary file is
read as text (`--text`): a NUL byte must not hide a token.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from akira_cli.git.pinned import Git
from akira_cli.git.verify import CommitRefused
from akira_cli.redaction import MIN_SECRET, known, redact
from akira_cli.secret_shapes import MASK, shapes_in

HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")
SHOWN = 5
"""At most this many findings are named in the attempt's error."""


@dataclass(frozen=True)
class Leak:
    path: str
    line: int
    kind: str
    masked: str

    def __str__(self) -> str:
        path = redact(self.path)  # a name may be the secret itself
        where = f"{path}:{self.line}" if self.line else f"the name {path}"
        return f"{where} holds {self.kind} ({self.masked})"


def added_lines(diff: bytes) -> list[tuple[str, int, str]]:
    """(file, line number, text) of every line a `git diff -U0 --text` adds, and each added
    file's name as its line 0 (a name can carry a token too)."""
    found: list[tuple[str, int, str]] = []
    path, number = "", 0
    for raw in diff.split(b"\n"):
        if raw.startswith(b"+++ "):
            name = raw[4:].decode("utf-8", "replace")
            path = name[2:] if name.startswith("b/") else name
            if path != "/dev/null":
                found.append((path, 0, path))
        elif raw.startswith(b"@@"):
            hunk = HUNK.match(raw)
            number = int(hunk.group(1)) if hunk else 0
        elif raw.startswith(b"+") and path:
            found.append((path, number, raw[1:].decode("utf-8", "replace")))
            number += 1
    return found


def leaks_in(diff: bytes) -> list[Leak]:
    values = [value for value in known() if len(value) >= MIN_SECRET]
    leaks = []
    for path, number, text in added_lines(diff):
        leaks += [Leak(path, number, "a known secret's value", MASK) for value in values if value in text][:1]
        leaks += [Leak(path, number, found.kind, found.masked) for found in shapes_in(text)]
    return leaks


def refuse_secrets(git: Git, env: Mapping[str, str], names: list[str]) -> None:
    """Raises `CommitRefused` when the temporary index's change to `names` adds a secret."""
    if not names:
        return
    done = git.run(
        "diff-index", "--cached", "-p", "-U0", "--text", "--no-color", "--no-ext-diff", "--no-renames",
        "HEAD", "--", *names, env=env,
    )  # fmt: skip
    leaks = leaks_in(done.stdout)
    if not leaks:
        return
    named = "; ".join(str(leak) for leak in leaks[:SHOWN])
    more = f" (and {len(leaks) - SHOWN} more)" if len(leaks) > SHOWN else ""
    said = (
        f"the step's changes hold a secret, so they were not committed: {named}{more}. "
        "Keep secrets out of the tree: read them from the environment, and leave them out of "
        "files, logs and fixtures."
    )
    raise CommitRefused(said, said)
