"""The state's record of a pull request followed after the push: what `loop status --json`
shows (`url`, `checks`, `round`, `max_rounds`, `waiting_for`), and what the rounds did, for the
report's and the pull request's "Checks" section."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from akira_cli.state.records import Model

KEEP_ROUNDS = 20
"""Rounds kept in the state (a pull request has `max_rounds` per follow; the oldest go first)."""


class FixItem(Model):
    """One thing a round fixes: a failed check (`ci-N`) or a person's review comment (`review-N`)."""

    step_id: str
    kind: Literal["ci", "review"]
    name: str
    """The check's name, or the request's key on the forge (its id and version: `Comment.key`)."""
    what: str = ""
    """One line: the check's first failing line, or the comment's first line."""
    signature: str = ""
    """A check's failure signature (its name and failing lines, the noise taken out)."""
    context: str = ""
    """The failure context while the item is open: the job's log tail, or the comment (redacted)."""
    author: str = ""
    """Who asked: the trusted authors of the request, in order (`Akira-Requested-By`)."""
    edited: str = ""
    """When the request was last edited, as akira read it ("" if never)."""
    where: str = ""
    """A comment's `path:line`."""
    reply_to: str = ""
    """What the forge replies to: the thread's id, or the review's."""
    on: Literal["thread", "review"] = "thread"
    commit: str | None = None
    summary: str = ""
    """The agent's one line (the reason of a reply that needs no change)."""
    files: list[str] = Field(default_factory=list)
    """What the fix's commit changed (the reply names them)."""
    passed: list[str] = Field(default_factory=list)
    """The checks that passed on the fix (the reply names them)."""
    answered: bool = False
    exam_changed: list[str] = Field(default_factory=list)
    """Test files or CI configuration its fix changed (held out, they passed): a green after it
    is a person's to judge."""


class Round(Model):
    number: int
    items: list[FixItem] = Field(default_factory=list)
    pushed: bool = False


class PullRequestWatch(Model):
    url: str
    checks: Literal["pending", "red", "green"] = "pending"
    round: int = 0
    """Fix rounds spent since following began (or since a person resumed it)."""
    max_rounds: int = 3
    waiting_for: int = 0
    """Checks still pending on the head."""
    phase: Literal["following", "green", "needs_action"] = "following"
    head: str = ""
    """The commit akira pushed last: the checks it waits for are this one's."""
    pushed_at: str = ""
    """When akira last pushed (`max_wait_minutes` counts from it)."""
    account: str = ""
    """The forge's authenticated user: akira's own comments are never work."""
    answered: list[str] = Field(default_factory=list)
    """The requests akira replied to (their keys: id and version), so that none is answered twice."""
    not_acted_on: list[str] = Field(default_factory=list)
    """Comments by people without write access: `not acted on: <login> has no write access (...)`."""
    ran: list[str] = Field(default_factory=list)
    """The checks that ran (passed or failed) on a head akira followed: green needs each of them
    passed on the last head, not gone, skipped, neutral or cancelled."""
    seen: dict[str, str] = Field(default_factory=dict)
    """The failure signature of each check that failed in the last round."""
    rounds: list[Round] = Field(default_factory=list)
    numbers: dict[str, int] = Field(default_factory=dict)
    """The last `ci-N` and `review-N` numbers given."""
    gave_up: str = ""
    """Why following ended in needs_action; its failing log is in `last_log`."""
    last_log: str = ""

    def next_id(self, kind: str) -> str:
        self.numbers[kind] = self.numbers.get(kind, 0) + 1
        return f"{kind}-{self.numbers[kind]}"

    def exam_changed(self) -> str:
        """The rounds whose fixes changed tests or CI ("round 1 changed .github/workflows/ci.yml"),
        or "": a green after one needs a person's look."""
        said = []
        for round_ in self.rounds:
            files = sorted({name for item in round_.items for name in item.exam_changed})
            if files:
                said.append(f"round {round_.number} changed {', '.join(files)}")
        return "; ".join(said)

    def open_round(self) -> Round | None:
        last = self.rounds[-1] if self.rounds else None
        return last if last is not None and not last.pushed else None

    def line(self, fixing: str | None = None) -> str:
        """`following pull request: round 1/3, waiting for 2 checks` (what `loop status` says)."""
        said = f"following pull request: round {self.round}/{self.max_rounds}"
        if fixing:
            return f"{said}, fixing {fixing}"
        if self.waiting_for:
            return f"{said}, waiting for {self.waiting_for} check{'' if self.waiting_for == 1 else 's'}"
        return f"{said}, checks {self.checks}"

    def public(self) -> dict[str, object]:
        """`pull_request` in `loop status --json`."""
        return {
            "url": self.url,
            "checks": self.checks,
            "round": self.round,
            "max_rounds": self.max_rounds,
            "waiting_for": self.waiting_for,
        }
