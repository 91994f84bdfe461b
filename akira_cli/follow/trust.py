"""Who may ask (docs/review-and-pull-requests.md, "Who may ask"): a review comment is work only
when its author has write access to the repository (GitHub's `OWNER`, `MEMBER`, `COLLABORATOR`;
GitLab's Developer or above) or is named in `follow.trusted`. Anyone else's comment is never a
step and never reaches a prompt; it is listed as not acted on.

The forge says who wrote each comment and with what access; this is where that is weighed,
next to where the comments are read (`Follower.look`). A thread is the trusted people's request
whole: each of their comments in order, with its author. A reply by anyone else neither replaces
nor adds to it. A request is open while a trusted comment comes after akira's last reply on it,
or one was edited: its version (`Comment.key`) then says whether akira answered what it says now.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from akira_cli.follow.forge import Comment, Note

WRITE_ACCESS = frozenset({"OWNER", "MEMBER", "COLLABORATOR", "MAINTAINER", "DEVELOPER"})
"""GitHub's associations and GitLab's roles that can push to the repository."""


@dataclass
class Asked:
    comments: list[Comment] = field(default_factory=list)
    """The open requests, each with only its trusted people's comments."""
    ignored: list[str] = field(default_factory=list)
    """`not acted on: mallory has no write access (comment on calc.py:1)`, once per author and place."""


def may_ask(note: Note, trusted: Iterable[str]) -> bool:
    """Write access on the forge, or a login the person named in `follow.trusted`. A bot (a
    GitHub App's `name[bot]`) asks only when named there: an app with write access speaks for
    whoever drives it."""
    names = {name.lower() for name in trusted}
    if note.author.lower() in names:
        return True
    return note.access.upper() in WRITE_ACCESS and not is_bot(note)


def is_bot(note: Note) -> bool:
    return note.author.lower().endswith("[bot]")


def asking(comments: Iterable[Comment], account: str, trusted: Iterable[str]) -> Asked:
    """The requests to work, and the comments not acted on; `account` is akira's own."""
    asked, names = Asked(), list(trusted)
    for comment in comments:
        own = [at for at, note in enumerate(comment.notes) if note.author == account]
        last_reply = own[-1] if own else -1
        kept: list[tuple[int, Note]] = []
        for at, note in enumerate(comment.notes):
            if note.author == account:
                continue
            if may_ask(note, names):
                kept.append((at, note))
                continue
            kind = "review" if comment.kind == "review" else "comment"
            why = "is a bot not named in follow.trusted" if is_bot(note) else "has no write access"
            line = f"not acted on: {note.author} {why} ({kind} on {where(comment)})"
            if line not in asked.ignored:
                asked.ignored.append(line)
        if not kept:
            continue
        newer = any(at > last_reply for at, _ in kept)
        edited = any(note.edited for _, note in kept)  # its version says whether akira answered it
        if newer or edited:
            asked.comments.append(replace(comment, notes=tuple(note for _, note in kept)))
    return asked


def where(comment: Comment) -> str:
    return comment.where or "the pull request"
