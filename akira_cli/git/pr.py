"""The pull request (the night's hand-off): when a git-native run completes or stops with needs_action, one
pull request from the task branch to `git.base` (else the branch it started from), opened with
`gh pr create` (or `glab mr create`) and updated with `gh pr edit` (or `glab mr update`) ever
after.

Never fatal: a missing tool, a remote it cannot place, or a failing command is one warning with
the command to run by hand, and the branch is pushed all the same.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from akira_cli.fileio import atomic_write
from akira_cli.git.pinned import Git
from akira_cli.redaction import redact
from akira_cli.sections import GitSettings
from akira_cli.state.git_record import GitRecord

TIMEOUT = 120.0
URL_RE = re.compile(r"https?://\S+")
MISSING = ("no pull requests found", "no open merge request", "not found", "no merge request")


@dataclass
class Request:
    title: str
    body: str
    draft: bool
    """A stopped run's pull request, or `git.pr: draft`."""
    stopped: bool


@dataclass
class PullRequests:
    git: Git
    """The run's repository (gh and glab find the remote there, through the same pinned one)."""
    settings: GitSettings
    record: GitRecord
    body_path: Path
    """Where the body is written (`--body-file`), kept for the command run by hand."""
    warn: Callable[[str], object]

    def publish(self, request: Request) -> str | None:
        """Opens or updates the pull request; its URL, or None (with one warning) when it could
        not. The URL is recorded in the state's git record."""
        if self.settings.pr == "off":
            return None
        base, head = self.record.started_on, self.record.branch
        if not base or base == head:
            self.warn(
                f"no pull request: the task branch {head} has no other branch to go to "
                "(git.branch is empty, or the run started on a detached HEAD)"
            )
            return None
        request = replace(request, title=redact(request.title), body=redact(request.body))  # glab's too
        atomic_write(self.body_path, request.body.encode(), durable=False)
        tool = self.tool()
        create = self.create_command(tool or "gh", request, base, head)
        hand, nothing = self.by_hand(create), "no pull request"
        if self.record.pr_url:  # an earlier run opened it: by hand, update that one, never a second
            hand = self.by_hand(self.update_commands(tool or "gh", request, head)[0])
            nothing = f"the pull request {self.record.pr_url} was not updated"
        if tool is None:
            self.warn(
                f"{nothing}: cannot tell GitHub from GitLab by the remote {self.settings.push}'s URL; "
                f"set git.pr_tool, or run: {hand}"
            )
            return None
        if shutil.which(tool) is None:
            self.warn(f"{nothing}: {tool} is not on PATH; install it, or run: {hand}")
            return None
        existing = self.existing(tool, head)
        if isinstance(existing, Failure):
            self.warn(f"{nothing}: {existing.said}; run: {hand}")
            return None
        if existing is None:
            done = self.call(create)
            url = _url(done.stdout) if done.returncode == 0 else None
            if url is None:
                self.warn(f"no pull request: {said(done)}; run: {self.by_hand(create)}")
                return None
            self.record.pr_url, self.record.pr_draft = url, request.draft
            return url
        self.record.pr_url = existing
        for command in self.update_commands(tool, request, head):
            done = self.call(command)
            if done.returncode != 0:
                self.warn(
                    f"the pull request {existing} was not updated: {said(done)}; run: {self.by_hand(command)}"
                )
                return existing
        if request.stopped:
            self.record.pr_draft = True
        elif not request.draft:
            self.record.pr_draft = False
        return existing

    def tool(self) -> str | None:
        if self.settings.pr_tool:
            return self.settings.pr_tool
        url = self.remote_url()
        if "gitlab" in url.lower():
            return "glab"
        if "github" in url.lower():
            return "gh"
        return None

    def remote_url(self) -> str:
        """The push remote's URL as configured (an `insteadOf` rewrite does not hide the host)."""
        said = self.git.out("config", "--get", f"remote.{self.settings.push}.url", check=False)
        return said or str(self.settings.push)

    def existing(self, tool: str, head: str) -> str | Failure | None:
        """The open pull request's URL for the branch, None when there is none."""
        if tool == "gh":
            done = self.call(["gh", "pr", "view", head, "--json", "url"])
            key = "url"
        else:
            done = self.call(["glab", "mr", "view", head, "--output", "json"])
            key = "web_url"
        if done.returncode != 0:
            told = said(done)
            return None if any(word in told.lower() for word in MISSING) else Failure(told)
        try:
            found = json.loads(done.stdout).get(key)
        except (ValueError, AttributeError):
            found = _url(done.stdout)
        return found if isinstance(found, str) and found else Failure(f"{tool} answered without a URL")

    def create_command(self, tool: str, request: Request, base: str, head: str) -> list[str]:
        if tool == "gh":
            command = ["gh", "pr", "create", "--base", base, "--head", head, "--title", request.title]
            command += ["--body-file", str(self.body_path)]
        else:
            command = ["glab", "mr", "create", "--source-branch", head, "--target-branch", base]
            command += ["--title", request.title, "--description", request.body, "--yes"]
        return [*command, "--draft"] if request.draft else command

    def update_commands(self, tool: str, request: Request, head: str) -> list[list[str]]:
        if tool == "gh":
            commands = [
                ["gh", "pr", "edit", head, "--title", request.title, "--body-file", str(self.body_path)]
            ]
            if request.stopped and not self.record.pr_draft:
                commands.append(["gh", "pr", "ready", head, "--undo"])
            elif not request.draft and self.record.pr_draft:
                commands.append(["gh", "pr", "ready", head])
            return commands
        command = ["glab", "mr", "update", head, "--title", request.title, "--description", request.body]
        if request.stopped and not self.record.pr_draft:
            command.append("--draft")
        elif not request.draft and self.record.pr_draft:
            command.append("--ready")
        return [command]

    @property
    def root(self) -> Path:
        return self.git.root

    def call(self, command: list[str]) -> subprocess.CompletedProcess[str]:
        return run_tool(command, self.root, env=self.git.repo.env())

    def by_hand(self, command: list[str]) -> str:
        """The command to paste: from the repository's folder; glab's body from the saved file."""
        if command[0] == "glab" and "--description" in command:
            at = command.index("--description") + 1
            shown = shlex.join(command[:at]) + f' "$(cat {shlex.quote(str(self.body_path))})" '
            shown += shlex.join(command[at + 1 :])
            return f"cd {shlex.quote(str(self.root))} && {shown.strip()}"
        return f"cd {shlex.quote(str(self.root))} && {shlex.join(command)}"


def forge_tool(root: Path, settings: GitSettings) -> str | None:
    """gh or glab: `git.pr_tool`, else told by the push remote's URL; None when it cannot tell."""
    if settings.pr_tool:
        return settings.pr_tool
    url = remote_url(root, str(settings.push))
    if "gitlab" in url.lower():
        return "glab"
    if "github" in url.lower():
        return "gh"
    return None


def remote_url(root: Path, remote: str) -> str:
    """The push remote's URL as configured (an `insteadOf` rewrite does not hide the host)."""
    done = subprocess.run(
        ["git", "-C", str(root), "config", "--get", f"remote.{remote}.url"],
        capture_output=True, text=True, check=False, timeout=30,
    )  # fmt: skip
    return done.stdout.strip() or remote


def forge_problem(root: Path, settings: GitSettings) -> str | None:
    """Why no pull request would be opened in the morning (`git.pr` on): no tool can be told,
    it is not installed, or it is not logged in (`gh auth status`, `glab auth status`); None
    when it is ready. Said by `loop start` as a warning, and by `akira doctor`."""
    if settings.pr == "off":
        return None
    tool = forge_tool(root, settings)
    if tool is None:
        return (
            f"git.pr is {settings.pr}, but the remote {settings.push}'s URL names neither GitHub nor "
            "GitLab, so no pull request will be opened; set git.pr_tool (gh or glab)"
        )
    nothing, login = "so no pull request will be opened", f"run '{tool} auth login'"
    if shutil.which(tool) is None:
        return f"git.pr is {settings.pr}, but {tool} is not on PATH, {nothing}; install {tool}"
    env = {**os.environ, "NO_COLOR": "1", "GH_PROMPT_DISABLED": "1", "GLAB_NO_PROMPT": "1"}
    try:
        done = subprocess.run(
            [tool, "auth", "status"], cwd=root, env=env, capture_output=True, text=True,
            stdin=subprocess.DEVNULL, check=False, timeout=TIMEOUT,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        return f"git.pr is {settings.pr}, but '{tool} auth status' did not run ({exc}), {nothing}; {login}"
    if done.returncode == 0:
        return None
    said = " ".join((done.stderr or done.stdout or "").split())[:200]
    return (
        f"git.pr is {settings.pr}, but '{tool} auth status' failed"
        + (f" ({said})" if said else "")
        + f", {nothing}; {login}"
    )


@dataclass
class Failure:
    said: str


def run_tool(
    command: list[str], root: Path, stdin: str | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """gh or glab in the repository's folder, never prompting; a tool that hangs or cannot run
    is an answer like any other (exit 124, 127). `env`: the pinned repository's variables, so
    that the git the tool runs is akira's."""
    env = {
        **os.environ,
        **(env or {}),
        "GH_PROMPT_DISABLED": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "NO_COLOR": "1",
    }
    env.setdefault("GLAB_NO_PROMPT", "1")
    try:
        return subprocess.run(
            command, cwd=root, env=env, capture_output=True, text=True, input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL, check=False, timeout=TIMEOUT,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(command, 124, "", f"{command[0]} gave no answer in {TIMEOUT:.0f}s")
    except OSError as exc:
        return subprocess.CompletedProcess(command, 127, "", f"{command[0]} cannot run: {exc.strerror}")


def _url(text: str) -> str | None:
    found = URL_RE.findall(text or "")
    return found[-1] if found else None


def said(done: subprocess.CompletedProcess[str]) -> str:
    text = " ".join((done.stderr or done.stdout or "").split())[:300]
    return f"{shlex.quote(str(done.args[0]))} exited {done.returncode}" + (f": {text}" if text else "")
