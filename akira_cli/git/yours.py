"""A person's uncommitted work at `loop start` (docs/git.md, "What stays yours").

A step's commit holds the files its attempts changed, as the work tree has them. A tracked file
the person had changed before the run (staged or not) and that a step then touches holds both
their lines and the step's, and no commit can tell them apart: the step's commit would carry the
person's work, and `loop undo` would take it back. akira could set that work apart as a commit of
the person's own first, as aider does, but such a commit writes their index (which akira never
touches) and puts work they never chose to commit on a branch that is pushed and opened as a pull
request. So a start is refused instead, with the files and the ways out: one command before the
night, and nothing of theirs is ever committed, published or reverted.
"""

from __future__ import annotations

from collections.abc import Callable

from akira_cli.errors import AkiraError
from akira_cli.git.pinned import Git
from akira_cli.workspace import in_quotes

SHOWN = 5
"""Files named in the refusal; more are counted."""


def changed_tracked(git: Git) -> list[str]:
    """Tracked paths whose index or work tree differs from HEAD (repository-relative), asked
    without taking the index lock: the person's index is never written, not even refreshed."""
    done = git.run(
        "status", "--porcelain=v1", "-z", "--untracked-files=no", "--ignore-submodules=dirty",
        env={"GIT_OPTIONAL_LOCKS": "0"}, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        return []
    names, entries = [], iter(done.stdout.decode("utf-8", "replace").split("\0"))
    for entry in entries:
        if len(entry) < 4:
            continue
        names.append(entry[3:])
        if entry[0] in "RC":
            next(entries, None)  # a rename's or copy's source follows it
    return names


def refuse_uncommitted(git: Git, shown: Callable[..., str], akiras: Callable[[str], bool]) -> None:
    """Refuses a start while tracked files other than akira's own (`akiras`: the task file, the
    control plane and the reports) have uncommitted changes, naming them and the ways out."""
    yours = [name for name in changed_tracked(git) if not akiras(name)]
    if not yours:
        return
    listed = ", ".join(yours[:SHOWN]) + (f" and {len(yours) - SHOWN} more" if len(yours) > SHOWN else "")
    raise AkiraError(
        f"uncommitted changes in {listed}: a step that touches one would commit your work as its own "
        f"(and 'loop undo' would take it back); commit them ({in_quotes(shown('commit', '-am', 'wip'))}) "
        f"or set them aside ({in_quotes(shown('stash'))}), then start again; or run with --no-git"
    )
