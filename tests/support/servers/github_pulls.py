"""The scripted GitHub server's repository: its pull requests, the checks of a head commit, the
job logs, the review threads and reviews, and every call gh made (`calls`).

`checks(sha)` is the test's script: the jobs a head commit's workflow run has, each with its
status, conclusion and log. The head is read from a real bare repository (`bare`), where akira
pushed; a GraphQL operation or REST call not listed here is unknown (`graphql`/`rest` answer
None) and the server refuses it loudly.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.servers.github_actions import Actions, Job

STAMP = "2030-01-01T00:00:00Z"


def replied_at(n: int) -> str:
    return f"2030-01-01T01:{n // 60 % 60:02d}:{n % 60:02d}Z"


@dataclass
class Comment:
    author: str
    body: str
    id: int = 0
    association: str = "COLLABORATOR"
    """The author's `authorAssociation`: `OWNER`, `MEMBER`, `COLLABORATOR` may ask; `CONTRIBUTOR`,
    `FIRST_TIME_CONTRIBUTOR`, `NONE` may not."""
    created: str = STAMP
    edited: str | None = None
    """`lastEditedAt`: set by `Forge.edit`."""


@dataclass
class Thread:
    path: str
    line: int
    comments: list[Comment]
    resolved: bool = False
    id: str = ""


@dataclass
class Review:
    author: str
    body: str
    state: str = "CHANGES_REQUESTED"
    id: str = ""
    association: str = "COLLABORATOR"
    edited: str | None = None


@dataclass
class Pull:
    number: int
    head: str
    base: str
    title: str
    body: str
    draft: bool
    comments: list[Comment] = field(default_factory=list)


@dataclass
class Forge:
    owner: str
    name: str
    bare: Path
    checks: Callable[[str], list[Job]]
    """The jobs of a head commit's workflow run (the test's script)."""
    login: str = "akira-bot"
    threads: list[Thread] = field(default_factory=list)
    reviews: list[Review] = field(default_factory=list)
    pulls: list[Pull] = field(default_factory=list)
    host: str = ""
    calls: list[str] = field(default_factory=list)
    """Every call answered: `graphql <operation>` or `<METHOD> <path>`."""
    ready: list[str] = field(default_factory=list)
    """The head each time a pull request was marked ready for review."""

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self.actions = Actions(self.owner, self.name)
        self._ids = 100
        for thread in self.threads:
            self.number(thread)
        for review in self.reviews:
            review.id = review.id or f"PRR_{self.new_id()}"

    def new_id(self) -> int:
        self._ids += 1
        return self._ids

    def number(self, thread: Thread) -> None:
        thread.id = thread.id or f"PRRT_{self.new_id()}"
        for comment in thread.comments:
            comment.id = comment.id or self.new_id()

    # -- what the test reads ------------------------------------------------------------------

    def head(self, branch: str) -> str:
        done = subprocess.run(
            ["git", "--git-dir", str(self.bare), "rev-parse", "--verify", "-q", f"refs/heads/{branch}"],
            capture_output=True, text=True, check=False, timeout=30,
        )  # fmt: skip
        return done.stdout.strip()

    def edit(self, comment: Comment, body: str) -> None:
        """A person edits a comment: its body, and `lastEditedAt` moved (the checks script may call
        it while the server answers, under its lock)."""
        comment.body = body
        comment.edited = f"2030-01-02T00:00:{len(self.calls) % 60:02d}Z"

    def jobs(self, sha: str) -> list[Job]:
        self.actions.host = self.host
        return self.actions.seen(sha, self.checks(sha) if sha else [])

    # -- GraphQL --------------------------------------------------------------------------------

    def graphql(self, name: str, query: str, variables: dict[str, Any]) -> dict[str, Any] | None:
        with self.lock:
            self.calls.append(f"graphql {name}")
            answer = getattr(self, f"op_{name}", None)
            return answer(query, variables) if answer is not None else None

    def pull_json(self, pull: Pull) -> dict[str, Any]:
        sha = self.head(pull.head)
        return {
            "id": f"PR_{pull.number}",
            "number": pull.number,
            "url": self.url(pull),
            "title": pull.title,
            "body": pull.body,
            "state": "OPEN",
            "isDraft": pull.draft,
            "headRefName": pull.head,
            "headRefOid": sha,
            "baseRefName": pull.base,
            "isCrossRepository": False,
            "headRepositoryOwner": {"id": "U_1", "login": self.owner},
            "headRepository": {"id": "R_1", "name": self.name},
            "author": {"login": self.login},
            "statusCheckRollup": {"nodes": [{"commit": {"oid": sha, "statusCheckRollup": self.rollup(sha)}}]},
        }

    def rollup(self, sha: str) -> dict[str, Any]:
        nodes = [
            {
                "__typename": "CheckRun",
                "name": job.name,
                "checkSuite": {"workflowRun": {"event": "pull_request", "workflow": {"name": "CI"}}},
                "status": job.status.upper(),
                "conclusion": (job.conclusion or "").upper() if job.status == "completed" else "",
                "startedAt": STAMP,
                "completedAt": STAMP if job.status == "completed" else "0001-01-01T00:00:00Z",
                "detailsUrl": self.actions.link(job),
                "isRequired": False,
            }
            for job in self.jobs(sha)
        ]
        return {
            "contexts": {
                "nodes": nodes,
                "pageInfo": {"hasNextPage": False, "endCursor": ""},
                "checkRunCount": len(nodes),
                "checkRunCountsByState": [],
                "statusContextCount": 0,
                "statusContextCountsByState": [],
            }
        }

    def url(self, pull: Pull) -> str:
        return f"https://{self.host}/{self.owner}/{self.name}/pull/{pull.number}"

    def repository(self, extra: dict[str, Any]) -> dict[str, Any]:
        return {
            "repository": {
                "id": "R_1",
                "databaseId": 1,
                "name": self.name,
                "owner": {"login": self.owner},
                "sshUrl": "",
                "hasIssuesEnabled": True,
                "description": "",
                "hasWikiEnabled": False,
                "viewerPermission": "ADMIN",
                "defaultBranchRef": {"name": "main"},
                "parent": None,
                "mergeCommitAllowed": True,
                "rebaseMergeAllowed": True,
                "squashMergeAllowed": True,
                **extra,
            }
        }

    def by_number(self, number: int) -> Pull | None:
        return next((pull for pull in self.pulls if pull.number == number), None)

    def by_id(self, node: str) -> Pull | None:
        return next((pull for pull in self.pulls if f"PR_{pull.number}" == node), None)

    def op_UserCurrent(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        """`gh auth status` (akira's check before a run that opens a pull request) asks who it is."""
        return {"viewer": {"login": self.login}}

    def op_RepositoryInfo(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        return self.repository({})

    def op_PullRequestByNumber(self, query: str, variables: dict[str, Any]) -> dict[str, Any] | None:
        pull = self.by_number(int(variables["pr_number"]))
        return self.repository({"pullRequest": self.pull_json(pull) if pull else None})

    def op_PullRequestForBranch(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        found = [self.pull_json(pull) for pull in self.pulls if pull.head == variables["headRefName"]]
        return self.repository({"pullRequests": {"nodes": found}})

    def op_Issue_fields(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        names = ["id", "number", "title", "body", "url", "state", "author", "labels", "projectItems"]
        return {"Issue": {"fields": [{"name": name} for name in names]}}

    def op_PullRequest_fields(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        rollup = [
            "checkRunCount",
            "checkRunCountsByState",
            "statusContextCount",
            "statusContextCountsByState",
        ]
        return {
            "PullRequest": {"fields": [{"name": name} for name in ("id", "isDraft", "statusCheckRollup")]},
            "StatusCheckRollupContextConnection": {"fields": [{"name": name} for name in rollup]},
        }

    def op_PullRequest_fields2(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        return {"WorkflowRun": {"fields": [{"name": "event"}, {"name": "workflow"}]}}

    def op_PullRequestCreate(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        given = variables["input"]
        pull = Pull(
            len(self.pulls) + 1,
            given["headRefName"],
            given["baseRefName"],
            given["title"],
            given.get("body", ""),
            bool(given.get("draft")),
        )
        self.pulls.append(pull)
        return {"createPullRequest": {"pullRequest": {"id": f"PR_{pull.number}", "url": self.url(pull)}}}

    def op_PullRequestProjectItems(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        items = {"totalCount": 0, "nodes": [], "pageInfo": {"hasNextPage": False, "endCursor": ""}}
        return {"repository": {"pullRequest": {"projectItems": items}}}  # githubv4 decodes strictly

    def op_PullRequestReadyForReview(self, query: str, variables: dict[str, Any]) -> dict[str, Any] | None:
        pull = self.by_id(variables["input"]["pullRequestId"])
        if pull is None:
            return None
        pull.draft = False
        self.ready.append(self.head(pull.head))
        return {"markPullRequestReadyForReview": {"pullRequest": {"id": f"PR_{pull.number}"}}}

    def op_ConvertPullRequestToDraft(self, query: str, variables: dict[str, Any]) -> dict[str, Any] | None:
        pull = self.by_id(variables["input"]["pullRequestId"])
        if pull is None:
            return None
        pull.draft = True
        return {"convertPullRequestToDraft": {"pullRequest": {"id": f"PR_{pull.number}"}}}

    def op_PullRequestUpdate(self, query: str, variables: dict[str, Any]) -> dict[str, Any] | None:
        given = variables["input"]
        pull = self.by_id(given["pullRequestId"])
        if pull is None:
            return None
        pull.title, pull.body = given.get("title", pull.title), given.get("body", pull.body)
        return {"updatePullRequest": {"__typename": "UpdatePullRequestPayload"}}

    def op_PullRequestStatusChecks(self, query: str, variables: dict[str, Any]) -> dict[str, Any] | None:
        pull = self.by_id(variables["id"])
        if pull is None:
            return None
        return {"node": {"statusCheckRollup": self.pull_json(pull)["statusCheckRollup"]}}

    def op_AkiraReviewThreads(self, query: str, variables: dict[str, Any]) -> dict[str, Any] | None:
        """akira's own query of the review threads and the reviews."""
        threads = [
            {
                "id": thread.id,
                "isResolved": thread.resolved,
                "path": thread.path,
                "line": thread.line,
                "comments": {
                    "nodes": [
                        {
                            "id": f"PRRC_{c.id}",
                            "body": c.body,
                            "author": {"login": c.author},
                            "authorAssociation": c.association,
                            "createdAt": c.created,
                            "lastEditedAt": c.edited,
                        }
                        for c in thread.comments
                    ]
                },
            }
            for thread in self.threads
        ]
        reviews = [
            {
                "id": r.id,
                "state": r.state,
                "body": r.body,
                "author": {"login": r.author},
                "authorAssociation": r.association,
                "createdAt": STAMP,
                "lastEditedAt": r.edited,
            }
            for r in self.reviews
        ]
        pull = {"reviewThreads": {"nodes": threads}, "reviews": {"nodes": reviews}}
        return {"repository": {"pullRequest": pull}}

    def op_AkiraThreadReply(self, query: str, variables: dict[str, Any]) -> dict[str, Any] | None:
        thread = next((t for t in self.threads if t.id == variables["thread"]), None)
        if thread is None:
            return None
        comment = Comment(self.login, variables["body"], self.new_id(), "OWNER", replied_at(len(self.calls)))
        thread.comments.append(comment)
        return {"addPullRequestReviewThreadReply": {"comment": {"id": f"PRRC_{comment.id}"}}}

    def op_CommentCreate(self, query: str, variables: dict[str, Any]) -> dict[str, Any] | None:
        pull = self.by_id(variables["input"]["subjectId"])
        if pull is None:
            return None
        comment = Comment(self.login, variables["input"]["body"], self.new_id())
        pull.comments.append(comment)
        url = f"{self.url(pull)}#issuecomment-{comment.id}"
        return {"addComment": {"commentEdge": {"node": {"url": url}}}}

    # -- REST -----------------------------------------------------------------------------------

    def rest(self, method: str, path: str, body: bytes) -> tuple[int, Any, str] | None:
        with self.lock:
            self.calls.append(f"{method} {path}")
            if method == "GET" and path == "/user":
                return 200, {"login": self.login, "id": 1, "type": "User"}, "application/json"
            if method == "GET" and path == "/":  # `gh auth status` reads the token's scopes here
                return 200, {"current_user_url": f"https://{self.host}/api/v3/user"}, "application/json"
            if method == "GET" and path == "/meta":
                return 200, {"installed_version": "3.17.0"}, "application/json"
            return self.actions.answer(method, path)
