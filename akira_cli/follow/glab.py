"""GitLab's side, through `glab api` (GitLab's REST API v4): the merge request's latest pipeline
and its jobs for the checks, a job's trace for its log, the discussions for the review threads,
each author's role in the project (who may ask), a note on a discussion for the reply. GitLab
has no review that requests changes apart from its threads, so the threads are all the review
comments there are."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

from akira_cli.follow.forge import Check, CheckState, Comment, ForgeError, Note
from akira_cli.git.pr import run_tool, said

MR_URL = re.compile(r"^https?://(?P<host>[^/]+)/(?P<project>.+?)/-/merge_requests/(?P<iid>\d+)")
STATES: dict[str, CheckState] = {
    "success": "pass",
    "failed": "fail",
    "canceled": "cancel",
    "skipped": "skip",
    "manual": "skip",
}


class Glab:
    name = "glab"

    def __init__(self, url: str, root: Path) -> None:
        found = MR_URL.match(url)
        if found is None:
            raise ForgeError(
                f"{url} is not a GitLab merge request's URL (https://HOST/GROUP/PROJECT/-/merge_requests/N)"
            )
        self.url, self.root, self.host = url, root, found["host"]
        self.project = f"projects/{quote(found['project'], safe='')}"
        self.mr = f"{self.project}/merge_requests/{found['iid']}"

    def api(self, path: str, *args: str, text: bool = False) -> Any:
        done = run_tool(["glab", "api", "--hostname", self.host, *args, path], self.root)
        if done.returncode != 0:
            raise ForgeError(said(done))
        if text:
            return done.stdout
        try:
            return json.loads(done.stdout)
        except ValueError:
            raise ForgeError(f"glab api {path} answered with something that is not JSON") from None

    def account(self) -> str:
        return str(self.api("user").get("username") or "")

    def head(self) -> str:
        return str(self.api(self.mr).get("sha") or "")

    def checks(self) -> list[Check]:
        pipelines = self.api(f"{self.mr}/pipelines")
        if not pipelines:
            return []
        jobs = self.api(f"{self.project}/pipelines/{pipelines[0]['id']}/jobs")
        return [
            Check(
                str(job.get("name")),
                "skip" if job.get("allow_failure") and job.get("status") == "failed"
                else STATES.get(str(job.get("status")), "pending"),
                f"{self.project}/jobs/{job.get('id')}",
                str(job.get("failure_reason") or ""),
            )
            for job in jobs
        ]  # fmt: skip

    def log(self, check: Check) -> str:
        return str(self.api(f"{check.link}/trace", text=True))

    def comments(self) -> list[Comment]:
        found, roles = [], Roles(self)
        for discussion in self.api(f"{self.mr}/discussions"):
            notes = [note for note in discussion.get("notes") or [] if not note.get("system")]
            if not notes or not notes[0].get("resolvable") or notes[0].get("resolved"):
                continue
            position = notes[0].get("position") or {}
            line = position.get("new_line")
            found.append(
                Comment(
                    str(discussion.get("id")),
                    str(discussion.get("id")),
                    "thread",
                    tuple(roles.note(note) for note in notes),
                    str(position.get("new_path") or ""),
                    int(line) if isinstance(line, int) else None,
                )
            )
        return found

    def reply(self, comment: Comment, text: str) -> None:
        path = f"{self.mr}/discussions/{comment.reply_to}/notes"
        self.api(path, "--method", "POST", "-f", f"body={text}")


ROLES = {50: "OWNER", 40: "MAINTAINER", 30: "DEVELOPER", 20: "REPORTER", 10: "GUEST", 5: "MINIMAL"}


class Roles:
    """Each author's role in the project (`members/all/:id`, inherited memberships too), asked
    once per author: GitLab's notes do not say it. Not a member: `NONE`."""

    def __init__(self, forge: Glab) -> None:
        self.forge = forge
        self.known: dict[str, str] = {}

    def of(self, user: object) -> str:
        key = str(user)
        if key not in self.known:
            done = run_tool(
                ["glab", "api", "--hostname", self.forge.host, f"{self.forge.project}/members/all/{key}"],
                self.forge.root,
            )
            if done.returncode != 0 and "404" not in done.stderr + done.stdout:
                raise ForgeError(said(done))
            try:
                level = json.loads(done.stdout).get("access_level") if done.returncode == 0 else 0
            except (ValueError, AttributeError):
                level = 0
            self.known[key] = ROLES.get(level if isinstance(level, int) else 0, "NONE")
        return self.known[key]

    def note(self, note: dict[str, Any]) -> Note:
        author = note.get("author") or {}
        created, updated = str(note.get("created_at") or ""), str(note.get("updated_at") or "")
        return Note(
            str(note.get("id")),
            str(author.get("username") or "ghost"),
            str(note.get("body") or ""),
            self.of(author.get("id")),
            created,
            updated if updated and updated != created else "",
        )
