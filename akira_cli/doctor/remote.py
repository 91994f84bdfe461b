"""Where the night's work goes: the `git.push` remote reached (`git ls-remote`, no prompt for
credentials), and with `git.pr` the forge's tool and its login, as `loop start` warns of them."""

from __future__ import annotations

import shlex

from akira_cli.doctor.base import DoctorContext, Finding, register_check

REACH_SECONDS = 60.0


class PushRemote:
    name = "push"

    def run(self, context: DoctorContext) -> list[Finding]:
        from akira_cli.git.pinned import Git, GitError, toplevel

        remote = context.config.git.push
        top = toplevel(context.root) if remote and context.config.git.enabled is not False else None
        if top is None or not remote:
            return []
        git = Git.found(top)
        if git is None:
            return []
        if not git.ok("remote", "get-url", remote) and not any(mark in remote for mark in ":/\\"):
            return []  # not a remote: the git row says so, as `loop start` does
        try:
            done = git.run("ls-remote", "--heads", remote, check=False, timeout=REACH_SECONDS)
        except GitError as exc:
            said = str(exc)
        else:
            said = " ".join(done.stderr.decode(errors="replace").split())[:200] if done.returncode else ""
        if not said:
            return [Finding("push", "ok", f"git.push: {remote} is reached")]
        return [
            Finding(
                "push",
                "warn",
                f"git.push: {remote} cannot be reached ({said}); the run commits, but its pushes fail",
                f"check its URL and your access: {shlex.join(['git', '-C', str(top), 'ls-remote', remote])}",
            )
        ]


class PullRequestTool:
    name = "pull request"

    def run(self, context: DoctorContext) -> list[Finding]:
        from akira_cli.git.pinned import toplevel
        from akira_cli.git.pr import forge_problem, forge_tool

        settings = context.config.git
        top = toplevel(context.root) if settings.pr != "off" else None
        if top is None:
            return []
        problem = forge_problem(top, settings)
        if problem is None:
            detail = f"git.pr: {settings.pr}, through {forge_tool(top, settings)}"
            return [Finding("pull request", "ok", detail)]
        return [Finding.of_said("pull request", problem, "warn")]


register_check(PushRemote())
register_check(PullRequestTool())
