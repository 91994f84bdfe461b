"""The machine around the agent: git, the sandbox, and the LLM endpoint (reached, never asked)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from akira_cli.doctor.agent_cli import shown, version_of
from akira_cli.doctor.base import DoctorContext, Finding, register_check

OLDEST_GIT = (2, 23, 0)
"""`git switch`, which the completion report's merge command uses."""
ENDPOINT_TIMEOUT_SECONDS = 10.0


def inside_repository(folder: Path) -> bool:
    """Whether a `.git` lies in `folder` or above it: a run there is a git-native one."""
    return any((parent / ".git").exists() for parent in (folder, *folder.parents))


class Git:
    name = "git"

    def run(self, context: DoctorContext) -> list[Finding]:
        enabled = context.config.git.enabled
        if shutil.which("git") is None:
            needed = enabled is True or (enabled is not False and inside_repository(context.root))
            install = "install git (e.g. 'apt install git' or 'brew install git')"
            if not needed:
                return [Finding("git", "warn", "git is not on PATH", install)]
            detail = "git is not on PATH; this workspace is a git repository: runs make a branch and commits"
            return [Finding("git", "fail", detail, f"{install}; or run with --no-git")]
        answer = context.tool(["git", "--version"])
        version = version_of(answer.out)
        if version is None:
            said = answer.text.strip()[:200]
            return [Finding("git", "warn", f"'git --version' said {said!r}", "reinstall git")]
        if version < OLDEST_GIT:
            return [
                Finding(
                    "git",
                    "warn",
                    f"git {shown(version)} is older than {shown(OLDEST_GIT)} (no 'git switch')",
                    "install a newer git",
                )
            ]
        return [self.repository(context, version)]

    def repository(self, context: DoctorContext, version: tuple[int, int, int]) -> Finding:
        """What `loop start` refuses of the repository (no commit, a detached HEAD without
        git.branch, a git.push that names no remote), through the same preflight."""
        from akira_cli.errors import AkiraError
        from akira_cli.git.run import GitRun

        try:
            run = GitRun.detect(context.root, context.root / "tasks.md", context.config.git)
            if run is not None:
                run.preflight()
        except AkiraError as exc:
            return Finding.of_said("git", str(exc))
        if run is None:
            where = "git.enabled is false" if context.config.git.enabled is False else "not a git repository"
            detail = f"git {shown(version)}; {context.root}: {where}, so runs make no commits"
            return Finding("git", "ok", detail)
        detail = f"git {shown(version)}; {run.root} is a repository: runs work on a task branch"
        return Finding("git", "ok", detail)


class Sandbox:
    """The sandbox (docs/sandbox.md): `bwrap` tried once with a step's flags, as `loop start` tries it.
    `sandbox.mode: on` without a working sandbox stops a run (fail); `auto` runs unconfined with a
    warning (warn). What it refused the workspace's failed steps, each with the line that allows
    it (warn)."""

    name = "sandbox"

    def run(self, context: DoctorContext) -> list[Finding]:
        from akira_cli.sandbox.probe import probe

        settings = context.config.sandbox
        if settings.mode == "off":
            detail = "sandbox.mode is off: steps' processes run with all of your rights"
            return [Finding("sandbox", "warn", detail, "set sandbox.mode: auto (the default)")]
        found = probe(settings)
        if found.ok:
            detail = f"bwrap at {found.bwrap}; network: {settings.network}"
            return [Finding("sandbox", "ok", detail), *refused(context.root / ".state")]
        fix = found.fix or "run with --no-sandbox (sandbox.mode: off)"
        if settings.mode == "on":
            return [Finding("sandbox", "fail", f"sandbox.mode is on, and {found.cause}", fix)]
        return [Finding("sandbox", "warn", f"{found.cause}; runs go on unsandboxed", fix)]


REFUSED_STATES = 5
"""The newest task states whose refusals `doctor` names."""
_ALLOW = re.compile(r"to allow it: (sandbox\.\w+: \[[^\]]*\])")


def refused(state_dir: Path) -> list[Finding]:
    """What the sandbox refused the failed steps of the newest loops (`sandbox_refused` in their
    state), each with the configuration line that allows it."""
    from akira_cli.fileio import read_bounded

    found: dict[str, Finding] = {}
    try:
        paths = sorted(state_dir.glob("autonomous_loop_*.json"), key=lambda p: p.stat().st_mtime)
    except OSError:
        return []
    for path in paths[-REFUSED_STATES:]:
        try:
            state = json.loads(read_bounded(path, 16 * 1024 * 1024))
            lines, task = state.get("sandbox_refused") or [], state.get("task_id", path.stem)
        except (OSError, ValueError, AttributeError):
            continue
        for line in lines if isinstance(lines, list) else []:
            allow = _ALLOW.search(str(line))
            if allow is not None:
                what = str(line).split("to allow it:")[0].strip(" ;(")
                fix = f"{allow[1]} in config/autonomous_loop.yaml (or run with --no-sandbox)"
                found[allow[1]] = Finding("sandbox", "warn", f"{task}: {what}", fix)
    return list(found.values())


class LLMEndpoint:
    name = "llm endpoint"

    def run(self, context: DoctorContext) -> list[Finding]:
        config = context.config
        base_url = config.llm.base_url
        if not base_url:
            if context.kind != "llm":
                return []
            return [
                Finding(
                    self.name,
                    "fail",
                    "the llm agent needs an LLM endpoint, and none is set",
                    "set llm.base_url or OPENAI_BASE_URL (e.g. http://127.0.0.1:11434/v1)",
                )
            ]
        if not self.in_use(context):
            return []
        return [self.reach(context, base_url)]

    def in_use(self, context: DoctorContext) -> bool:
        config = context.config
        reflection = config.reflection.enabled and config.reflection.use_llm
        return context.kind in ("llm", "auto") or reflection or config.evaluation.llm_judge

    def reach(self, context: DoctorContext, base_url: str) -> Finding:
        import urllib.error
        import urllib.request

        from akira_cli.redaction import url_without_password

        url = f"{base_url.rstrip('/')}/models"
        shown = url_without_password(url)
        key = context.config.llm.api_key
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        if key is not None:
            request.add_header("Authorization", f"Bearer {key.get_secret_value()}")
        timeout = min(context.config.llm.timeout, ENDPOINT_TIMEOUT_SECONDS)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                body = response.read(1_000_000)
        except urllib.error.HTTPError as exc:
            return self.refused(context, shown, exc.code)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or exc
            return Finding(
                self.name,
                "fail",
                f"GET {shown} failed: {reason}",
                "start the server, or fix llm.base_url (or OPENAI_BASE_URL)",
            )
        return self.listed(context, shown, body)

    def refused(self, context: DoctorContext, url: str, code: int) -> Finding:
        if code in (401, 403):
            return Finding(
                self.name,
                "fail",
                f"GET {url} answered HTTP {code}: the key is refused",
                "set the right key in llm.api_key or OPENAI_API_KEY",
            )
        if context.config.llm.model:
            return Finding(self.name, "ok", f"reached {url} (HTTP {code}); llm.model is set")
        return Finding(
            self.name,
            "fail",
            f"GET {url} answered HTTP {code}, and llm.model is not set, so no model can be picked",
            "set llm.model (or AKIRA_MODEL)",
        )

    def listed(self, context: DoctorContext, url: str, body: bytes) -> Finding:
        try:
            data = json.loads(body)
            models = [str(m.get("id")) for m in data.get("data", []) if isinstance(m, dict)]
        except (ValueError, AttributeError, TypeError):
            models = []
        wanted = context.config.llm.model
        if wanted and models and wanted not in models:
            return Finding(
                self.name,
                "warn",
                f"reached {url}; llm.model {wanted!r} is not among its models ({', '.join(models[:5])})",
                "set llm.model to one of the listed models",
            )
        if not wanted and not models:
            return Finding(
                self.name,
                "fail",
                f"reached {url}, but it lists no models, and llm.model is not set",
                "set llm.model (or AKIRA_MODEL)",
            )
        return Finding(self.name, "ok", f"reached {url}; model {wanted or models[0]}")


register_check(Git())
register_check(Sandbox())
register_check(LLMEndpoint())
