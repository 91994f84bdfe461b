"""The forge's side of following a pull request, behind one small Protocol: the checks of its
head, a failed job's log, the review comments by people, a reply on a thread. `gh.py` speaks
GitHub through `gh`, `glab.py` GitLab through `glab`; what they read comes back as the same
plain records, so the watching never knows which forge it follows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from akira_cli.errors import AkiraError

CheckState = Literal["pending", "pass", "fail", "skip"]


class ForgeError(AkiraError):
    """The forge's tool failed; the message names the command and what it said."""


@dataclass(frozen=True)
class Check:
    name: str
    state: CheckState
    link: str = ""
    description: str = ""


@dataclass(frozen=True)
class Comment:
    """A review comment that asks for work: the latest comment of an unresolved thread, or a
    review that requests changes, written by someone other than akira's account."""

    id: str
    """The comment's (or the review's) id: once akira replied to it, it is answered."""
    reply_to: str
    """Where the reply goes: the thread's id, or the review's."""
    kind: Literal["thread", "review"]
    author: str
    body: str
    path: str = ""
    line: int | None = None

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}" if self.path and self.line else self.path


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

    def comments(self, account: str) -> list[Comment]:
        """Unresolved threads and reviews requesting changes, by anyone but `account`."""
        ...

    def reply(self, comment: Comment, text: str) -> None: ...
