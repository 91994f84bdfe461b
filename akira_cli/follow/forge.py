"""The forge's side of following a pull request, behind one small Protocol: the checks of its
head, a failed job's log, the review comments by people, a reply on a thread. `gh.py` speaks
GitHub through `gh`, `glab.py` GitLab through `glab`; what they read comes back as the same
plain records, so the watching never knows which forge it follows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from akira_cli.errors import AkiraError

CheckState = Literal["pending", "pass", "fail", "skip", "cancel"]
"""`skip` is skipped or neutral; `cancel` a run cancelled: neither is a pass (`watch.decide`)."""


class ForgeError(AkiraError):
    """The forge's tool failed; the message names the command and what it said."""


@dataclass(frozen=True)
class Check:
    name: str
    state: CheckState
    link: str = ""
    description: str = ""


@dataclass(frozen=True)
class Note:
    """One comment as the forge shows it: who wrote it, with what access, and when."""

    id: str
    author: str
    body: str
    access: str = ""
    """The author's standing in the repository: GitHub's `authorAssociation` (`OWNER`, `MEMBER`,
    `COLLABORATOR`, `CONTRIBUTOR`, `NONE`, ...), GitLab's role (`OWNER`, `MAINTAINER`,
    `DEVELOPER`, `REPORTER`, `GUEST`, `NONE`). Who may ask is decided from it (`trust.py`)."""
    created: str = ""
    edited: str = ""
    """When it was last edited (`lastEditedAt`, GitLab's `updated_at` past `created_at`), or ""."""


@dataclass(frozen=True)
class Comment:
    """A request for work: an unresolved review thread, or a review that requests changes.
    The forge gives every comment of it (`notes`, oldest first, akira's own replies too); the
    follower keeps only those of people who may ask (`trust.asking`)."""

    id: str
    """The thread's (or the review's) id."""
    reply_to: str
    """Where the reply goes: the thread's id, or the review's."""
    kind: Literal["thread", "review"]
    notes: tuple[Note, ...]
    path: str = ""
    line: int | None = None

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}" if self.path and self.line else self.path

    @property
    def authors(self) -> list[str]:
        return list(dict.fromkeys(note.author for note in self.notes))

    @property
    def author(self) -> str:
        return ", ".join(self.authors)

    @property
    def version(self) -> str:
        """What the request says now: its comments and their edits. A new comment or an edit
        by a person who may ask gives a new version, which is work again."""
        import hashlib

        said = "\n".join(f"{note.id}@{note.edited}" for note in self.notes)
        return hashlib.sha256(said.encode()).hexdigest()[:12]

    @property
    def key(self) -> str:
        """Answered once akira replied to this version (`PullRequestWatch.answered`)."""
        return f"{self.id}@{self.version}"

    @property
    def edited(self) -> str:
        return max((note.edited for note in self.notes), default="")

    def text(self) -> str:
        """Every comment in order, each with its author: the request as the prompt quotes it."""
        if len(self.notes) == 1:
            return self.notes[0].body
        return "\n\n".join(f"{note.author} wrote:\n{note.body}" for note in self.notes)


@dataclass
class Seen:
    """One look at the pull request."""

    head: str
    checks: list[Check] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)
    logs: dict[str, str] = field(default_factory=dict)
    """The failed checks' logs, by check name (read only when a round will fix them)."""

    def failed(self) -> list[Check]:
        return [check for check in self.checks if check.state == "fail"]

    def pending(self) -> list[Check]:
        return [check for check in self.checks if check.state == "pending"]


class Forge(Protocol):
    name: str
    """The tool (`gh`, `glab`)."""

    def account(self) -> str:
        """akira's own account: the forge's authenticated user."""
        ...

    def head(self) -> str:
        """The pull request's head commit, as the forge has it."""
        ...

    def checks(self) -> list[Check]: ...

    def log(self, check: Check) -> str:
        """The failed job's log (what failed in it), or "" when the forge keeps none."""
        ...

    def comments(self) -> list[Comment]:
        """Unresolved threads and reviews requesting changes, every comment with its author's
        access (akira's own replies too: they tell which requests are answered)."""
        ...

    def reply(self, comment: Comment, text: str) -> None: ...
