"""What `loop start` refuses before a run that needs no task file, through the very functions it
calls: a `sandbox.allow_hosts` entry that is no host, `review.agent: llm` without an endpoint,
parallel steps outside a git work tree. A row only for a refusal."""

from __future__ import annotations

from collections.abc import Callable

from akira_cli.doctor.base import DoctorContext, Finding, register_check
from akira_cli.errors import AkiraError


class StartRefusals:
    name = "start"

    def run(self, context: DoctorContext) -> list[Finding]:
        from akira_cli.git.run import GitRun
        from akira_cli.git.worktrees import require_git
        from akira_cli.review.build import preflight as review_preflight
        from akira_cli.sandbox.session import check_allow_hosts

        config = context.config

        def parallel() -> None:
            git = GitRun.detect(context.root, context.root / "tasks.md", config.git)
            require_git(config.autonomous_loop.parallel, git, str(context.root))

        checks: list[tuple[str, Callable[[], None]]] = [
            ("allow_hosts", lambda: check_allow_hosts(config)),
            ("reviewer", lambda: review_preflight(config)),
            ("parallel", parallel),
        ]
        findings = []
        for name, check in checks:
            try:
                check()
            except AkiraError as exc:
                findings.append(Finding.of_said(name, str(exc)))
        return findings


register_check(StartRefusals())
