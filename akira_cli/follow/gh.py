"""GitHub's side, through `gh` (as 2.102 speaks): `gh pr checks --json` for the head's checks,
`gh run view --log-failed` for a failed job's log, `gh api graphql` for the review threads (each
comment with its author's `authorAssociation` and its last edit) and the replies on them, `gh pr
comment` for the answer to a review, `gh api user` for akira's own account. Every call names the
pull request's host and repository, taken from its URL."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from akira_cli import redaction
from akira_cli.follow.forge import Check, CheckState, Comment, ForgeError, Note
from akira_cli.git.pr import run_tool, said

PULL_URL = re.compile(r"^https?://(?P<host>[^/]+)/(?P<owner>[^/]+)/(?P<name>[^/]+)/pull/(?P<number>\d+)")
JOB_LINK = re.compile(r"/actions/runs/(?P<run>\d+)/job/(?P<job>\d+)")
BUCKETS: dict[str, CheckState] = {
    "pass": "pass",
    "fail": "fail",
    "pending": "pending",
    "skipping": "skip",
    "cancel": "cancel",
}
THREADS = """query AkiraReviewThreads($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100) {
        nodes {
          id isResolved path line
          comments(last: 50) { nodes { id body author { login } authorAssociation createdAt lastEditedAt } }
        }
      }
      reviews(last: 50) { nodes { id state body author { login } authorAssociation createdAt lastEditedAt } }
    }
  }
}"""
REPLY = """mutation AkiraThreadReply($thread: ID!, $body: String!) {
  addPullRequestReviewThreadReply(input: {pullRequestReviewThreadId: $thread, body: $body}) {
    comment { id }
  }
}"""


class Gh:
    name = "gh"

    def __init__(self, url: str, root: Path) -> None:
        found = PULL_URL.match(url)
        if found is None:
            raise ForgeError(f"{url} is not a GitHub pull request's URL (https://HOST/OWNER/REPO/pull/N)")
        self.url, self.root = url, root
        self.host, self.owner, self.repo = found["host"], found["owner"], found["name"]
        self.number = int(found["number"])

    def run(self, *args: str, stdin: str | None = None) -> str:
        done = run_tool(["gh", *args], self.root, stdin)
        if done.returncode != 0:
            raise ForgeError(said(done))
        return done.stdout

    def graphql(self, query: str, **fields: str | int) -> dict[str, Any]:
        args = ["api", "graphql", "--hostname", self.host, "-f", f"query={query}"]
        for key, value in fields.items():
            args += ["-F" if isinstance(value, int) else "-f", f"{key}={value}"]
        try:
            data = json.loads(self.run(*args)).get("data") or {}
        except (ValueError, AttributeError):
            raise ForgeError("gh api graphql answered with something that is not JSON") from None
        return data if isinstance(data, dict) else {}

    def account(self) -> str:
        """akira's login; the token gh holds for the host is masked from now on (a CI log or a
        step may print it, and gh keeps it in its own files, not in akira's environment)."""
        token = run_tool(["gh", "auth", "token", "--hostname", self.host], self.root)
        if token.returncode == 0:
            redaction.register([token.stdout.strip()])
        return self.run("api", "--hostname", self.host, "user", "--jq", ".login").strip()

    def head(self) -> str:
        return self.run("pr", "view", self.url, "--json", "headRefOid", "--jq", ".headRefOid").strip()

    def checks(self) -> list[Check]:
        done = run_tool(["gh", "pr", "checks", self.url, "--json", "name,bucket,link,description"], self.root)
        if done.returncode != 0 and "no checks reported" in (done.stderr + done.stdout):
            return []
        if done.returncode != 0 and not done.stdout.strip().startswith("["):
            raise ForgeError(said(done))
        try:
            rows = json.loads(done.stdout)
        except ValueError:
            raise ForgeError("gh pr checks answered with something that is not JSON") from None
        return [
            Check(
                str(row.get("name") or "check"),
                BUCKETS.get(str(row.get("bucket")), "pending"),
                str(row.get("link") or ""),
                str(row.get("description") or ""),
            )
            for row in rows
            if isinstance(row, dict)
        ]

    def log(self, check: Check) -> str:
        found = JOB_LINK.search(check.link)
        if found is None:  # a status from another service: its description is all there is
            return check.description
        repo = f"{self.host}/{self.owner}/{self.repo}"
        return self.run("run", "view", found["run"], "--job", found["job"], "--log-failed", "-R", repo)

    def comments(self) -> list[Comment]:
        data = self.graphql(THREADS, owner=self.owner, name=self.repo, number=self.number)
        pull = (data.get("repository") or {}).get("pullRequest") or {}
        found = [
            thread_comment(thread)
            for thread in (pull.get("reviewThreads") or {}).get("nodes") or []
            if not thread.get("isResolved")
        ]
        latest: dict[str, dict[str, Any]] = {}
        for review in (pull.get("reviews") or {}).get("nodes") or []:
            latest[login(review)] = review  # oldest first: a later review replaces an earlier one
        for review in latest.values():
            if review.get("state") == "CHANGES_REQUESTED" and str(review.get("body") or "").strip():
                rid = str(review.get("id"))
                found.append(Comment(rid, rid, "review", (note(review),)))
        return [comment for comment in found if comment is not None]

    def reply(self, comment: Comment, text: str) -> None:
        if comment.kind == "thread":
            self.graphql(REPLY, thread=comment.reply_to, body=text)
        else:
            self.run("pr", "comment", self.url, "--body-file", "-", stdin=text)


def login(node: dict[str, Any]) -> str:
    return str((node.get("author") or {}).get("login") or "ghost")


def note(node: dict[str, Any]) -> Note:
    return Note(
        str(node.get("id")),
        login(node),
        str(node.get("body") or ""),
        str(node.get("authorAssociation") or "NONE"),
        str(node.get("createdAt") or ""),
        str(node.get("lastEditedAt") or ""),
    )


def thread_comment(thread: dict[str, Any]) -> Comment | None:
    """An unresolved thread, every comment of it, with the file and line it is on."""
    comments = (thread.get("comments") or {}).get("nodes") or []
    if not comments:
        return None
    line = thread.get("line")
    return Comment(
        str(thread.get("id")),
        str(thread.get("id")),
        "thread",
        tuple(note(comment) for comment in comments if isinstance(comment, dict)),
        str(thread.get("path") or ""),
        int(line) if isinstance(line, int) else None,
    )
