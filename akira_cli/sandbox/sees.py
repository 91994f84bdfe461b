"""What the sandbox sees of a program a run starts: the agent's CLI and the reviewer's. One that
lies under the private /tmp or the hidden home, where no tool folder, `sandbox.allow_read` or
`allow_write` and no work tree brings it back, cannot start inside the sandbox, though it runs
fine outside it. `akira doctor` and `loop start` ask here, so that they see what a step sees."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from akira_cli.sandbox.policy import PRESET_EXECUTABLES, TMP, expand, hidden
from akira_cli.sandbox.tools import tool_paths
from akira_cli.sections import SandboxSettings


def would_sandbox(settings: SandboxSettings) -> bool:
    """Whether a run with these settings is sandboxed (bubblewrap probed, unless `off`)."""
    from akira_cli.errors import AkiraError
    from akira_cli.sandbox.probe import decide

    try:
        return decide(settings)[0]
    except AkiraError:
        return True  # `on` without a sandbox: refused at start, and said by doctor's sandbox check


def where(executable: str, workdir: Path, environ: Mapping[str, str]) -> Path | None:
    """Where the shell in `workdir` finds `executable` outside the sandbox: a path (`~/` read
    as the person's home) or a name on PATH; None when it is not there."""
    if "/" in executable:
        path = Path(os.path.abspath(workdir / Path(executable).expanduser()))
        return path if path.is_file() and os.access(path, os.X_OK) else None
    found = shutil.which(executable, path=environ.get("PATH", ""))
    return Path(found) if found else None


def hidden_program(
    label: str,
    executable: str,
    settings: SandboxSettings,
    trees: Sequence[Path],
    preset: str | None,
    environ: Mapping[str, str] | None = None,
) -> str | None:
    """One line when the sandbox hides `executable` (`label`: "the agent's program"), naming
    where it lies and the ways out; None when the sandbox shows it, or it is not found at all
    (another line says so). `trees`: the work trees bound in."""
    environ = os.environ if environ is None else environ
    home = Path.home()
    path = where(executable, trees[0] if trees else Path.cwd(), environ)
    if path is None:
        return None
    shown = [
        *trees,
        *tool_paths(environ.get("PATH", ""), home, PRESET_EXECUTABLES.get(preset or "", ())),
        *(expand(entry, home) for entry in (*settings.allow_read, *settings.allow_write)),
    ]
    for candidate in dict.fromkeys((path, Path(os.path.realpath(path)))):
        if hidden(candidate, home) and not any(candidate.is_relative_to(folder) for folder in shown):
            in_tmp = candidate.is_relative_to(TMP)
            place = "/tmp, which the sandbox makes private" if in_tmp else "your home, which it hides"
            folder = candidate.parent
            named = f"~/{folder.relative_to(home).as_posix()}" if folder.is_relative_to(home) else str(folder)
            return (
                f"{label} {candidate} lies under {place}, so it cannot start inside the sandbox; "
                f"allow it with sandbox.allow_read: [{named!r}] in config/autonomous_loop.yaml, move it "
                "to a folder on PATH outside /tmp, or run with --no-sandbox"
            )
    return None
